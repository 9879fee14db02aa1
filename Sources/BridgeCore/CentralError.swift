/// Why an operation of a ``BLECentral`` failed, with a stable code for MQTT responses and logs.
public struct CentralError: Error, Sendable, Hashable, CustomStringConvertible {
  /// The stable machine-readable kind of failure.
  public enum Code: String, Sendable, Hashable, CaseIterable {
    /// The adapter does not exist (any more).
    case unknownAdapter = "unknown_adapter"
    /// The Bluetooth stack (bluetoothd) is not running or not reachable.
    case unavailable
    /// The adapter is powered off.
    case poweredOff = "powered_off"
    /// The same operation is already under way (`org.bluez.Error.InProgress`).
    case inProgress = "in_progress"
    /// No answer in time.
    case timeout
    /// Any other error reported by the stack; ``CentralError/detail`` holds its name.
    case bluezError = "bluez_error"
  }

  /// The kind of failure.
  public var code: Code
  /// A sentence for people.
  public var message: String
  /// The stack's own error name, for example `org.bluez.Error.NotReady`.
  public var detail: String?

  /// Makes an error.
  ///
  /// - Parameters:
  ///   - code: The kind of failure.
  ///   - message: A sentence for people.
  ///   - detail: The stack's own error name.
  public init(_ code: Code, message: String, detail: String? = nil) {
    self.code = code
    self.message = message
    self.detail = detail
  }

  /// The code, the message and the detail, if any.
  public var description: String {
    "\(code.rawValue): \(message)" + (detail.map { " (\($0))" } ?? "")
  }
}
