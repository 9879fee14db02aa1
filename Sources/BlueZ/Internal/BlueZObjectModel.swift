import BridgeCore
import DBus

/// The mirror of BlueZ's object tree: adapters and devices by path, and the remote GATT objects
/// of the devices (``BlueZGATTObjects``), built once from a `GetManagedObjects` reply and then
/// kept current from `InterfacesAdded`, `InterfacesRemoved` and `PropertiesChanged` signals.
/// Pure: no I/O; time is passed in.
///
/// Every change returns the ``CentralEvent``s it causes. The device map is bounded: beyond
/// `maxDevices`, the devices not connected that were seen longest ago are forgotten (without an
/// event: the stack still has them) until 90 % of the bound is left; a forgotten device that
/// reports again is re-learnt by its owner (see ``Update/unknownDevice``). GATT objects are kept
/// for objects below a known adapter and go with their device.
struct BlueZObjectModel: Sendable {
  /// What one change did.
  struct Update: Sendable, Equatable {
    /// The events to deliver, in order.
    var events: [CentralEvent] = []
    /// A device the model does not know reported a change (it was evicted): its properties
    /// should be fetched (`Properties.GetAll`) and passed to ``addDevice(path:properties:now:)``.
    var unknownDevice: DBusObjectPath?
  }

  /// Why a `GetManagedObjects` reply could not be read.
  struct MalformedReply: Error, Sendable, CustomStringConvertible {
    var description: String
  }

  private(set) var adapters: [DBusObjectPath: BlueZAdapter] = [:]
  var devices: [DBusObjectPath: BlueZDevice] = [:]
  /// When an advertisement was last seen on each adapter (by adapter path).
  private(set) var lastAdvertisement: [DBusObjectPath: ContinuousClock.Instant] = [:]
  /// Devices forgotten to keep the map bounded.
  private(set) var evicted = 0
  /// Objects or signals ignored because they were malformed (or, for GATT objects, beyond
  /// ``BlueZGATTObjects/maxObjectsPerDevice``).
  var malformed = 0
  /// The remote GATT objects (changed by `BlueZObjectModel+GATT.swift`).
  var gatt = BlueZGATTObjects()
  /// Adapter ids being power-cycled, reported with `resetting == true`.
  var resetting: Set<String> = []

  let maxDevices: Int
  /// The one adapter whose devices the model mirrors (`hci1`), or `nil` for every adapter.
  let adapter: String?

  /// Makes an empty model.
  ///
  /// - Parameters:
  ///   - maxDevices: The most devices kept.
  ///   - adapter: The one adapter whose devices (and their GATT objects) are mirrored — a
  ///     gateway bound to `bluetooth.adapter` must not see, or act on, the links another
  ///     adapter of the same bluetoothd holds to the same address; `nil` for every adapter.
  ///     Adapters themselves are always mirrored.
  init(maxDevices: Int, adapter: String? = nil) {
    self.maxDevices = max(1, maxDevices)
    self.adapter = adapter
  }

  /// Whether an object below an adapter (a device, a GATT object) belongs to the mirrored
  /// adapter: `/org/bluez/<adapter>/…`.
  func mirrors(_ path: DBusObjectPath) -> Bool {
    guard let adapter else { return true }
    let components = path.rawValue.split(separator: "/")
    return components.count >= 3 && components[2] == adapter
  }

  /// The adapter with this id.
  func adapter(id: String) -> BlueZAdapter? {
    adapters.values.first { $0.id == id }
  }

  /// The port's view of every adapter, sorted by id.
  var adapterInfos: [AdapterInfo] {
    adapters.values.sorted { $0.id < $1.id }.map { $0.info(resetting: resetting.contains($0.id)) }
  }

  /// The port's view of one adapter.
  func info(_ adapter: BlueZAdapter) -> AdapterInfo {
    adapter.info(resetting: resetting.contains(adapter.id))
  }

  // MARK: snapshot

  /// Loads a `GetManagedObjects` reply (`a{oa{sa{sv}}}`), replacing whatever the model held.
  ///
  /// - Returns: `adapterChanged` for each adapter, then `deviceAppeared` for each device.
  /// - Throws: ``MalformedReply`` when the reply is not a dictionary of objects; single
  ///   malformed objects are skipped and counted in ``malformed``.
  mutating func load(_ reply: [DBusValue], now: ContinuousClock.Instant) throws(MalformedReply)
    -> [CentralEvent]
  {
    guard reply.count == 1, case .dictionary(_, _, let entries) = reply[0] else {
      throw MalformedReply(
        description:
          "GetManagedObjects replied \(reply.map(\.signature.rawValue)), not a{oa{sa{sv}}}")
    }
    adapters = [:]
    devices = [:]
    lastAdvertisement = [:]
    gatt = BlueZGATTObjects()
    var deviceObjects: [(DBusObjectPath, [String: DBusValue])] = []
    var gattObjects: [(DBusObjectPath, [String: [String: DBusValue]])] = []
    for (key, value) in entries {
      guard case .objectPath(let path) = key, let interfaces = Self.interfaces(value) else {
        malformed += 1
        continue
      }
      if let properties = interfaces[BlueZNames.adapter] {
        adapters[path] = BlueZAdapter(path: path, properties: properties)
      }
      guard mirrors(path) else { continue }
      if let properties = interfaces[BlueZNames.device] {
        deviceObjects.append((path, properties))
      }
      if Self.hasGATTInterface(interfaces) { gattObjects.append((path, interfaces)) }
    }
    var events = adapterInfos.map { CentralEvent.adapterChanged($0) }
    var loaded: [BlueZDevice] = []
    for (path, properties) in deviceObjects.sorted(by: { $0.0 < $1.0 }) {
      guard let device = BlueZDevice(path: path, properties: properties, now: now) else {
        malformed += 1
        continue
      }
      devices[path] = device
      loaded.append(device)
    }
    // Parents sort before their children: services, then characteristics, then descriptors.
    for (path, interfaces) in gattObjects.sorted(by: { $0.0 < $1.0 }) {
      addGATTObject(path, interfaces)
    }
    for device in loaded {
      events.append(.deviceAppeared(device.advertisement))
      if let resolved = resolvedEvent(device) { events.append(resolved) }
    }
    evictIfNeeded()
    return events
  }

  // MARK: signals

  /// Applies one signal from the BlueZ owner; other signals are ignored.
  mutating func apply(_ signal: DBusSignal, now: ContinuousClock.Instant) -> Update {
    switch (signal.interface, signal.member) {
    case (BlueZNames.objectManager, "InterfacesAdded"):
      guard signal.arguments.count == 2, case .objectPath(let path) = signal.arguments[0],
        let interfaces = Self.interfaces(signal.arguments[1])
      else {
        malformed += 1
        return Update()
      }
      return interfacesAdded(path, interfaces, now: now)
    case (BlueZNames.objectManager, "InterfacesRemoved"):
      guard signal.arguments.count == 2, case .objectPath(let path) = signal.arguments[0],
        let names = signal.arguments[1].arrayValues?.compactMap(\.stringValue)
      else {
        malformed += 1
        return Update()
      }
      return interfacesRemoved(path, Set(names))
    case (BlueZNames.properties, "PropertiesChanged"):
      guard signal.arguments.count >= 2, case .string(let interface) = signal.arguments[0],
        let changed = signal.arguments[1].propertyMap
      else {
        malformed += 1
        return Update()
      }
      let invalidated =
        signal.arguments.count > 2
        ? (signal.arguments[2].arrayValues?.compactMap(\.stringValue) ?? []) : []
      return propertiesChanged(signal.path, interface, changed, invalidated, now: now)
    default:
      return Update()
    }
  }

  /// Adds (or refreshes) a device from its full properties, e.g. after re-learning an evicted
  /// device with `GetAll`.
  mutating func addDevice(
    path: DBusObjectPath, properties: [String: DBusValue], now: ContinuousClock.Instant
  ) -> Update {
    interfacesAdded(path, [BlueZNames.device: properties], now: now)
  }

  private mutating func interfacesAdded(
    _ path: DBusObjectPath, _ interfaces: [String: [String: DBusValue]],
    now: ContinuousClock.Instant
  ) -> Update {
    var update = Update()
    if let properties = interfaces[BlueZNames.adapter] {
      var adapter = adapters[path] ?? BlueZAdapter(path: path, properties: [:])
      adapter.update(properties, invalidated: [])
      adapters[path] = adapter
      update.events.append(.adapterChanged(info(adapter)))
    }
    guard mirrors(path) else { return update }
    if let properties = interfaces[BlueZNames.device] {
      if var device = devices[path] {
        let before = device.advertisement
        let wasResolved = Self.isResolved(device)
        device.update(properties, invalidated: [])
        noteSighting(&device, keys: Set(properties.keys), now: now)
        devices[path] = device
        if device.advertisement != before {
          update.events.append(.deviceUpdated(device.advertisement))
        }
        if !wasResolved, let resolved = resolvedEvent(device) { update.events.append(resolved) }
      } else if var device = BlueZDevice(path: path, properties: properties, now: now) {
        noteSighting(&device, keys: Set(properties.keys), now: now)
        devices[path] = device
        update.events.append(.deviceAppeared(device.advertisement))
        if let resolved = resolvedEvent(device) { update.events.append(resolved) }
        evictIfNeeded()
      } else {
        malformed += 1
      }
    }
    if Self.hasGATTInterface(interfaces) {
      addGATTObject(path, interfaces)
      // BlueZ 5.66 may signal ServicesResolved before it exports the GATT objects (both are
      // queued for an idle flush, in either order): an object of a device already resolved
      // brings its tree again, so that the bridge sees every service.
      if let device = devices.values.first(where: { path.isDescendant(of: $0.path) }),
        let resolved = resolvedEvent(device)
      {
        update.events.append(resolved)
      }
    }
    return update
  }

  private mutating func interfacesRemoved(_ path: DBusObjectPath, _ names: Set<String>) -> Update {
    var update = Update()
    update.events += removeGATTObject(path, names)
    if names.contains(BlueZNames.device) {
      gatt.removeDevice(path)
      if let device = devices.removeValue(forKey: path) {
        update.events.append(.deviceRemoved(device.address))
      }
    }
    if names.contains(BlueZNames.adapter), let adapter = adapters.removeValue(forKey: path) {
      devices = devices.filter { $0.value.adapter != path }
      gatt.removeDevices(below: path)
      lastAdvertisement[path] = nil
      resetting.remove(adapter.id)
      update.events.append(.adapterRemoved(id: adapter.id))
    }
    return update
  }

  private mutating func propertiesChanged(
    _ path: DBusObjectPath, _ interface: String, _ changed: [String: DBusValue],
    _ invalidated: [String], now: ContinuousClock.Instant
  ) -> Update {
    var update = Update()
    switch interface {
    case BlueZNames.adapter:
      guard var adapter = adapters[path] else { return update }
      let before = info(adapter)
      adapter.update(changed, invalidated: invalidated)
      adapters[path] = adapter
      let after = info(adapter)
      if after != before { update.events.append(.adapterChanged(after)) }
    case BlueZNames.device:
      guard mirrors(path) else { return update }
      guard var device = devices[path] else {
        if adapters[BlueZDevice.parent(of: path)] != nil,
          BlueZDevice.address(fromPath: path) != nil
        {
          update.unknownDevice = path
        }
        return update
      }
      let before = device.advertisement
      let wasConnected = device.connected
      let wasResolved = Self.isResolved(device)
      device.update(changed, invalidated: invalidated)
      noteSighting(&device, keys: Set(changed.keys), now: now)
      devices[path] = device
      if device.connected != wasConnected {
        update.events.append(.connectionChanged(device.address, connected: device.connected))
      }
      if !wasResolved, let resolved = resolvedEvent(device) { update.events.append(resolved) }
      // An RSSI report is a new advertisement even when the value did not change.
      if device.advertisement != before || changed["RSSI"] != nil {
        update.events.append(.deviceUpdated(device.advertisement))
      }
    case BlueZNames.gattCharacteristic:
      update.events = characteristicChanged(path, changed, invalidated)
    case BlueZNames.gattService, BlueZNames.gattDescriptor:
      gatt.updateOther(path, changed)
    default:
      break
    }
    return update
  }

  private mutating func noteSighting(
    _ device: inout BlueZDevice, keys: Set<String>, now: ContinuousClock.Instant
  ) {
    guard !keys.isDisjoint(with: BlueZDevice.sightingKeys),
      device.rssi != nil || keys.contains("RSSI")
    else { return }
    device.lastSeen = now
    lastAdvertisement[device.adapter] = now
  }

  /// Forgets the longest-unseen devices that are not connected until 90 % of the bound is left.
  private mutating func evictIfNeeded() {
    guard devices.count > maxDevices else { return }
    let target = max(0, maxDevices - max(1, maxDevices / 10))
    let candidates = devices.values.filter { !$0.connected }.sorted { $0.lastSeen < $1.lastSeen }
    for device in candidates.prefix(devices.count - target) {
      devices[device.path] = nil
      gatt.removeDevice(device.path)
      evicted += 1
    }
  }

  /// `a{sa{sv}}` → properties by interface; `nil` when the value has another shape.
  static func interfaces(_ value: DBusValue) -> [String: [String: DBusValue]]? {
    guard let byInterface = value.propertyMap else { return nil }
    var result: [String: [String: DBusValue]] = [:]
    for (name, properties) in byInterface {
      guard let map = properties.propertyMap else { return nil }
      result[name] = map
    }
    return result
  }
}
