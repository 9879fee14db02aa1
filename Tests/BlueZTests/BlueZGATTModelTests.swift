import BridgeCore
import BusTestSupport
import DBus
import Testing

@testable import BlueZ

/// The object model's mirror of remote GATT objects, fed literal signals.
@Suite("BlueZ object model: GATT objects")
struct BlueZGATTModelTests {
  typealias Model = BlueZObjectModelTests
  static let start = ContinuousClock.now
  static let device = Model.devicePath(1)
  static let address = Model.address(1)
  static let battery = BluetoothUUID(uuid16: 0x180F)
  static let level = BluetoothUUID(uuid16: 0x2A19)

  static func path(_ text: String) -> DBusObjectPath {
    try! DBusObjectPath(device.rawValue + text)
  }

  static func service(_ uuid: UInt16, primary: Bool = true) -> [String: [String: DBusValue]] {
    [
      BlueZNames.gattService: [
        "UUID": .string(BluetoothUUID(uuid16: uuid).longForm), "Primary": .bool(primary),
      ]
    ]
  }

  static func characteristic(
    _ uuid: UInt16, flags: [String] = ["read", "notify"], mtu: UInt16? = nil,
    notifying: Bool = false
  ) -> [String: [String: DBusValue]] {
    var properties: [String: DBusValue] = [
      "UUID": .string(BluetoothUUID(uuid16: uuid).longForm), "Flags": .strings(flags),
      "Notifying": .bool(notifying), "Value": .bytes([]),
    ]
    if let mtu { properties["MTU"] = .uint16(mtu) }
    return [BlueZNames.gattCharacteristic: properties]
  }

  static func descriptor(_ uuid: UInt16) -> [String: [String: DBusValue]] {
    [BlueZNames.gattDescriptor: ["UUID": .string(BluetoothUUID(uuid16: uuid).longForm)]]
  }

  static func removed(_ path: DBusObjectPath, _ names: [String]) -> DBusSignal {
    Model.signal(
      .root, BlueZNames.objectManager, "InterfacesRemoved", [.objectPath(path), .strings(names)])
  }

  static var id: GATTCharacteristicID {
    GATTCharacteristicID(address: address, service: battery, characteristic: level)
  }

  /// A model with one connected device and two services (handles 0x20 and 0x10, added in that
  /// order), ServicesResolved still false.
  func connected() throws -> BlueZObjectModel {
    var (model, _) = try BlueZObjectModelTests().loaded(devices: 2)
    _ = model.apply(
      Model.changed(Self.device, BlueZNames.device, ["Connected": .bool(true)]), now: Self.start)
    let objects: [(String, [String: [String: DBusValue]])] = [
      ("/service0020", Self.service(0xFFF0, primary: false)),
      ("/service0020/char0021", Self.characteristic(0xFFF1, flags: ["write"], mtu: 185)),
      ("/service0010", Self.service(0x180F)),
      ("/service0010/char0014", Self.characteristic(0x2A1A, flags: ["read"])),
      ("/service0010/char0011", Self.characteristic(0x2A19, mtu: 247)),
      ("/service0010/char0011/desc0013", Self.descriptor(0x2902)),
      ("/service0010/char0011/desc0012", Self.descriptor(0x2901)),
    ]
    for (suffix, interfaces) in objects {
      let update = model.apply(Model.added(Self.path(suffix), interfaces), now: Self.start)
      #expect(update.events.isEmpty)
    }
    #expect(model.gatt.count == 7)
    return model
  }

  static let tree = GATTTree(
    services: [
      .init(
        uuid: battery,
        characteristics: [
          .init(
            uuid: level, flags: ["read", "notify"],
            descriptors: [.init(uuid16: 0x2901), .init(uuid16: 0x2902)]),
          .init(uuid: .init(uuid16: 0x2A1A), flags: ["read"]),
        ]),
      .init(
        uuid: .init(uuid16: 0xFFF0), primary: false,
        characteristics: [.init(uuid: .init(uuid16: 0xFFF1), flags: ["write"])]),
    ], mtu: 247)

  @Test("ServicesResolved → the tree in handle (path) order, with the largest MTU")
  func resolvedTree() throws {
    var model = try connected()
    let update = model.apply(
      Model.changed(Self.device, BlueZNames.device, ["ServicesResolved": .bool(true)]),
      now: Self.start)
    #expect(update.events == [.servicesResolved(Self.address, Self.tree)])
    // Only the change to true reports it.
    let again = model.apply(
      Model.changed(Self.device, BlueZNames.device, ["ServicesResolved": .bool(true)]),
      now: Self.start)
    #expect(again.events.isEmpty)
  }

  @Test("ServicesResolved without Connected (bluetoothd 5.66 in the lab) still means a link")
  func resolvedWithoutConnected() throws {
    var (model, _) = try BlueZObjectModelTests().loaded(devices: 2)
    let update = model.apply(
      Model.changed(Self.device, BlueZNames.device, ["ServicesResolved": .bool(true)]),
      now: Self.start)
    #expect(update.events.count == 2)
    #expect(update.events.first == .connectionChanged(Self.address, connected: true))
    if case .servicesResolved(let address, _) = update.events.last {
      #expect(address == Self.address)
    } else {
      Issue.record("no servicesResolved: \(update.events)")
    }
  }

  @Test("a returned Connect() marks the link up once when bluetoothd did not say so")
  func markConnected() throws {
    var (model, _) = try BlueZObjectModelTests().loaded(devices: 2)
    #expect(model.markConnected(Self.device) == [.connectionChanged(Self.address, connected: true)])
    #expect(model.markConnected(Self.device).isEmpty)
  }

  @Test("a snapshot reports a connected, resolved device's tree right after it appears")
  func snapshot() throws {
    var model = BlueZObjectModel(maxDevices: 10)
    var objects: [(DBusObjectPath, [String: [String: DBusValue]])] = [
      (Model.adapterPath, [BlueZNames.adapter: Model.adapterProperties]),
      (
        Self.device,
        [
          BlueZNames.device: [
            "Address": .string(Self.address.description), "Connected": .bool(true),
            "ServicesResolved": .bool(true),
          ]
        ]
      ),
      (Self.path("/service0010/char0011"), Self.characteristic(0x2A19, mtu: 23)),
      (Self.path("/service0010"), Self.service(0x180F)),
      // Below no known adapter: ignored.
      ("/org/bluez/hci9/dev_00_00_00_00_00_09/service0001", Self.service(0x1800)),
    ]
    objects.append(
      (
        Model.devicePath(2),
        [BlueZNames.device: ["Address": .string(Model.address(2).description)]]
      ))
    let events = try model.load(Model.snapshot(objects), now: Self.start)
    let tree = GATTTree(
      services: [
        .init(
          uuid: Self.battery, characteristics: [.init(uuid: Self.level, flags: ["read", "notify"])])
      ],
      mtu: 23)
    #expect(events.count == 4)
    #expect(events[1] == .deviceAppeared(Advertisement(address: Self.address)))
    #expect(events[2] == .servicesResolved(Self.address, tree))
    #expect(model.gatt.count == 2)
  }

  @Test("Value while Notifying → notifications in order; without Notifying → nothing")
  func notifications() throws {
    var model = try connected()
    let characteristic = Self.path("/service0010/char0011")
    func value(_ bytes: [UInt8]) -> [CentralEvent] {
      model.apply(
        Model.changed(characteristic, BlueZNames.gattCharacteristic, ["Value": .bytes(bytes)]),
        now: Self.start
      ).events
    }
    #expect(value([1]).isEmpty, "a read's Value update is no notification")

    var update = model.apply(
      Model.changed(characteristic, BlueZNames.gattCharacteristic, ["Notifying": .bool(true)]),
      now: Self.start)
    #expect(update.events == [.notifyingChanged(Self.id, true)])
    var received: [CentralEvent] = []
    for n in 0..<200 { received += value([UInt8(n), UInt8(255 - n)]) }
    #expect(received == (0..<200).map { .notification(Self.id, [UInt8($0), UInt8(255 - $0)]) })

    // Both in one signal: the Notifying change comes first.
    update = model.apply(
      Model.changed(
        characteristic, BlueZNames.gattCharacteristic,
        ["Notifying": .bool(false), "Value": .bytes([9])]),
      now: Self.start)
    #expect(update.events == [.notifyingChanged(Self.id, false)])
    #expect(value([2]).isEmpty)

    // A Value that is not ay is counted, never fatal.
    let before = model.malformed
    _ = model.apply(
      Model.changed(characteristic, BlueZNames.gattCharacteristic, ["Value": .string("x")]),
      now: Self.start)
    #expect(model.malformed == before + 1)
    // Unknown characteristics are ignored.
    let unknown = model.apply(
      Model.changed(
        Self.path("/service0099/char009a"), BlueZNames.gattCharacteristic,
        ["Notifying": .bool(true)]), now: Self.start)
    #expect(unknown.events.isEmpty)
  }

  @Test(
    "InterfacesRemoved: a notifying characteristic reports notifying off; services take children")
  func removal() throws {
    var model = try connected()
    let characteristic = Self.path("/service0010/char0011")
    _ = model.apply(
      Model.changed(characteristic, BlueZNames.gattCharacteristic, ["Notifying": .bool(true)]),
      now: Self.start)
    var update = model.apply(
      Self.removed(Self.path("/service0010/char0011/desc0012"), [BlueZNames.gattDescriptor]),
      now: Self.start)
    #expect(update.events.isEmpty && model.gatt.count == 6)

    // The service first (its children with it), then BlueZ's removals of the children.
    update = model.apply(
      Self.removed(Self.path("/service0010"), [BlueZNames.gattService]), now: Self.start)
    #expect(update.events == [.notifyingChanged(Self.id, false)])
    #expect(model.gatt.count == 2)
    update = model.apply(
      Self.removed(characteristic, [BlueZNames.gattCharacteristic]), now: Self.start)
    #expect(update.events.isEmpty)

    let resolved = model.apply(
      Model.changed(Self.device, BlueZNames.device, ["ServicesResolved": .bool(true)]),
      now: Self.start)
    #expect(resolved.events.count == 1)
    guard case .servicesResolved(_, let tree) = resolved.events.first else {
      Issue.record("expected servicesResolved, got \(resolved.events)")
      return
    }
    #expect(tree.services.map(\.uuid) == [BluetoothUUID(uuid16: 0xFFF0)] && tree.mtu == 185)
  }

  @Test("removing the device or the adapter, or evicting the device, forgets its GATT objects")
  func removedWithTheDevice() throws {
    var model = try connected()
    _ = model.apply(Self.removed(Self.device, [BlueZNames.device]), now: Self.start)
    #expect(model.gatt.count == 0)

    model = try connected()
    _ = model.apply(Self.removed(Model.adapterPath, [BlueZNames.adapter]), now: Self.start)
    #expect(model.gatt.count == 0)

    // Device 0 (not connected) has GATT objects; adding devices beyond the bound evicts it.
    var (bounded, _) = try BlueZObjectModelTests().loaded(devices: 1, maxDevices: 2)
    _ = bounded.apply(
      Model.added(
        try Model.devicePath(0).appending("service0001"), Self.service(0x1800)),
      now: Self.start)
    #expect(bounded.gatt.count == 1)
    for n in 1...2 {
      _ = bounded.apply(
        Model.added(
          Model.devicePath(n),
          [BlueZNames.device: ["Address": .string(Model.address(n).description)]]),
        now: Self.start + .seconds(n))
    }
    #expect(bounded.evicted >= 1 && bounded.devices[Model.devicePath(0)] == nil)
    #expect(bounded.gatt.count == 0)
  }

  @Test("malformed GATT objects and objects beyond the per-device bound are ignored and counted")
  func bounded() throws {
    var (model, _) = try BlueZObjectModelTests().loaded(devices: 2)
    _ = model.apply(
      Model.added(Self.path("/service0001"), [BlueZNames.gattService: ["UUID": .int32(1)]]),
      now: Self.start)
    _ = model.apply(
      Model.added(
        Self.path("/service0002"),
        [BlueZNames.gattService: ["UUID": .string("180f"), "Device": .string("not a path")]]),
      now: Self.start)
    #expect(model.malformed == 2 && model.gatt.count == 0)

    let limit = BlueZGATTObjects.maxObjectsPerDevice
    for n in 0...limit {
      _ = model.apply(
        Model.added(Self.path("/service\(String(n, radix: 16))"), Self.service(0x1800)),
        now: Self.start)
    }
    #expect(model.gatt.count == limit)
    #expect(model.malformed == 3)
  }

  @Test("an id means the first matching service (handle order) with that characteristic")
  func lookup() throws {
    var model = try connected()
    for (suffix, interfaces) in [
      ("/service0008", Self.service(0x180F)),
      ("/service0008/char0009", Self.characteristic(0x2A1B)),
      ("/service0030", Self.service(0x180F)),
      ("/service0030/char0031", Self.characteristic(0x2A19)),
    ] {
      _ = model.apply(Model.added(Self.path(suffix), interfaces), now: Self.start)
    }
    let device = try #require(model.device(address: Self.address))
    #expect(model.characteristic(Self.id, on: device)?.path == Self.path("/service0010/char0011"))
    let absent = GATTCharacteristicID(
      address: Self.address, service: .init(uuid16: 0xFFF0), characteristic: Self.level)
    #expect(model.characteristic(absent, on: device) == nil)
  }

  /// One D-Bus error reply to `Connect` and the code it should give (`nil`: success).
  struct ConnectCase: Sendable, CustomTestStringConvertible {
    var name: String
    var message = ""
    var code: CentralError.Code?
    var testDescription: String { "\(name) '\(message)'" }
  }

  @Test(
    "Connect failures are classified by name and by BlueZ's reason text",
    arguments: [
      ConnectCase(name: "org.bluez.Error.InProgress", code: .inProgress),
      ConnectCase(name: "org.bluez.Error.Busy", code: .inProgress),
      ConnectCase(name: "org.bluez.Error.AlreadyConnected", code: nil),
      ConnectCase(
        name: "org.bluez.Error.Failed", message: "le-connection-already-connected", code: nil),
      ConnectCase(
        name: "org.bluez.Error.Failed", message: "le-connection-abort-by-local", code: .aborted),
      ConnectCase(
        name: "org.bluez.Error.Failed", message: "Software caused connection abort",
        code: .aborted),
      ConnectCase(name: "org.bluez.Error.Failed", message: "Connection refused", code: .aborted),
      ConnectCase(name: "org.bluez.Error.Failed", message: "Connection timed out", code: .timeout),
      ConnectCase(name: "org.bluez.Error.Failed", message: "le-connection-timeout", code: .timeout),
      ConnectCase(
        name: "org.bluez.Error.Failed", message: "Connection Limit Exceeded", code: .outOfSlots),
      ConnectCase(name: "org.bluez.Error.Failed", message: "No free slots", code: .outOfSlots),
      ConnectCase(name: "org.bluez.Error.Failed", message: "le-connection-busy", code: .inProgress),
      ConnectCase(name: "org.bluez.Error.Failed", message: "Input/output error", code: .bluezError),
      ConnectCase(name: "org.bluez.Error.DoesNotExist", code: .notFound),
      ConnectCase(name: "org.freedesktop.DBus.Error.UnknownObject", code: .notFound),
      ConnectCase(name: "org.freedesktop.DBus.Error.NoReply", code: .timeout),
      ConnectCase(name: "org.bluez.Error.NotReady", code: .poweredOff),
      ConnectCase(name: "org.bluez.Error.NotConnected", code: .notConnected),
      ConnectCase(name: "org.bluez.Error.NotAuthorized", code: .notPermitted),
    ])
  func connectFailures(_ example: ConnectCase) {
    let error = CentralError.connectFailure(
      DBusError(name: example.name, message: example.message))
    #expect(error?.code == example.code)
    if let error { #expect(error.detail == example.name) }
  }

  @Test("GATT failures: Failed \"Not connected\" is not_connected, the rest as any BlueZ error")
  func gattFailures() {
    let failed = CentralError.gattFailure(
      DBusError(name: "org.bluez.Error.Failed", message: "Not connected"), operation: "ReadValue")
    #expect(failed.code == .notConnected && failed.message == "ReadValue: Not connected")
    let other = CentralError.gattFailure(
      DBusError(name: "org.bluez.Error.Failed", message: "Operation failed with ATT error: 0x0e"),
      operation: "WriteValue")
    #expect(other.code == .bluezError && other.detail == "org.bluez.Error.Failed")
  }

  @Test("call timeouts from seconds are clamped to 1 ms … 1 day")
  func durations() {
    #expect(BlueZCentral.duration(2.5) == .milliseconds(2500))
    #expect(BlueZCentral.duration(-1) == .milliseconds(1))
    #expect(BlueZCentral.duration(.nan) == .seconds(86_400))
    #expect(BlueZCentral.duration(.infinity) == .seconds(86_400))
  }
}
