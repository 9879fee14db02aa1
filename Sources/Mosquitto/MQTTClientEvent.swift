/// A change of the client's connection, as reported on ``MQTTClient/events``.
public enum MQTTClientEvent: Sendable, Hashable {
  /// The broker accepted the connection. `reconnect` is false only for the first connection.
  case connected(sessionPresent: Bool, reconnect: Bool)
  /// A connection attempt failed; the client retries after `retryIn` seconds.
  case connectionFailed(MQTTError, retryIn: Double)
  /// An established connection was lost; the client retries after `retryIn` seconds.
  case disconnected(MQTTError, retryIn: Double)
  /// The client stopped for good (after ``MQTTClient/shutdown(publishingWill:finalMessages:timeout:)``).
  case stopped
}
