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
    /// The device is not connected.
    case notConnected = "not_connected"
    /// The stack does not know the device (it was never seen, or was removed).
    case notFound = "not_found"
    /// The device has no such characteristic.
    case unknownCharacteristic = "unknown_characteristic"
    /// The device or the stack refused the operation (flags, authorisation, encryption).
    case notPermitted = "not_permitted"
    /// The controller has no free connection slot.
    case outOfSlots = "out_of_slots"
    /// The connection attempt was aborted (by the stack, the controller or the device).
    case aborted
    /// The system bus's policy does not let the gateway's user talk to the stack
    /// (`org.freedesktop.DBus.Error.AccessDenied`).
    case accessDenied = "access_denied"
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
