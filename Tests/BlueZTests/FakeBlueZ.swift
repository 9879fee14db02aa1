import BusTestSupport
import DBus
import Synchronization

/// The test playing bluetoothd on a private bus: owns `org.bluez`, serves an ObjectManager at `/`
/// and `org.bluez.Adapter1` / `org.bluez.Device1` / `org.bluez.Gatt*1` objects through our own
/// export side, records the method calls it receives and can be told to fail them or to never
/// answer (GATT objects: `FakeBlueZ+GATT.swift`).
final class FakeBlueZ: Sendable {
  /// One received method call.
  struct Call: Sendable, Equatable {
    var path: String
    var member: String
    var arguments: [DBusValue]
    /// The caller's unique bus name (recorded by ``method(_:at:in:out:_:)``).
    var sender: String? = nil
  }

  final class State: Sendable {
    /// Properties by object path, then interface, then name.
    let properties = Mutex<[String: [String: [String: DBusValue]]]>([:])
    let calls = Mutex<[Call]>([])
    /// Error replies, by method name (used once each).
    let failures = Mutex<[String: DBusError]>([:])
    /// Methods that do not answer (until `Disconnect` on the same object, or 10 s).
    let hanging = Mutex<Set<String>>([])
    /// How long a hanging adapter method takes to answer (default 3 s).
    let adapterHang = Mutex<Duration>(.seconds(3))
    /// Object paths whose hanging call was cancelled by `Disconnect`.
    let cancelled = Mutex<Set<String>>([])
    /// Registered GATT applications and advertisements (`FakeBlueZ+Peripheral.swift`).
    let peripheral = Mutex(FakePeripheralRecords())
    /// The fake's end of each acquired notification socket, by characteristic path.
    let notifySockets = Mutex<[String: Int32]>([:])
    /// Values written into the next acquired socket before `AcquireNotify` answers: a
    /// backlog waiting when the client starts reading.
    let acquirePrefill = Mutex<[[UInt8]]>([])
  }

  let connection: DBusConnection
  let state = State()

  private init(connection: DBusConnection) {
    self.connection = connection
  }

  /// Connects, serves the ObjectManager and takes the name `org.bluez`.
  static func start(on bus: PrivateBus, adapters: [String] = ["hci0"]) async throws -> FakeBlueZ {
    let fake = FakeBlueZ(connection: try await bus.connect())
    try await fake.connection.addObjectManager(at: .root)
    for (index, id) in adapters.enumerated() {
      try await fake.addAdapter(id, address: "00:1A:7D:DA:71:\(10 + index)")
    }
    guard try await fake.connection.requestName("org.bluez") == .primaryOwner else {
      throw HarnessError("cannot own org.bluez")
    }
    return fake
  }

  var calls: [Call] { state.calls.withLock { $0 } }

  func calls(_ member: String) -> [Call] { calls.filter { $0.member == member } }

  /// Makes the next call of `member` fail with the D-Bus error `name` (and `message`).
  func fail(_ member: String, with name: String, message: String? = nil) {
    state.failures.withLock {
      $0[member] = DBusError(name: name, message: message ?? "fake \(name)")
    }
  }

  /// Makes every later call of `member` hang (see ``State/hanging``).
  func hang(_ member: String) {
    _ = state.hanging.withLock { $0.insert(member) }
  }

  /// Makes every later call of the adapter method `member` answer only after `delay`.
  func hang(_ member: String, for delay: Duration) {
    state.adapterHang.withLock { $0 = delay }
    hang(member)
  }

  /// A method that records its calls, fails when told to, then runs `body`.
  func method(
    _ name: String, at path: String, in signature: DBusSignature = .empty,
    out: DBusSignature = .empty,
    _ body: @escaping @Sendable (DBusMethodCall) async throws -> [DBusValue] = { _ in [] }
  ) -> DBusMethod {
    let state = self.state
    return DBusMethod(name, in: signature, out: out) { call in
      state.calls.withLock {
        $0.append(Call(path: path, member: name, arguments: call.arguments, sender: call.sender))
      }
      if let error = state.failures.withLock({ $0.removeValue(forKey: name) }) {
        throw error
      }
      return try await body(call)
    }
  }

  /// Read-only properties served from ``State/properties`` (types taken from `initial`).
  func exportedProperties(
    _ path: String, _ interface: String, _ initial: [String: DBusValue]
  ) -> [DBusProperty] {
    let state = self.state
    return initial.keys.sorted().map { name in
      DBusProperty(name, signature: initial[name]!.signature) {
        state.properties.withLock { $0[path]?[interface]?[name] } ?? initial[name]!
      }
    }
  }

  func addAdapter(_ id: String, address: String, powered: Bool = true) async throws {
    let path = "/org/bluez/" + id
    let properties: [String: DBusValue] = [
      "Address": .string(address), "Name": .string("fake-" + id), "Alias": .string("lab-" + id),
      "Powered": .bool(powered), "Discovering": .bool(false), "PowerState": .string("on"),
    ]
    state.properties.withLock { $0[path] = ["org.bluez.Adapter1": properties] }
    let state = self.state
    let connection = self.connection
    func adapterMethod(_ name: String, in signature: DBusSignature = .empty) -> DBusMethod {
      method(name, at: path, in: signature) { _ in
        if state.hanging.withLock({ $0.contains(name) }) {
          try? await Task.sleep(for: state.adapterHang.withLock { $0 })
        }
        if name == "StartDiscovery" || name == "StopDiscovery" {
          let discovering = name == "StartDiscovery"
          state.properties.withLock {
            $0[path]?["org.bluez.Adapter1"]?["Discovering"] = .bool(discovering)
          }
          try await connection.emitPropertiesChanged(
            path: try DBusObjectPath(path), interface: "org.bluez.Adapter1",
            changed: ["Discovering": .bool(discovering)])
        }
        return []
      }
    }
    var dbusProperties = properties.keys.sorted().map { name in
      DBusProperty(name, signature: properties[name]!.signature) {
        state.properties.withLock { $0[path]?["org.bluez.Adapter1"]?[name] } ?? .bool(false)
      }
    }
    dbusProperties.removeAll { $0.name == "Powered" }
    dbusProperties.append(
      DBusProperty(
        "Powered", signature: "b",
        get: {
          state.properties.withLock { $0[path]?["org.bluez.Adapter1"]?["Powered"] } ?? .bool(false)
        },
        set: { value in
          state.calls.withLock {
            $0.append(Call(path: path, member: "Set Powered", arguments: [value]))
          }
          if let error = state.failures.withLock({ $0.removeValue(forKey: "Set Powered") }) {
            throw error
          }
          state.properties.withLock { $0[path]?["org.bluez.Adapter1"]?["Powered"] = value }
          if value == .bool(false) {
            state.properties.withLock {
              $0[path]?["org.bluez.Adapter1"]?["Discovering"] = .bool(false)
            }
            try await connection.emitPropertiesChanged(
              path: try DBusObjectPath(path), interface: "org.bluez.Adapter1",
              changed: ["Discovering": .bool(false)])
          }
        }))
    let interface = DBusInterface(
      "org.bluez.Adapter1",
      methods: [
        adapterMethod("StartDiscovery"), adapterMethod("StopDiscovery"),
        adapterMethod("SetDiscoveryFilter", in: "a{sv}"), adapterMethod("RemoveDevice", in: "o"),
      ],
      properties: dbusProperties)
    try await connection.export(
      DBusExportedObject(interfaces: [interface] + peripheralManagers(adapter: path)),
      at: try DBusObjectPath(path))
  }

  /// Exports a device at `<adapter>/dev_<address>` (or `path`) with these Device1 properties
  /// (their D-Bus types are taken from the values, so tests can send wrong types).
  @discardableResult
  func addDevice(
    _ address: String, adapter: String = "hci0", path: String? = nil,
    properties extra: [String: DBusValue] = [:], includeAddress: Bool = true
  ) async throws -> String {
    let path =
      path ?? "/org/bluez/\(adapter)/dev_" + address.split(separator: ":").joined(separator: "_")
    var properties: [String: DBusValue] = [
      "AddressType": .string("public"), "Connected": .bool(false),
      "ServicesResolved": .bool(false),
      "Adapter": .objectPath(try DBusObjectPath("/org/bluez/" + adapter)),
    ]
    if includeAddress { properties["Address"] = .string(address) }
    for (key, value) in extra { properties[key] = value }
    state.properties.withLock { $0[path] = ["org.bluez.Device1": properties] }
    let methods = [
      method("Connect", at: path) { [self] _ in
        try await connectCall(path)
        return []
      },
      method("Disconnect", at: path) { [self] _ in
        try await disconnectCall(path)
        return []
      },
    ]
    try await connection.export(
      DBusExportedObject(interfaces: [
        DBusInterface(
          "org.bluez.Device1", methods: methods,
          properties: exportedProperties(path, "org.bluez.Device1", properties))
      ]), at: try DBusObjectPath(path))
    return path
  }

  /// `Device1.Connect`: hangs when told to (answering `le-connection-abort-by-local` once a
  /// `Disconnect` cancels it), else sets `Connected`.
  private func connectCall(_ path: String) async throws {
    if state.hanging.withLock({ $0.contains("Connect") }) {
      let deadline = ContinuousClock.now + .seconds(10)
      while ContinuousClock.now < deadline, !state.cancelled.withLock({ $0.contains(path) }) {
        try await Task.sleep(for: .milliseconds(10))
      }
      throw DBusError(name: "org.bluez.Error.Failed", message: "le-connection-abort-by-local")
    }
    try await change(path, "org.bluez.Device1", ["Connected": .bool(true)])
  }

  /// `Device1.Disconnect`: cancels a hanging `Connect`; `NotConnected` when not connected.
  private func disconnectCall(_ path: String) async throws {
    if state.hanging.withLock({ $0.contains("Connect") }) {
      _ = state.cancelled.withLock { $0.insert(path) }
      return
    }
    let connected = state.properties.withLock { $0[path]?["org.bluez.Device1"]?["Connected"] }
    guard connected == .bool(true) else {
      throw DBusError(name: "org.bluez.Error.NotConnected", message: "Not Connected")
    }
    try await change(
      path, "org.bluez.Device1", ["Connected": .bool(false), "ServicesResolved": .bool(false)])
  }

  /// Changes properties of an object and emits `PropertiesChanged`.
  func change(_ path: String, _ interface: String, _ changed: [String: DBusValue]) async throws {
    state.properties.withLock {
      for (key, value) in changed { $0[path]?[interface]?[key] = value }
    }
    try await connection.emitPropertiesChanged(
      path: try DBusObjectPath(path), interface: interface, changed: changed)
  }

  /// Removes an object (`InterfacesRemoved`).
  func remove(_ path: String) async throws {
    state.properties.withLock { $0[path] = nil }
    try await connection.unexport(at: try DBusObjectPath(path))
  }

  /// Stops being bluetoothd: closes the connection, so `org.bluez` loses its owner.
  func stop() async {
    await connection.close()
  }
}

/// Collects a stream's elements so tests can wait for one that matches.
final class Recorder<Element: Sendable>: Sendable {
  private final class Storage: Sendable {
    let items = Mutex<[Element]>([])
  }

  private let storage = Storage()
  private let cursor = Mutex(0)
  private let task: Task<Void, Never>

  init(_ stream: AsyncStream<Element>) {
    let storage = self.storage
    task = Task {
      for await item in stream { storage.items.withLock { $0.append(item) } }
    }
  }

  deinit { task.cancel() }

  var all: [Element] { storage.items.withLock { $0 } }

  /// Waits for the next element after the previous match that satisfies `predicate`.
  @discardableResult
  func next(
    timeout: Duration = .seconds(10), _ what: String = "event",
    where predicate: (Element) -> Bool
  ) async throws -> Element {
    let deadline = ContinuousClock.now + timeout
    while true {
      let start = cursor.withLock { $0 }
      let snapshot = storage.items.withLock { $0 }
      if start < snapshot.count,
        let index = snapshot[start...].firstIndex(where: predicate)
      {
        cursor.withLock { $0 = index + 1 }
        return snapshot[index]
      }
      guard ContinuousClock.now < deadline else {
        throw HarnessError("no \(what) within \(timeout); got \(snapshot[start...])")
      }
      try await Task.sleep(for: .milliseconds(10))
    }
  }
}
