import BridgeCore
import DBus

/// The options bluetoothd passes to `ReadValue`, `WriteValue` and `AcquireNotify` of a local
/// characteristic (`a{sv}`: `offset` q, `mtu` q, `device` o, `link` s, `prepare-authorize` b;
/// BlueZ 5.66 `append_options`). Entries of the wrong type are ignored. Pure.
struct PeripheralRequestOptions: Sendable, Hashable {
  /// Where the read or write starts (long reads and prepared writes), 0 when absent.
  var offset = 0
  /// The ATT MTU of the central's link.
  var mtu: Int?
  /// The central, from the `device` path (`…/dev_AA_BB_CC_DD_EE_FF`).
  var central: BluetoothAddress?
  /// The `device` path as sent.
  var devicePath: String?

  init(_ value: DBusValue?) {
    guard let options = value?.propertyMap else { return }
    if case .uint16(let offset)? = options["offset"] { self.offset = Int(offset) }
    if case .uint16(let mtu)? = options["mtu"], mtu > 0 { self.mtu = Int(mtu) }
    if case .objectPath(let path)? = options["device"] {
      devicePath = path.rawValue
      central = BlueZDevice.address(fromPath: path)
    }
  }
}
