import BusTestSupport
import DBus

/// A GATT application registered with the fake, with the object tree it read from the
/// application's ObjectManager during `RegisterApplication` (as bluetoothd does).
struct FakeApplication: Sendable, Equatable {
  var sender: String
  var path: String
  var adapter: String
  /// Interfaces and properties by object path.
  var objects: [String: [String: [String: DBusValue]]]

  /// The path of the object with `interface` whose `UUID` is `uuid`.
  func path(of interface: String, uuid: String) -> String? {
    objects.first { $0.value[interface]?["UUID"]?.stringValue == uuid }?.key
  }
}

/// An advertisement registered with the fake, with the properties it read (`GetAll`).
struct FakeAdvertisement: Sendable, Equatable {
  var sender: String
  var path: String
  var adapter: String
  var properties: [String: DBusValue]
}

/// What the fake's `GattManager1` and `LEAdvertisingManager1` hold, by `<sender> <path>`.
struct FakePeripheralRecords: Sendable {
  var applications: [String: FakeApplication] = [:]
  var advertisements: [String: FakeAdvertisement] = [:]
}

/// The peripheral side of the fake bluetoothd: `GattManager1` and `LEAdvertisingManager1` on every
/// adapter, a restart that loses every registration, and the calls bluetoothd makes to an
/// application (`ReadValue`, `WriteValue`, `StartNotify`, `StopNotify`, `Release`).
extension FakeBlueZ {
  static let gattManager = "org.bluez.GattManager1"
  static let advertisingManager = "org.bluez.LEAdvertisingManager1"
  static let advertisementInterface = "org.bluez.LEAdvertisement1"

  /// The record key (`<sender> <path>`) and the path of a (un)registration call.
  private static func target(_ call: DBusMethodCall) throws -> (key: String, path: DBusObjectPath) {
    guard case .objectPath(let path)? = call.arguments.first else {
      throw DBusError(name: "org.bluez.Error.InvalidArguments", message: "Invalid arguments")
    }
    return (call.sender + " " + path.rawValue, path)
  }

  /// The managers exported on the adapter at `adapter`.
  func peripheralManagers(adapter: String) -> [DBusInterface] {
    let state = self.state
    let connection = self.connection
    let registerApplication = method(
      "RegisterApplication", at: adapter, in: "oa{sv}"
    ) { call in
      let (key, path) = try Self.target(call)
      if state.peripheral.withLock({ $0.applications[key] != nil }) {
        throw DBusError(name: "org.bluez.Error.AlreadyExists", message: "Already Exists")
      }
      // Like bluetoothd: read the application's objects before answering.
      let reply = try await connection.call(
        destination: call.sender, path: path, interface: "org.freedesktop.DBus.ObjectManager",
        member: "GetManagedObjects", timeout: .seconds(5))
      var objects: [String: [String: [String: DBusValue]]] = [:]
      if case .dictionary(_, _, let entries)? = reply.first {
        for (objectPath, interfaces) in entries {
          guard let objectPath = objectPath.stringValue, let byName = interfaces.propertyMap
          else { continue }
          objects[objectPath] = byName.compactMapValues { $0.propertyMap }
        }
      }
      guard !objects.isEmpty else {
        throw DBusError(name: "org.bluez.Error.Failed", message: "No object received")
      }
      state.peripheral.withLock {
        $0.applications[key] = FakeApplication(
          sender: call.sender, path: path.rawValue, adapter: adapter, objects: objects)
      }
      return []
    }
    let unregisterApplication = method("UnregisterApplication", at: adapter, in: "o") { call in
      let (key, _) = try Self.target(call)
      guard state.peripheral.withLock({ $0.applications.removeValue(forKey: key) }) != nil else {
        throw DBusError(name: "org.bluez.Error.DoesNotExist", message: "Does Not Exist")
      }
      return []
    }
    let registerAdvertisement = method(
      "RegisterAdvertisement", at: adapter, in: "oa{sv}"
    ) { call in
      let (key, path) = try Self.target(call)
      if state.peripheral.withLock({ $0.advertisements[key] != nil }) {
        throw DBusError(name: "org.bluez.Error.AlreadyExists", message: "Already Exists")
      }
      let reply = try await connection.call(
        destination: call.sender, path: path, interface: "org.freedesktop.DBus.Properties",
        member: "GetAll", arguments: [.string(Self.advertisementInterface)],
        timeout: .seconds(5))
      guard let properties = reply.first?.propertyMap, properties["Type"] != nil else {
        throw DBusError(
          name: "org.bluez.Error.Failed", message: "Failed to parse advertisement.")
      }
      state.peripheral.withLock {
        $0.advertisements[key] = FakeAdvertisement(
          sender: call.sender, path: path.rawValue, adapter: adapter, properties: properties)
      }
      return []
    }
    let unregisterAdvertisement = method("UnregisterAdvertisement", at: adapter, in: "o") {
      call in
      let (key, _) = try Self.target(call)
      guard state.peripheral.withLock({ $0.advertisements.removeValue(forKey: key) }) != nil
      else {
        throw DBusError(name: "org.bluez.Error.DoesNotExist", message: "Does Not Exist")
      }
      return []
    }
    return [
      DBusInterface(
        Self.gattManager, methods: [registerApplication, unregisterApplication]),
      DBusInterface(
        Self.advertisingManager, methods: [registerAdvertisement, unregisterAdvertisement],
        properties: [
          DBusProperty("ActiveInstances", signature: "y") {
            .byte(UInt8(state.peripheral.withLock { $0.advertisements.count }))
          },
          DBusProperty("SupportedInstances", signature: "y") { .byte(5) },
        ]),
    ]
  }

  /// The registered applications.
  var applications: [FakeApplication] {
    state.peripheral.withLock { Array($0.applications.values) }
  }

  /// The registered advertisements.
  var advertisements: [FakeAdvertisement] {
    state.peripheral.withLock { Array($0.advertisements.values) }
  }

  /// The only registered application (fails the test's wait otherwise).
  func application() throws -> FakeApplication {
    let all = applications
    guard all.count == 1 else { throw HarnessError("\(all.count) applications registered") }
    return all[0]
  }

  /// Plays a bluetoothd restart: every registration is lost, `org.bluez` loses its owner and
  /// gets it back (the same unique name, which the peer must not take for the same stack).
  func restart() async throws {
    state.peripheral.withLock { $0 = FakePeripheralRecords() }
    _ = try await connection.releaseName("org.bluez")
    guard try await connection.requestName("org.bluez") == .primaryOwner else {
      throw HarnessError("cannot own org.bluez again")
    }
  }

  /// Drops every advertisement and calls its `Release`, as bluetoothd does when it gives one up.
  func releaseAdvertisements() async throws {
    let released = state.peripheral.withLock { records in
      defer { records.advertisements = [:] }
      return Array(records.advertisements.values)
    }
    for advertisement in released {
      _ = try await connection.call(
        destination: advertisement.sender, path: try DBusObjectPath(advertisement.path),
        interface: Self.advertisementInterface, member: "Release", timeout: .seconds(5))
    }
  }

  /// Calls a method of an object of the registered application, as bluetoothd does.
  @discardableResult
  func callApplication(
    _ path: String, _ member: String, _ arguments: [DBusValue] = []
  ) async throws -> [DBusValue] {
    let application = try application()
    return try await connection.call(
      destination: application.sender, path: try DBusObjectPath(path),
      interface: Self.characteristicInterface, member: member, arguments: arguments,
      timeout: .seconds(5))
  }

  /// bluetoothd's options for a read or write of `central` (`…/dev_AA_BB_…`) with this MTU.
  static func options(
    central: String? = nil, adapter: String = "hci0", mtu: UInt16? = nil, offset: UInt16? = nil
  ) throws -> DBusValue {
    var options: [String: DBusValue] = ["link": .string("LE")]
    if let central {
      options["device"] = .objectPath(
        try DBusObjectPath(
          "/org/bluez/\(adapter)/dev_" + central.split(separator: ":").joined(separator: "_")))
    }
    if let mtu { options["mtu"] = .uint16(mtu) }
    if let offset { options["offset"] = .uint16(offset) }
    return .properties(options)
  }
}
