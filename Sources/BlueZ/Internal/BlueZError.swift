import BridgeCore
import DBus

/// The `org.bluez.Error.*` names BlueZ answers with (`doc/*-api.txt`), parsed in one place so
/// that no other file compares error names as strings.
enum BlueZError: String, Sendable, CaseIterable {
  case failed = "Failed"
  case inProgress = "InProgress"
  case busy = "Busy"
  case notReady = "NotReady"
  case notConnected = "NotConnected"
  case notPermitted = "NotPermitted"
  case notAuthorized = "NotAuthorized"
  case notSupported = "NotSupported"
  case notAvailable = "NotAvailable"
  case alreadyConnected = "AlreadyConnected"
  case alreadyExists = "AlreadyExists"
  case doesNotExist = "DoesNotExist"
  case invalidArguments = "InvalidArguments"
  case invalidOffset = "InvalidOffset"
  case invalidValueLength = "InvalidValueLength"

  /// The prefix of every BlueZ error name.
  static let prefix = "org.bluez.Error."

  /// Parses a D-Bus error name; `nil` for a name outside BlueZ's or one this module does not
  /// know.
  ///
  /// - Parameter name: For example `org.bluez.Error.InProgress`.
  init?(name: String) {
    guard name.hasPrefix(Self.prefix) else { return nil }
    self.init(rawValue: String(name.dropFirst(Self.prefix.count)))
  }

  /// The full D-Bus error name, for example `org.bluez.Error.InProgress`.
  var name: String { Self.prefix + rawValue }

  /// An error to answer a call from bluetoothd with.
  ///
  /// - Parameter message: What went wrong.
  /// - Returns: The D-Bus error.
  func reply(_ message: String) -> DBusError { DBusError(name: name, message: message) }
}

extension DBusError {
  /// The BlueZ error this is, if any.
  var bluez: BlueZError? { BlueZError(name: name) }
}

extension CentralError {
  /// The BlueZ error the stack answered with (kept in ``CentralError/detail``), if any.
  var bluez: BlueZError? { detail.flatMap(BlueZError.init(name:)) }
}
