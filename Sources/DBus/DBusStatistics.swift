/// Counters of a ``DBusConnection``.
public struct DBusStatistics: Sendable, Hashable {
  /// Whether the connection is still open.
  public var connected = true
  /// Method calls awaiting their reply.
  public var pendingCalls = 0
  /// Signals handed to subscription streams.
  public var signalsDelivered = 0
  /// Signals dropped because a subscription's buffer was full.
  public var signalsDropped = 0
  /// Method calls received for exported objects.
  public var incomingCalls = 0
  /// Received method calls refused because too many were already running.
  public var incomingCallsRefused = 0
  /// Turns of the bus thread (a wake-up, a read, a dispatch) that delivered signals: with a
  /// gathering interval (``DBusConnection/init(address:gathering:)``) far fewer than
  /// ``signalsDelivered`` while signals come fast.
  public var signalTurns = 0
}
