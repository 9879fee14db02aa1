import BridgeCore
import DBus

/// The mirror of BlueZ's remote GATT objects (`org.bluez.GattService1`, `GattCharacteristic1`,
/// `GattDescriptor1`), indexed by the device they belong to. Pure, part of ``BlueZObjectModel``.
///
/// BlueZ nests them under the device (`…/dev_XX/service000a/char000b/desc000d`, the hex number
/// being the attribute handle), so sorting paths gives the handle order. The parent comes from
/// the `Device` / `Service` / `Characteristic` property, or else from the path.
///
/// Bounded: at most ``maxObjectsPerDevice`` objects per device (a GATT database has at most
/// 65535 attributes; real ones a few dozen); BlueZ removes them when the device is removed (and,
/// depending on its cache, when it disconnects), the model when it drops the device.
struct BlueZGATTObjects: Sendable {
  /// One `org.bluez.GattService1` object.
  struct Service: Sendable, Hashable {
    let path: DBusObjectPath
    let device: DBusObjectPath
    var uuid: BluetoothUUID
    var primary: Bool
  }

  /// One `org.bluez.GattCharacteristic1` object.
  struct Characteristic: Sendable, Hashable {
    /// Whether notifications are on by either method (`StartNotify` or `AcquireNotify`).
    var receiving: Bool { notifying || notifyAcquired }

    let path: DBusObjectPath
    let service: DBusObjectPath
    let device: DBusObjectPath
    var uuid: BluetoothUUID
    var flags: [String]
    /// The `Notifying` property: a `StartNotify` session is on.
    var notifying: Bool
    /// The `NotifyAcquired` property: a client holds the socket of `AcquireNotify`.
    var notifyAcquired = false
    /// The `MTU` property (BlueZ ≥ 5.62): the ATT MTU of the connection.
    var mtu: Int?
  }

  /// One `org.bluez.GattDescriptor1` object.
  struct Descriptor: Sendable, Hashable {
    let path: DBusObjectPath
    let characteristic: DBusObjectPath
    let device: DBusObjectPath
    var uuid: BluetoothUUID
  }

  /// What adding an object did.
  enum Outcome: Sendable, Equatable {
    /// The object is new or was refreshed.
    case stored
    /// The object has no valid `UUID` (or a parent of the wrong type): ignored.
    case malformed
    /// The device already has ``maxObjectsPerDevice`` objects: ignored.
    case full
  }

  /// The most GATT objects kept per device.
  static let maxObjectsPerDevice = 2048

  private(set) var services: [DBusObjectPath: Service] = [:]
  private(set) var characteristics: [DBusObjectPath: Characteristic] = [:]
  private(set) var descriptors: [DBusObjectPath: Descriptor] = [:]
  /// Every object's path by the device it belongs to.
  private(set) var byDevice: [DBusObjectPath: Set<DBusObjectPath>] = [:]

  /// How many objects are mirrored.
  var count: Int { services.count + characteristics.count + descriptors.count }

  // MARK: adding

  /// Adds or refreshes a service from its properties.
  mutating func addService(_ path: DBusObjectPath, _ properties: [String: DBusValue]) -> Outcome {
    if var service = services[path] {
      if let uuid = Self.uuid(properties["UUID"]) { service.uuid = uuid }
      if let primary = properties["Primary"]?.boolValue { service.primary = primary }
      services[path] = service
      return .stored
    }
    guard let uuid = Self.uuid(properties["UUID"]) else { return .malformed }
    guard let device = Self.parent(properties["Device"], of: path) else { return .malformed }
    guard reserve(path, for: device) else { return .full }
    services[path] = Service(
      path: path, device: device, uuid: uuid, primary: properties["Primary"]?.boolValue ?? true)
    return .stored
  }

  /// Adds or refreshes a characteristic from its properties.
  mutating func addCharacteristic(_ path: DBusObjectPath, _ properties: [String: DBusValue])
    -> Outcome
  {
    if var characteristic = characteristics[path] {
      characteristic.update(properties, invalidated: [])
      characteristics[path] = characteristic
      return .stored
    }
    guard let uuid = Self.uuid(properties["UUID"]) else { return .malformed }
    guard let service = Self.parent(properties["Service"], of: path) else { return .malformed }
    let device = services[service]?.device ?? BlueZDevice.parent(of: service)
    guard reserve(path, for: device) else { return .full }
    var characteristic = Characteristic(
      path: path, service: service, device: device, uuid: uuid, flags: [], notifying: false)
    characteristic.update(properties, invalidated: [])
    characteristics[path] = characteristic
    return .stored
  }

  /// Adds or refreshes a descriptor from its properties.
  mutating func addDescriptor(_ path: DBusObjectPath, _ properties: [String: DBusValue]) -> Outcome
  {
    if var descriptor = descriptors[path] {
      if let uuid = Self.uuid(properties["UUID"]) { descriptor.uuid = uuid }
      descriptors[path] = descriptor
      return .stored
    }
    guard let uuid = Self.uuid(properties["UUID"]) else { return .malformed }
    guard let characteristic = Self.parent(properties["Characteristic"], of: path) else {
      return .malformed
    }
    let device =
      characteristics[characteristic]?.device
      ?? BlueZDevice.parent(of: BlueZDevice.parent(of: characteristic))
    guard reserve(path, for: device) else { return .full }
    descriptors[path] = Descriptor(
      path: path, characteristic: characteristic, device: device, uuid: uuid)
    return .stored
  }

  /// Counts a new object against its device's bound.
  private mutating func reserve(_ path: DBusObjectPath, for device: DBusObjectPath) -> Bool {
    let paths = byDevice[device] ?? []
    guard paths.count < Self.maxObjectsPerDevice else { return false }
    byDevice[device, default: []].insert(path)
    return true
  }

  // MARK: changing

  /// Applies changed and invalidated properties of a characteristic; its state before and after,
  /// or `nil` for an unknown characteristic.
  mutating func updateCharacteristic(
    _ path: DBusObjectPath, _ changed: [String: DBusValue], invalidated: [String]
  ) -> (before: Characteristic, after: Characteristic)? {
    guard var characteristic = characteristics[path] else { return nil }
    let before = characteristic
    characteristic.update(changed, invalidated: invalidated)
    characteristics[path] = characteristic
    return (before, characteristic)
  }

  /// Applies changed properties of a service or descriptor (their UUID, `Primary`).
  mutating func updateOther(_ path: DBusObjectPath, _ changed: [String: DBusValue]) {
    if services[path] != nil {
      _ = addService(path, changed)
    } else if descriptors[path] != nil {
      _ = addDescriptor(path, changed)
    }
  }

  // MARK: removing

  /// The characteristics that removing these interfaces of one object takes away, in path order
  /// (see ``remove(_:interfaces:)``).
  func characteristicsRemoved(by path: DBusObjectPath, interfaces names: Set<String>)
    -> [Characteristic]
  {
    var removed: [Characteristic] = []
    if names.contains(BlueZNames.gattCharacteristic), let characteristic = characteristics[path] {
      removed.append(characteristic)
    }
    if names.contains(BlueZNames.gattService), let service = services[path] {
      removed += characteristics(of: service)
    }
    return removed
  }

  /// Removes the named interfaces of one object; a removed service takes its characteristics and
  /// descriptors along, a removed characteristic its descriptors.
  mutating func remove(_ path: DBusObjectPath, interfaces names: Set<String>) {
    if names.contains(BlueZNames.gattDescriptor), let descriptor = descriptors[path] {
      forget(descriptor.path, of: descriptor.device)
    }
    for characteristic in characteristicsRemoved(by: path, interfaces: names) {
      removeCharacteristic(characteristic)
    }
    if names.contains(BlueZNames.gattService), let service = services[path] {
      forget(path, of: service.device)
    }
  }

  private mutating func removeCharacteristic(_ characteristic: Characteristic) {
    for descriptor in descriptors.values where descriptor.characteristic == characteristic.path {
      forget(descriptor.path, of: descriptor.device)
    }
    forget(characteristic.path, of: characteristic.device)
  }

  private mutating func forget(_ path: DBusObjectPath, of device: DBusObjectPath) {
    services[path] = nil
    characteristics[path] = nil
    descriptors[path] = nil
    byDevice[device]?.remove(path)
    if byDevice[device]?.isEmpty == true { byDevice[device] = nil }
  }

  /// Forgets every object of a device.
  mutating func removeDevice(_ device: DBusObjectPath) {
    guard let paths = byDevice.removeValue(forKey: device) else { return }
    for path in paths {
      services[path] = nil
      characteristics[path] = nil
      descriptors[path] = nil
    }
  }

  /// Forgets every object of the devices below an adapter.
  mutating func removeDevices(below adapter: DBusObjectPath) {
    for device in byDevice.keys where device.isDescendant(of: adapter) {
      removeDevice(device)
    }
  }

  // MARK: queries

  /// The services of a device in handle (path) order.
  func services(of device: DBusObjectPath) -> [Service] {
    (byDevice[device] ?? []).compactMap { services[$0] }.sorted { $0.path < $1.path }
  }

  /// The characteristics of a service in handle (path) order.
  func characteristics(of service: Service) -> [Characteristic] {
    (byDevice[service.device] ?? []).compactMap { path in
      characteristics[path].flatMap { $0.service == service.path ? $0 : nil }
    }.sorted { $0.path < $1.path }
  }

  /// The GATT tree of a device: services in handle order with their characteristics and
  /// descriptors; the MTU is the largest `MTU` any of its characteristics reports.
  func tree(of device: DBusObjectPath) -> GATTTree {
    let paths = byDevice[device] ?? []
    var descriptorsByCharacteristic: [DBusObjectPath: [Descriptor]] = [:]
    var characteristicsByService: [DBusObjectPath: [Characteristic]] = [:]
    var mtu: Int?
    for path in paths {
      if let descriptor = descriptors[path] {
        descriptorsByCharacteristic[descriptor.characteristic, default: []].append(descriptor)
      } else if let characteristic = characteristics[path] {
        characteristicsByService[characteristic.service, default: []].append(characteristic)
        if let value = characteristic.mtu { mtu = max(mtu ?? 0, value) }
      }
    }
    let services = services(of: device).map { service in
      GATTTree.Service(
        uuid: service.uuid, primary: service.primary,
        characteristics: (characteristicsByService[service.path] ?? []).sorted {
          $0.path < $1.path
        }.map { characteristic in
          GATTTree.Characteristic(
            uuid: characteristic.uuid, flags: characteristic.flags,
            descriptors: (descriptorsByCharacteristic[characteristic.path] ?? []).sorted {
              $0.path < $1.path
            }.map(\.uuid))
        })
    }
    return GATTTree(services: services, mtu: mtu)
  }

  /// The characteristic an id means on a device: the first service (in handle order) with the
  /// service UUID that has a characteristic with the characteristic UUID, and the first such
  /// characteristic in it.
  func characteristic(
    of device: DBusObjectPath, service: BluetoothUUID, characteristic uuid: BluetoothUUID
  ) -> Characteristic? {
    for candidate in services(of: device) where candidate.uuid == service {
      if let found = characteristics(of: candidate).first(where: { $0.uuid == uuid }) {
        return found
      }
    }
    return nil
  }

  // MARK: parsing

  /// A `UUID` property's value as a UUID.
  static func uuid(_ value: DBusValue?) -> BluetoothUUID? {
    value?.stringValue.flatMap { try? BluetoothUUID($0) }
  }

  /// The parent object: the object-path property when present (and of type `o`), else the
  /// parent of `path`; `nil` when the property has another type.
  static func parent(_ value: DBusValue?, of path: DBusObjectPath) -> DBusObjectPath? {
    guard let value else { return BlueZDevice.parent(of: path) }
    guard case .objectPath(let parent) = value.unwrapped else { return nil }
    return parent
  }
}

extension BlueZGATTObjects.Characteristic {
  /// Applies changed and invalidated properties; wrong types are ignored. `Value` is not kept.
  mutating func update(_ changed: [String: DBusValue], invalidated: [String]) {
    for key in invalidated {
      switch key {
      case "MTU": mtu = nil
      case "Notifying": notifying = false
      case "NotifyAcquired": notifyAcquired = false
      default: break
      }
    }
    for (key, value) in changed {
      switch key {
      case "UUID": if let parsed = BlueZGATTObjects.uuid(value) { uuid = parsed }
      case "Flags":
        if let values = value.arrayValues {
          flags = values.compactMap(\.stringValue)
        }
      case "Notifying": if let flag = value.boolValue { notifying = flag }
      case "NotifyAcquired": if let flag = value.boolValue { notifyAcquired = flag }
      case "MTU":
        if let number = value.integerValue, (0...65535).contains(number) { mtu = Int(number) }
      default: break
      }
    }
  }
}
