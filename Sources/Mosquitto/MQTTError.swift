/// An error of the MQTT client, with a stable ``code`` and a human-readable ``message``.
public struct MQTTError: Error, Sendable, Hashable, CustomStringConvertible {
  /// What kind of failure this is.
  public enum Code: String, Sendable, Hashable {
    /// A configuration value libmosquitto refuses (bad host, missing TLS file, …).
    case invalidConfiguration = "invalid_configuration"
    /// The TCP connection could not be made or was lost.
    case network
    /// The TLS handshake or certificate verification failed.
    case tls
    /// The broker refused the connection (CONNACK reason code other than success).
    case connectionRefused = "connection_refused"
    /// The broker refused the credentials.
    case notAuthorized = "not_authorized"
    /// The broker violated the protocol or we did.
    case protocolError = "protocol_error"
    /// The broker acknowledged a publish with an MQTT 5 error reason code.
    case publishRefused = "publish_refused"
    /// The broker refused a subscription.
    case subscriptionRefused = "subscription_refused"
    /// The message left the bounded offline queue to make room for newer ones.
    case dropped
    /// The client was stopped before the operation completed.
    case stopped
    /// A value was out of range (topic too long, payload too large, …).
    case invalidArgument = "invalid_argument"
    /// The operation did not complete in time.
    case timeout
    /// The waiting task was cancelled; the operation itself may still complete.
    case cancelled
  }

  /// The kind of failure.
  public var code: Code
  /// What happened, for people.
  public var message: String

  /// Creates an error.
  public init(_ code: Code, _ message: String) {
    self.code = code
    self.message = message
  }

  /// `"<code>: <message>"`.
  public var description: String { "\(code.rawValue): \(message)" }
}
