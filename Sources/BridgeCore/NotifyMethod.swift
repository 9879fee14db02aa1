/// How a central turns a characteristic's notifications on (`bluetooth.gatt.notify_method`, and
/// per characteristic `bluetooth.gatt.notify_methods`).
///
/// BlueZ offers two ways: `AcquireNotify` hands the client a socket that carries each value (no
/// D-Bus message per value: the fast path), `StartNotify` sends each value as a
/// `PropertiesChanged` signal. Some peripherals do not work with the socket: they send their
/// first notifications before the response to the CCCD write, which BlueZ drops on the socket
/// path (bleak issue #1885, hbldh/bleak#1885; bleak went back to `StartNotify` by default for
/// that reason, hbldh/bleak#1973), and a zero-length value reads as end of file to clients that
/// do not check for a hang-up (hbldh/bleak#1982; this gateway does).
public enum NotifyMethod: String, CaseIterable, Sendable, Hashable, SelectorRuleValue {
  /// `AcquireNotify` where BlueZ grants it, else `StartNotify`: BlueZ refuses the socket for
  /// indicate-only characteristics (5.66; bluez/bluez#1022 asks for indications on it), when
  /// another client already subscribed, and when the socket is taken (also by the leftover of
  /// a subscription whose CCC write failed, bluez/bluez#1376: `StartNotify` is refused then
  /// too, and the gateway never sends a `StopNotify` it did not start). A socket that hangs up within seconds of being acquired while the
  /// device stays connected moves that characteristic to `StartNotify` until the gateway
  /// restarts. The default.
  case auto
  /// Only `AcquireNotify`; BlueZ's refusal is the request's error.
  case acquire
  /// Only `StartNotify` (values as D-Bus signals), for peripherals that lose their first
  /// notifications on the socket path.
  case start

  /// `notify method`.
  public static var ruleNoun: String { "notify method" }
  /// `*/180d/2a37=start`.
  public static var ruleExample: String { "*/180d/2a37=start" }
}
