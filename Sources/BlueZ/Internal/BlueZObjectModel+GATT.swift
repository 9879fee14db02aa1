import BridgeCore
import DBus

extension BlueZObjectModel {
  /// Whether an object has one of the remote GATT interfaces.
  static func hasGATTInterface(_ interfaces: [String: [String: DBusValue]]) -> Bool {
    interfaces[BlueZNames.gattService] != nil || interfaces[BlueZNames.gattCharacteristic] != nil
      || interfaces[BlueZNames.gattDescriptor] != nil
  }

  /// Whether the device is connected and BlueZ finished discovering its services.
  /// Records that a device's link is up (a `Connect()` call returned), for when bluetoothd
  /// did not emit `Connected: true`.
  ///
  /// - Returns: `connectionChanged(true)` when the model thought it disconnected.
  mutating func markConnected(_ path: DBusObjectPath) -> [CentralEvent] {
    guard var device = devices[path], !device.connected else { return [] }
    device.connected = true
    devices[path] = device
    return [.connectionChanged(device.address, connected: true)]
  }

  static func isResolved(_ device: BlueZDevice) -> Bool {
    device.connected && device.servicesResolved
  }

  /// `servicesResolved` with the device's GATT tree, when it is resolved.
  func resolvedEvent(_ device: BlueZDevice) -> CentralEvent? {
    guard Self.isResolved(device) else { return nil }
    return .servicesResolved(device.address, gatt.tree(of: device.path))
  }

  /// Adds or refreshes the GATT interfaces of one object below a known adapter; objects
  /// elsewhere, malformed ones and those beyond the per-device bound are ignored (counted in
  /// ``malformed``).
  mutating func addGATTObject(
    _ path: DBusObjectPath, _ interfaces: [String: [String: DBusValue]]
  ) {
    guard adapters.keys.contains(where: { path.isDescendant(of: $0) }) else { return }
    var outcomes: [BlueZGATTObjects.Outcome] = []
    if let properties = interfaces[BlueZNames.gattService] {
      outcomes.append(gatt.addService(path, properties))
    }
    if let properties = interfaces[BlueZNames.gattCharacteristic] {
      outcomes.append(gatt.addCharacteristic(path, properties))
    }
    if let properties = interfaces[BlueZNames.gattDescriptor] {
      outcomes.append(gatt.addDescriptor(path, properties))
    }
    malformed += outcomes.filter { $0 != .stored }.count
  }

  /// Removes GATT interfaces of one object; a characteristic that was notifying reports
  /// `notifyingChanged(false)` (the stack turned it off by removing it).
  mutating func removeGATTObject(_ path: DBusObjectPath, _ names: Set<String>) -> [CentralEvent] {
    let removed = gatt.characteristicsRemoved(by: path, interfaces: names)
    let events = removed.filter(\.receiving).compactMap { characteristic in
      id(of: characteristic).map { CentralEvent.notifyingChanged($0, false) }
    }
    gatt.remove(path, interfaces: names)
    return events
  }

  /// A `PropertiesChanged` of a characteristic: `notifyingChanged` when `Notifying` or
  /// `NotifyAcquired` changed whether notifications are on, then `notification` when a `Value`
  /// arrived while a `StartNotify` session is on (BlueZ also sends `Value` after a `ReadValue`;
  /// with notifications off that is no notification; values of an acquired socket never come
  /// as `Value`).
  mutating func characteristicChanged(
    _ path: DBusObjectPath, _ changed: [String: DBusValue], _ invalidated: [String]
  ) -> [CentralEvent] {
    guard let (before, after) = gatt.updateCharacteristic(path, changed, invalidated: invalidated)
    else { return [] }
    guard let id = id(of: after) else { return [] }
    var events: [CentralEvent] = []
    if after.receiving != before.receiving {
      events.append(.notifyingChanged(id, after.receiving))
    }
    if let value = changed["Value"] {
      if let bytes = value.bytesValue {
        if after.notifying { events.append(.notification(id, bytes)) }
      } else {
        malformed += 1
      }
    }
    return events
  }

  /// The port's id of a characteristic; `nil` when its service is not known.
  func id(of characteristic: BlueZGATTObjects.Characteristic) -> GATTCharacteristicID? {
    guard let service = gatt.services[characteristic.service],
      let address = devices[characteristic.device]?.address
        ?? BlueZDevice.address(fromPath: characteristic.device)
    else { return nil }
    return GATTCharacteristicID(
      address: address, service: service.uuid, characteristic: characteristic.uuid)
  }

  /// The device with this address: a connected one first, else the one seen last (two adapters
  /// can know the same device).
  func device(address: BluetoothAddress) -> BlueZDevice? {
    devices.values.filter { $0.address == address }.sorted { $0.path < $1.path }.max { lhs, rhs in
      (lhs.connected ? 1 : 0, lhs.lastSeen) < (rhs.connected ? 1 : 0, rhs.lastSeen)
    }
  }

  /// The characteristic an id means (see ``BlueZGATTObjects/characteristic(of:service:characteristic:)``).
  func characteristic(_ id: GATTCharacteristicID, on device: BlueZDevice)
    -> BlueZGATTObjects.Characteristic?
  {
    gatt.characteristic(of: device.path, service: id.service, characteristic: id.characteristic)
  }
}
