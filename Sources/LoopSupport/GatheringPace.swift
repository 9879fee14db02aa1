/// How a reader thread paces one source of input (a socket) while its input comes fast.
///
/// A reader that reads at once every time its source becomes readable wakes once per item. With
/// a gathering interval it reads at once what comes slowly; when an item comes less than an
/// interval after the previous turn, it leaves the source unread until the interval ends, so
/// that one wake-up takes what came meanwhile, each item held back at most one interval. It
/// goes on gathering while items are waiting each time an interval ends, and reads at once
/// again from the first interval that ends with nothing waiting. "Waiting" means found within a
/// quarter of an interval (``slack``) of the interval's end; or, when the reader says when it
/// looked (``looking(at:)``) and found two items or more, within that of its first look after
/// the interval ended, however late that look came (a busy or emulated machine wakes a thread
/// tens of milliseconds late; a lone item found late may have come after the end, so it does
/// not count). The first item after a quiet spell is read at once.
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
  /// The reader's first look at the source after the last gathering interval ended.
  private var lookedAgain: Double?
  /// The resolution of the clock the times come from (seconds).
  public let clockResolution: Double

  /// How long, in intervals, after the reader's first look once a gathering interval ended (or
  /// after the interval's end) its items may be found and still count as waiting then.
  public static let slack = 0.25

  /// A pace with nothing delivered yet.
  ///
  /// - Parameters:
  ///   - interval: Seconds over which items gather (negative or not finite: 0, none).
  ///   - ceiling: Items in one turn from which the source is read at once again.
  ///   - clockResolution: The resolution of the clock the times come from, in seconds: an
  ///     interval counts as ended that much early (at most ``slack`` of an interval, so that a
  ///     short interval still gathers). A coarse clock lags the kernel's timers by up to a
  ///     tick; without this, a reader woken at the interval's end could read a time just short
  ///     of it, and sleep once more for the rest.
  public init(interval: Double, ceiling: Int, clockResolution: Double = 0) {
    self.interval = interval.isFinite ? max(0, interval) : 0
    self.ceiling = max(2, ceiling)
    let resolution = clockResolution.isFinite ? max(0, clockResolution) : 0
    self.clockResolution = min(resolution, Self.slack * self.interval)
  }

  /// Notes that the reader looks at the source at `time` (it is about to `poll` it): the first
  /// look after a gathering interval ended is when the items found next count as waiting from.
  ///
  /// - Parameter time: When, in monotonic seconds.
  public mutating func looking(at time: Double) {
    if gatherUntil.isFinite, !gathers(at: time), lookedAgain == nil { lookedAgain = time }
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
    // After a gathering interval: items were waiting when it ended, or (two or more) when the
    // reader looked again after it ended (found then, give or take the turn's own time).
    // Otherwise: the item came within an interval of the previous turn.
    let looked = count >= 2 ? lookedAgain ?? gatherUntil : gatherUntil
    let fast =
      gatherUntil.isFinite
      ? time <= max(gatherUntil, looked) + Self.slack * interval
      : Double(count) * interval > time - lastTurn
    lastTurn = time
    lookedAgain = nil
    let gathering = fast && interval > 0 && !moreWaiting && count < ceiling
    gatherUntil = gathering ? time + interval : -.infinity
    return gathering
  }

  /// Whether the source is left unread at `time` (its interval ends later than the clock's
  /// resolution from then).
  public func gathers(at time: Double) -> Bool { gatherUntil - clockResolution > time }
}
