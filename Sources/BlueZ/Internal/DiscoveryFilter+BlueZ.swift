import BridgeCore
import DBus

extension DiscoveryFilter {
  /// The `SetDiscoveryFilter` argument (`a{sv}`): `Transport` `le`; `UUIDs` (128-bit form) only
  /// when some are given; `RSSI` only with a floor; `DuplicateData` only when `true`.
  ///
  /// False booleans are left out on purpose: bluetoothd crashed on them on 32-bit ARM. BlueZ's
  /// own default for `DuplicateData` is `true`, so `duplicateData == false` cannot be requested
  /// and the stack keeps reporting duplicates.
  var bluezDictionary: DBusValue {
    var properties: [String: DBusValue] = ["Transport": .string("le")]
    if !serviceUUIDs.isEmpty {
      properties["UUIDs"] = .strings(serviceUUIDs.map(\.longForm))
    }
    if let rssiFloor {
      properties["RSSI"] = .int16(Int16(clamping: rssiFloor))
    }
    if duplicateData { properties["DuplicateData"] = .bool(true) }
    return .properties(properties)
  }
}
