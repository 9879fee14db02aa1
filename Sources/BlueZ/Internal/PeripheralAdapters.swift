import BridgeCore
import DBus

/// The adapters the peripheral role can use, mirrored from one `GetManagedObjects` snapshot and
/// then from `InterfacesAdded`, `InterfacesRemoved` and the adapters' `PropertiesChanged`. Pure.
///
/// Only adapters matter here (devices and remote GATT objects are ignored), with the interfaces
/// each one offers: registering needs `GattManager1` and `LEAdvertisingManager1` (the latter is
/// missing on adapters without LE).
struct PeripheralAdapters: Sendable {
  /// One adapter and the interfaces of its object.
  struct Entry: Sendable, Hashable {
    var adapter: BlueZAdapter
    var interfaces: Set<String>

    /// Whether the adapter can hold a GATT application and an advertisement.
    var canPublish: Bool {
      interfaces.contains(BlueZNames.gattManager)
        && interfaces.contains(BlueZNames.advertisingManager)
    }
  }

  /// Which adapter to publish on, or why none can be used.
  enum Choice: Sendable, Hashable {
    case adapter(DBusObjectPath)
    case unavailable(String)
  }

  private(set) var entries: [DBusObjectPath: Entry] = [:]
  /// The devices connected now (`Device1.Connected`), by object path: the centrals of the
  /// peripheral role, and the peripherals the central role connected to (BlueZ does not say
  /// which is which).
  private(set) var connected: Set<DBusObjectPath> = []
  /// Devices that disconnected (or went) since ``takeDisconnected()`` was last called, bonded
  /// ones left out (bluetoothd keeps their subscriptions across links).
  private var disconnected: [DBusObjectPath] = []
  /// Devices paired or bonded (`Device1.Paired`, `Device1.Bonded`).
  private var bonded: Set<DBusObjectPath> = []

  /// Notes what `properties` of `Device1` at `path` say about the link and the bond.
  private mutating func noteDevice(_ path: DBusObjectPath, _ properties: [String: DBusValue]) {
    if properties["Paired"] == .bool(true) || properties["Bonded"] == .bool(true) {
      bonded.insert(path)
    } else if properties["Paired"] == .bool(false) && properties["Bonded"] != .bool(true) {
      bonded.remove(path)
    }
    switch properties["Connected"] {
    case .bool(true)?:
      connected.insert(path)
    case .bool(false)?:
      if connected.remove(path) != nil, !bonded.contains(path) { disconnected.append(path) }
    default:
      break
    }
  }

  /// The devices that disconnected or went since the last call.
  mutating func takeDisconnected() -> [DBusObjectPath] {
    defer { disconnected = [] }
    return disconnected
  }

  /// How many devices are connected through `adapter`.
  func connectedCount(on adapter: DBusObjectPath) -> Int {
    let prefix = adapter.rawValue + "/"
    return connected.count { $0.rawValue.hasPrefix(prefix) }
  }

  /// Replaces the mirror with the adapters of a `GetManagedObjects` reply.
  ///
  /// - Throws: ``BlueZObjectModel/MalformedReply`` when the reply is not `a{oa{sa{sv}}}`.
  mutating func load(_ reply: [DBusValue]) throws(BlueZObjectModel.MalformedReply) {
    guard reply.count == 1, case .dictionary(_, _, let objects) = reply[0] else {
      throw BlueZObjectModel.MalformedReply(
        description:
          "GetManagedObjects replied \(reply.map(\.signature.rawValue)), not a{oa{sa{sv}}}")
    }
    let before = connected
    entries = [:]
    connected = []
    bonded = []
    defer {
      // Links that went while the signals saying so were lost (a snapshot taken again).
      disconnected += before.subtracting(connected).filter { !bonded.contains($0) }
        .sorted { $0.rawValue < $1.rawValue }
    }
    for (key, value) in objects {
      guard case .objectPath(let path) = key,
        let interfaces = BlueZObjectModel.interfaces(value)
      else { continue }
      if let device = interfaces[BlueZNames.device] { noteDevice(path, device) }
      guard let properties = interfaces[BlueZNames.adapter] else { continue }
      entries[path] = Entry(
        adapter: BlueZAdapter(path: path, properties: properties),
        interfaces: Set(interfaces.keys))
    }
  }

  /// Applies one signal of the BlueZ owner.
  ///
  /// - Returns: Whether an adapter appeared, went, or changed what matters here.
  mutating func apply(_ signal: DBusSignal) -> Bool {
    let before = entries
    switch (signal.interface, signal.member) {
    case (BlueZNames.objectManager, "InterfacesAdded"):
      guard signal.arguments.count == 2, case .objectPath(let path) = signal.arguments[0],
        let interfaces = BlueZObjectModel.interfaces(signal.arguments[1])
      else { return false }
      if let device = interfaces[BlueZNames.device] { noteDevice(path, device) }
      if var entry = entries[path] {
        entry.interfaces.formUnion(interfaces.keys)
        if let properties = interfaces[BlueZNames.adapter] {
          entry.adapter.update(properties, invalidated: [])
        }
        entries[path] = entry
      } else if let properties = interfaces[BlueZNames.adapter] {
        entries[path] = Entry(
          adapter: BlueZAdapter(path: path, properties: properties),
          interfaces: Set(interfaces.keys))
      }
    case (BlueZNames.objectManager, "InterfacesRemoved"):
      guard signal.arguments.count == 2, case .objectPath(let path) = signal.arguments[0],
        let names = signal.arguments[1].arrayValues?.compactMap(\.stringValue)
      else { return false }
      if names.contains(BlueZNames.device) {
        if connected.remove(path) != nil, !bonded.contains(path) { disconnected.append(path) }
        bonded.remove(path)
      }
      guard var entry = entries[path] else { return false }
      entry.interfaces.subtract(names)
      entries[path] = entry.interfaces.contains(BlueZNames.adapter) ? entry : nil
    case (BlueZNames.properties, "PropertiesChanged"):
      guard signal.arguments.count >= 2, let changed = signal.arguments[1].propertyMap else {
        return false
      }
      if signal.arguments[0].stringValue == BlueZNames.device,
        case .bool(let on)? = changed["Connected"]
      {
        if on {
          connected.insert(signal.path)
        } else if connected.remove(signal.path) != nil {
          disconnected.append(signal.path)
        }
        return false
      }
      guard signal.arguments[0].stringValue == BlueZNames.adapter, var entry = entries[signal.path]
      else { return false }
      let invalidated =
        signal.arguments.count > 2
        ? (signal.arguments[2].arrayValues?.compactMap(\.stringValue) ?? []) : []
      entry.adapter.update(changed, invalidated: invalidated)
      entries[signal.path] = entry
    default:
      return false
    }
    return Self.relevant(before) != Self.relevant(entries)
  }

  /// Forgets every adapter (bluetoothd went away).
  mutating func removeAll() {
    entries = [:]
    connected = []
    disconnected = []
    bonded = []
  }

  /// What decides the choice: path, id, power and capability of each adapter.
  private static func relevant(_ entries: [DBusObjectPath: Entry]) -> [DBusObjectPath: String] {
    entries.mapValues { "\($0.adapter.id) \($0.adapter.powered) \($0.canPublish)" }
  }

  /// The adapter to publish on.
  ///
  /// - Parameters:
  ///   - requested: The adapter id asked for (`hci0`), or `nil` for any.
  ///   - current: The adapter in use now; kept while it stays usable, so that another adapter
  ///     powering on does not move the service.
  /// - Returns: The adapter's path, or a reason for people.
  func choose(requested: String?, current: DBusObjectPath?) -> Choice {
    if let requested {
      guard let entry = entries.values.first(where: { $0.adapter.id == requested }) else {
        return .unavailable("adapter \(requested) is not present")
      }
      guard entry.adapter.powered else {
        return .unavailable("adapter \(requested) is powered off")
      }
      guard entry.canPublish else {
        return .unavailable("adapter \(requested) offers no LE advertising or GATT server")
      }
      return .adapter(entry.adapter.path)
    }
    if let current, let entry = entries[current], entry.adapter.powered, entry.canPublish {
      return .adapter(current)
    }
    let usable = entries.values.filter { $0.adapter.powered && $0.canPublish }
    if let first = usable.min(by: { $0.adapter.id < $1.adapter.id }) {
      return .adapter(first.adapter.path)
    }
    if entries.isEmpty { return .unavailable("no Bluetooth adapter is present") }
    return .unavailable("no powered Bluetooth adapter with LE advertising")
  }
}
