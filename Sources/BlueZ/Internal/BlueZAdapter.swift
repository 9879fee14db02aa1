import BridgeCore
import DBus

/// One `org.bluez.Adapter1` object as the model mirrors it.
///
/// Properties of the wrong type are ignored (the field keeps its previous value), so a broken
/// reply never crashes and never invents state.
struct BlueZAdapter: Sendable, Hashable {
  /// The object path, e.g. `/org/bluez/hci0`.
  let path: DBusObjectPath
  /// The adapter id, the last segment of the path (`hci0`).
  let id: String
  var address: BluetoothAddress?
  var name: String?
  var alias: String?
  var powered = false
  var discovering = false
  /// `PowerState` (BlueZ ≥ 5.59): `on`, `off`, `off-enabling`, `on-disabling`, `off-blocked`.
  var powerState: String?
  /// `Modalias`: bluetoothd's Device ID (`usb:v1D6Bp0246d0542` = BlueZ 5.66, unless main.conf
  /// sets another `DeviceID`).
  var modalias: String?

  init(path: DBusObjectPath, properties: [String: DBusValue]) {
    self.path = path
    id = BlueZAdapter.id(of: path)
    update(properties, invalidated: [])
  }

  /// The adapter id of an adapter path: its last segment.
  static func id(of path: DBusObjectPath) -> String {
    String(path.rawValue.split(separator: "/").last ?? "")
  }

  /// Applies changed and invalidated properties.
  mutating func update(_ changed: [String: DBusValue], invalidated: [String]) {
    for name in invalidated {
      switch name {
      case "Name": self.name = nil
      case "Alias": alias = nil
      case "PowerState": powerState = nil
      default: break
      }
    }
    for (key, value) in changed {
      switch key {
      case "Address":
        if let text = value.stringValue, let parsed = try? BluetoothAddress(text) {
          address = parsed
        }
      case "Name": if case .string(let text) = value.unwrapped { name = text }
      case "Alias": if case .string(let text) = value.unwrapped { alias = text }
      case "Powered": if let flag = value.boolValue { powered = flag }
      case "Discovering": if let flag = value.boolValue { discovering = flag }
      case "PowerState": if case .string(let text) = value.unwrapped { powerState = text }
      case "Modalias": if case .string(let text) = value.unwrapped { modalias = text }
      default: break
      }
    }
  }

  /// The port's view of the adapter.
  func info(resetting: Bool) -> AdapterInfo {
    AdapterInfo(
      id: id, address: address, name: alias ?? name, present: true, powered: powered,
      discovering: discovering, resetting: resetting,
      stackVersion: modalias.flatMap(Self.bluezVersion(modalias:)))
  }

  /// BlueZ's version from the Device ID it gives its adapters by default: vendor 0x1D6B (Linux
  /// Foundation), product 0x0246 (BlueZ), version `major << 8 | minor` (`d0542` = 5.66). `nil`
  /// for any other Device ID (main.conf's `DeviceID` set to a product's own).
  static func bluezVersion(modalias: String) -> String? {
    let prefix = "usb:v1D6Bp0246d"
    guard modalias.uppercased().hasPrefix(prefix.uppercased()) else { return nil }
    let digits = modalias.dropFirst(prefix.count)
    guard digits.count == 4, let value = UInt16(digits, radix: 16) else { return nil }
    return "\(value >> 8).\(value & 0xFF)"
  }
}
