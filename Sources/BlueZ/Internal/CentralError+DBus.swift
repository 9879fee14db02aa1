import BridgeCore
import DBus

extension CentralError {
  /// Maps a D-Bus error of a BlueZ call to the port's error, keeping the D-Bus error name in
  /// ``CentralError/detail``.
  ///
  /// - `org.bluez.Error.InProgress` (also `…Busy`) → `in_progress`;
  /// - `org.bluez.Error.NotReady` (adapter not powered) → `powered_off`;
  /// - no owner for `org.bluez`, lost or failed connection → `unavailable`;
  /// - `UnknownObject` (the adapter's object is gone) → `unknown_adapter`;
  /// - no reply in time → `timeout`;
  /// - anything else (`org.bluez.Error.Failed`, `NotAuthorized`, `InvalidArguments`, …) →
  ///   `bluez_error`.
  static func bluez(_ error: DBusError, operation: String) -> CentralError {
    let message = "\(operation): \(error.message)"
    switch error.name {
    case BlueZNames.errorPrefix + "InProgress", BlueZNames.errorPrefix + "Busy":
      return CentralError(.inProgress, message: message, detail: error.name)
    case BlueZNames.errorPrefix + "NotReady":
      return CentralError(.poweredOff, message: message, detail: error.name)
    default:
      break
    }
    let code: CentralError.Code =
      switch error.code {
      case .serviceUnknown, .nameHasNoOwner, .disconnected, .connectionFailed: .unavailable
      case .unknownObject: .unknownAdapter
      case .noReply: .timeout
      default: .bluezError
      }
    return CentralError(code, message: message, detail: error.name)
  }
}
