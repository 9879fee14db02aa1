import BridgeCore
import DBus

extension CentralError {
  /// Maps a D-Bus error of a BlueZ call to the port's error, keeping the D-Bus error name in
  /// ``CentralError/detail``.
  ///
  /// - `org.bluez.Error.InProgress` (also `…Busy`) → `in_progress`;
  /// - `org.bluez.Error.NotReady` (adapter not powered) → `powered_off`;
  /// - `org.bluez.Error.NotConnected` → `not_connected`;
  /// - `org.bluez.Error.NotPermitted`, `…NotAuthorized`, `…NotSupported` → `not_permitted`;
  /// - no owner for `org.bluez`, lost or failed connection → `unavailable`;
  /// - `UnknownObject` (the adapter's object is gone) → `unknown_adapter`;
  /// - no reply in time → `timeout`;
  /// - the bus's policy refuses the call (`org.freedesktop.DBus.Error.AccessDenied`) →
  ///   `access_denied`;
  /// - anything else (`org.bluez.Error.Failed`, `InvalidArguments`, …) → `bluez_error`.
  static func bluez(_ error: DBusError, operation: String) -> CentralError {
    let message = "\(operation): \(error.message)"
    switch error.bluez {
    case .inProgress, .busy:
      return CentralError(.inProgress, message: message, detail: error.name)
    case .notReady:
      return CentralError(.poweredOff, message: message, detail: error.name)
    case .notConnected:
      return CentralError(.notConnected, message: message, detail: error.name)
    case .notPermitted, .notAuthorized, .notSupported:
      return CentralError(.notPermitted, message: message, detail: error.name)
    default:
      break
    }
    let code: CentralError.Code =
      switch error.code {
      case .serviceUnknown, .nameHasNoOwner, .disconnected, .connectionFailed: .unavailable
      case .unknownObject: .unknownAdapter
      case .noReply: .timeout
      case .accessDenied: .accessDenied
      default: .bluezError
      }
    return CentralError(code, message: message, detail: error.name)
  }

  /// Maps a failed `Device1.Connect`; `nil` when the error means success (the device is already
  /// connected: `org.bluez.Error.AlreadyConnected`, or `…Failed` "le-connection-already-connected").
  ///
  /// - `InProgress`, `Busy` → `in_progress`; `DoesNotExist`, `UnknownObject` → `not_found`;
  /// - `org.bluez.Error.Failed` by its message (BlueZ ≥ 5.63 sends reason strings such as
  ///   `le-connection-abort-by-local`, older ones `strerror` texts): a connection limit,
  ///   "No free slots" or "Too many links" → `out_of_slots`; "timeout" / "timed out" →
  ///   `timeout`; "abort", "refused", "cancel" → `aborted`; "busy" → `in_progress`;
  /// - anything else as ``bluez(_:operation:)``.
  static func connectFailure(_ error: DBusError) -> CentralError? {
    let operation = "Connect"
    let message = "\(operation): \(error.message)"
    switch error.bluez {
    case .alreadyConnected:
      return nil
    case .doesNotExist:
      return CentralError(.notFound, message: message, detail: error.name)
    default:
      break
    }
    if error.code == .unknownObject {
      return CentralError(.notFound, message: message, detail: error.name)
    }
    guard error.bluez == .failed else {
      return bluez(error, operation: operation)
    }
    let text = error.message.lowercased()
    func mentions(_ words: String...) -> Bool { words.contains { text.contains($0) } }
    let code: CentralError.Code
    if mentions("already-connected", "already connected") {
      return nil
    } else if mentions("limit", "no free slot", "too many links") {
      code = .outOfSlots
    } else if mentions("timeout", "timed out") {
      code = .timeout
    } else if mentions("abort", "refused", "cancel") {
      code = .aborted
    } else if mentions("busy") {
      code = .inProgress
    } else {
      code = .bluezError
    }
    return CentralError(code, message: message, detail: error.name)
  }

  /// Maps a failed GATT call (`ReadValue`, `WriteValue`, `StartNotify`, `StopNotify`): BlueZ
  /// answers `org.bluez.Error.Failed` "Not connected" when the link is down → `not_connected`;
  /// anything else as ``bluez(_:operation:)``.
  static func gattFailure(_ error: DBusError, operation: String) -> CentralError {
    if error.bluez == .failed,
      error.message.lowercased().contains("not connected")
    {
      return CentralError(
        .notConnected, message: "\(operation): \(error.message)", detail: error.name)
    }
    return bluez(error, operation: operation)
  }
}
