/// How a reader thread paces one source of input (a socket) while its input comes fast.
///
/// A reader that reads at once every time its source becomes readable wakes once per item. With
/// a gathering interval it reads at once what comes slowly, but while the items come at least
/// once per interval — measured over the time since the previous turn that delivered any — it
/// leaves the source unread until the interval ends, so that one wake-up takes several items,
/// each held back at most one interval. The first item after a quiet spell is read at once.
///
/// A gathered turn comes an interval after the previous one, a little later by the wake-up's
/// own delay: up to a quarter of an interval late still counts as on time (``slack``).
/// Otherwise a stream of between one and two items per interval (an advertiser every 60 ms at
/// the default 0.1 s) would lock into reading one item per gathered turn and never gather two.
/// There, gathering takes about half the wake-ups away; above two per interval a wake-up takes
/// two or more. A stream slower than one item per 1.25 intervals is read at once.
///
/// Both the datagram reader (acquired notification sockets, the management scanner) and the
/// D-Bus connection's bus thread (bluetoothd's signals) pace their input with this.
public struct GatheringPace: Sendable {
  /// Seconds over which items gather (0: every read at once).
  public let interval: Double
  /// Items in one turn from which the source is read at once again, gathering or not (the
  /// sender's end must not fill while it gathers).
  public let ceiling: Int
  /// Until when the source is left unread (monotonic seconds; `-infinity`: read at once).
  public private(set) var gatherUntil = -Double.infinity
  /// When the last turn that delivered items was (monotonic seconds).
  private var lastTurn = -Double.infinity

  /// How late, in intervals, a turn may come and its items still count as one per interval.
  public static let slack = 0.25

  /// A pace with nothing delivered yet.
  ///
  /// - Parameters:
  ///   - interval: Seconds over which items gather (negative or not finite: 0, none).
  ///   - ceiling: Items in one turn from which the source is read at once again.
  public init(interval: Double, ceiling: Int) {
    self.interval = interval.isFinite ? max(0, interval) : 0
    self.ceiling = max(2, ceiling)
  }

  /// Records a turn that delivered `count` items at `time`, and decides whether the source
  /// is left unread until ``gatherUntil``.
  ///
  /// - Parameters:
  ///   - count: Items the turn delivered (a turn that delivered none is not recorded).
  ///   - time: When, in monotonic seconds.
  ///   - moreWaiting: The turn stopped at a batch limit with items still waiting: read again
  ///     at once.
  /// - Returns: Whether the source now gathers.
  @discardableResult
  public mutating func record(_ count: Int, at time: Double, moreWaiting: Bool = false) -> Bool {
    guard count > 0 else { return gathers(at: time) }
    let fast =
      interval > 0 && !moreWaiting && count < ceiling
      && Double(count) * interval >= time - lastTurn - Self.slack * interval
    lastTurn = time
    gatherUntil = fast ? time + interval : -.infinity
    return fast
  }

  /// Whether the source is left unread at `time`.
  public func gathers(at time: Double) -> Bool { gatherUntil > time }
}
