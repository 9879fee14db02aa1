import BridgeCore
import DBus

/// One `org.bluez.Device1` object as the model mirrors it.
///
/// Properties of the wrong type, and entries of the wrong type inside `ManufacturerData`,
/// `ServiceData` and `UUIDs`, are ignored, never fatal.
struct BlueZDevice: Sendable, Hashable {
  /// The properties whose change means an advertisement was received just now.
  static let sightingKeys: Set<String> = ["RSSI", "TxPower", "ManufacturerData", "ServiceData"]

  let path: DBusObjectPath
  var adapter: DBusObjectPath
  var address: BluetoothAddress
  var addressType: Advertisement.AddressType = .public
  /// The `Name` property's bytes (BlueZ sends a string; an `ay` is accepted as is).
  var name: [UInt8]?
  var alias: String?
  var rssi: Int?
  var txPower: Int?
  var manufacturerData: [UInt16: [UInt8]] = [:]
  var serviceData: [BluetoothUUID: [UInt8]] = [:]
  var uuids: [BluetoothUUID] = []
  var connected = false
  var servicesResolved = false
  var paired = false
  /// When an advertisement of the device was last seen (or when it entered the model).
  var lastSeen: ContinuousClock.Instant

  /// Makes a device from its properties; `nil` without a valid `Address` (from the property, or
  /// else from a `dev_XX_XX_XX_XX_XX_XX` path).
  init?(path: DBusObjectPath, properties: [String: DBusValue], now: ContinuousClock.Instant) {
    guard
      let address = properties["Address"]?.stringValue.flatMap({ try? BluetoothAddress($0) })
        ?? BlueZDevice.address(fromPath: path)
    else { return nil }
    self.path = path
    self.address = address
    adapter = BlueZDevice.parent(of: path)
    lastSeen = now
    update(properties, invalidated: [])
  }

  /// The address a BlueZ device path encodes (`…/dev_AA_BB_CC_DD_EE_FF`).
  static func address(fromPath path: DBusObjectPath) -> BluetoothAddress? {
    guard let last = path.rawValue.split(separator: "/").last, last.hasPrefix("dev_") else {
      return nil
    }
    return try? BluetoothAddress(String(last.dropFirst(4).map { $0 == "_" ? ":" : $0 }))
  }

  /// The parent path (`/org/bluez/hci0` for `/org/bluez/hci0/dev_…`).
  static func parent(of path: DBusObjectPath) -> DBusObjectPath {
    let text = path.rawValue
    guard let slash = text.lastIndex(of: "/"), slash != text.startIndex else { return .root }
    return (try? DBusObjectPath(String(text[..<slash]))) ?? .root
  }

  /// Applies changed and invalidated properties.
  mutating func update(_ changed: [String: DBusValue], invalidated: [String]) {
    for key in invalidated {
      switch key {
      case "Name": name = nil
      case "Alias": alias = nil
      case "RSSI": rssi = nil
      case "TxPower": txPower = nil
      case "ManufacturerData": manufacturerData = [:]
      case "ServiceData": serviceData = [:]
      case "UUIDs": uuids = []
      default: break
      }
    }
    for (key, value) in changed {
      let value = value.unwrapped
      switch key {
      case "Address":
        if let text = value.stringValue, let parsed = try? BluetoothAddress(text) {
          address = parsed
        }
      case "AddressType":
        if case .string(let text) = value, let type = Advertisement.AddressType(rawValue: text) {
          addressType = type
        }
      case "Name":
        if case .string(let text) = value {
          name = Array(text.utf8)
        } else if let bytes = value.bytesValue {
          name = bytes
        }
      case "Alias": if case .string(let text) = value { alias = text }
      case "RSSI": if let number = Self.smallInteger(value) { rssi = number }
      case "TxPower": if let number = Self.smallInteger(value) { txPower = number }
      case "ManufacturerData":
        if let parsed = Self.manufacturerData(value) { manufacturerData = parsed }
      case "ServiceData": if let parsed = Self.serviceData(value) { serviceData = parsed }
      case "UUIDs": if let parsed = Self.uuids(value) { uuids = parsed }
      case "Connected": if let flag = value.boolValue { connected = flag }
      case "ServicesResolved":
        if let flag = value.boolValue {
          servicesResolved = flag
          // bluetoothd 5.66 does not always emit `Connected: true` for an LE link made with
          // `Connect()` (seen in the lab: the link was already counted), but resolved
          // services need a link.
          if flag { connected = true }
        }
      case "Paired": if let flag = value.boolValue { paired = flag }
      case "Adapter":
        if case .objectPath(let path) = value { adapter = path }
      default: break
      }
    }
  }

  /// The port's view of the device.
  var advertisement: Advertisement {
    Advertisement(
      address: address, addressType: addressType, name: name, rssi: rssi, txPower: txPower,
      manufacturerData: manufacturerData, serviceData: serviceData, serviceUUIDs: uuids)
  }

  /// An RSSI or TX power: an integer in the range of a signed 16-bit value (BlueZ sends `n`).
  static func smallInteger(_ value: DBusValue) -> Int? {
    guard let number = value.integerValue, (-32768...32767).contains(number) else { return nil }
    return Int(number)
  }

  /// `a{qv}` with `ay` values → data by company id; entries of other types are skipped; `nil`
  /// when the value is not a dictionary at all.
  static func manufacturerData(_ value: DBusValue) -> [UInt16: [UInt8]]? {
    guard case .dictionary(_, _, let entries) = value.unwrapped else { return nil }
    var result: [UInt16: [UInt8]] = [:]
    for (key, data) in entries {
      guard let id = key.integerValue, let company = UInt16(exactly: id),
        let bytes = data.bytesValue
      else { continue }
      result[company] = bytes
    }
    return result
  }

  /// `a{sv}` with UUID keys and `ay` values → data by UUID; invalid entries are skipped.
  static func serviceData(_ value: DBusValue) -> [BluetoothUUID: [UInt8]]? {
    guard case .dictionary(_, _, let entries) = value.unwrapped else { return nil }
    var result: [BluetoothUUID: [UInt8]] = [:]
    for (key, data) in entries {
      guard let text = key.stringValue, let uuid = try? BluetoothUUID(text),
        let bytes = data.bytesValue
      else { continue }
      result[uuid] = bytes
    }
    return result
  }

  /// `as` of UUIDs → UUIDs; invalid entries are skipped.
  static func uuids(_ value: DBusValue) -> [BluetoothUUID]? {
    guard let values = value.arrayValues else { return nil }
    return values.compactMap { $0.stringValue.flatMap { try? BluetoothUUID($0) } }
  }
}
