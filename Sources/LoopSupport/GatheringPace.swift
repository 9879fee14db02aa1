/// How a reader thread paces one source of input (a socket) while its input comes fast.
///
/// A reader that reads at once every time its source becomes readable wakes once per item. With
/// a gathering interval it reads at once what comes slowly; when an item comes less than an
/// interval after the previous turn, it leaves the source unread until the interval ends, so
/// that one wake-up takes what came meanwhile, each item held back at most one interval. It
/// goes on gathering while items are waiting each time an interval ends (up to a quarter of an
/// interval later, for the wake-up's own delay: ``slack``), and reads at once again from the
/// first interval that ends with nothing waiting. The first item after a quiet spell is read at
/// once.
///
/// So a stream of more than one item per interval is read once per interval: an advertiser
/// every 60 ms at the default 0.1 s costs six wake-ups for ten items. A stream slower than one
/// item per interval costs one wake-up per item, and at most one more (the interval that ended
/// empty) each time it slows down.
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

  /// How late, in intervals, the turn after a gathering interval may come and its items still
  /// count as waiting when the interval ended.
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
    // After a gathering interval: items were waiting when it ended (this turn came at its end,
    // give or take the wake-up's delay). Otherwise: the item came within an interval of the
    // previous turn.
    let fast =
      gatherUntil.isFinite
      ? time <= gatherUntil + Self.slack * interval
      : Double(count) * interval > time - lastTurn
    lastTurn = time
    let gathering = fast && interval > 0 && !moreWaiting && count < ceiling
    gatherUntil = gathering ? time + interval : -.infinity
    return gathering
  }

  /// Whether the source is left unread at `time`.
  public func gathers(at time: Double) -> Bool { gatherUntil > time }
}
