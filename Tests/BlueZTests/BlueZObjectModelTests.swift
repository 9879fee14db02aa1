import BridgeCore
import BusTestSupport
import DBus
import Testing

@testable import BlueZ

@Suite("BlueZ object model")
struct BlueZObjectModelTests {
  static let start = ContinuousClock.now
  static let adapterPath: DBusObjectPath = "/org/bluez/hci0"

  static func devicePath(_ n: Int) -> DBusObjectPath {
    try! DBusObjectPath("/org/bluez/hci0/dev_00_00_00_00_00_" + String(format2(n)))
  }

  static func format2(_ n: Int) -> String {
    let digits = Array("0123456789ABCDEF")
    return String([digits[(n / 16) % 16], digits[n % 16]])
  }

  static func address(_ n: Int) -> BluetoothAddress {
    try! BluetoothAddress("00:00:00:00:00:" + format2(n))
  }

  static func interfaces(_ byInterface: [String: [String: DBusValue]]) -> DBusValue {
    .dictionary(
      key: "s", value: "a{sv}",
      byInterface.sorted { $0.key < $1.key }.map { (.string($0.key), .properties($0.value)) })
  }

  static func snapshot(_ objects: [(DBusObjectPath, [String: [String: DBusValue]])]) -> [DBusValue]
  {
    [
      .dictionary(
        key: "o", value: "a{sa{sv}}", objects.map { (.objectPath($0.0), interfaces($0.1)) })
    ]
  }

  static func signal(
    _ path: DBusObjectPath, _ interface: String, _ member: String, _ arguments: [DBusValue]
  ) -> DBusSignal {
    DBusSignal(
      sender: ":1.1", path: path, interface: interface, member: member, arguments: arguments)
  }

  static func added(_ path: DBusObjectPath, _ byInterface: [String: [String: DBusValue]])
    -> DBusSignal
  {
    signal(
      .root, BlueZNames.objectManager, "InterfacesAdded",
      [.objectPath(path), interfaces(byInterface)])
  }

  static func changed(
    _ path: DBusObjectPath, _ interface: String, _ properties: [String: DBusValue],
    invalidated: [String] = []
  ) -> DBusSignal {
    signal(
      path, BlueZNames.properties, "PropertiesChanged",
      [.string(interface), .properties(properties), .strings(invalidated)])
  }

  static let adapterProperties: [String: DBusValue] = [
    "Address": .string("00:1A:7D:DA:71:13"), "Powered": .bool(true), "Discovering": .bool(false),
  ]

  func loaded(devices: Int = 1, maxDevices: Int = 100) throws -> (BlueZObjectModel, [CentralEvent])
  {
    var model = BlueZObjectModel(maxDevices: maxDevices)
    var objects: [(DBusObjectPath, [String: [String: DBusValue]])] = [
      (Self.adapterPath, [BlueZNames.adapter: Self.adapterProperties])
    ]
    for n in 0..<devices {
      objects.append(
        (Self.devicePath(n), [BlueZNames.device: ["Address": .string(Self.address(n).description)]])
      )
    }
    let events = try model.load(Self.snapshot(objects), now: Self.start)
    return (model, events)
  }

  @Test("a snapshot reports each adapter, then each device")
  func snapshot() throws {
    let (model, events) = try loaded(devices: 2)
    #expect(events.count == 3)
    guard case .adapterChanged(let info) = events.first else {
      Issue.record("expected adapterChanged first, got \(events)")
      return
    }
    #expect(info.id == "hci0" && info.powered && !info.discovering)
    #expect(events.dropFirst().allSatisfy { if case .deviceAppeared = $0 { true } else { false } })
    #expect(model.devices.count == 2)
  }

  @Test("a reply that is not a{oa{sa{sv}}} is an error; a malformed object is skipped")
  func malformedSnapshot() throws {
    var model = BlueZObjectModel(maxDevices: 10)
    #expect(throws: BlueZObjectModel.MalformedReply.self) {
      try model.load([.string("surprise")], now: Self.start)
    }
    #expect(throws: BlueZObjectModel.MalformedReply.self) { try model.load([], now: Self.start) }
    let reply: [DBusValue] = [
      .dictionary(
        key: "o", value: "v",
        [
          (.objectPath("/org/bluez/hci0"), .variant(.int32(3))),
          (.objectPath("/org/bluez/hci1"), Self.interfaces([BlueZNames.adapter: [:]])),
        ])
    ]
    let events = try model.load(reply, now: Self.start)
    #expect(events == [.adapterChanged(AdapterInfo(id: "hci1", powered: false))])
    #expect(model.malformed == 1)
  }

  @Test("signals: added → appeared, RSSI → updated, Connected → connection, removed → removed")
  func signals() throws {
    var (model, _) = try loaded(devices: 0)
    let path = Self.devicePath(7)
    let address = Self.address(7)
    var update = model.apply(
      Self.added(
        path, [BlueZNames.device: ["Address": .string(address.description), "RSSI": .int16(-60)]]),
      now: Self.start + .seconds(1))
    #expect(update.events == [.deviceAppeared(Advertisement(address: address, rssi: -60))])
    #expect(model.lastAdvertisement[Self.adapterPath] == Self.start + .seconds(1))

    update = model.apply(
      Self.changed(path, BlueZNames.device, ["RSSI": .int16(-61)]), now: Self.start)
    #expect(update.events == [.deviceUpdated(Advertisement(address: address, rssi: -61))])

    // The same RSSI again is still a new advertisement; an Alias change alone is not.
    update = model.apply(
      Self.changed(path, BlueZNames.device, ["RSSI": .int16(-61)]), now: Self.start)
    #expect(update.events.count == 1)
    update = model.apply(
      Self.changed(path, BlueZNames.device, ["Alias": .string("x")]), now: Self.start)
    #expect(update.events.isEmpty)

    update = model.apply(
      Self.changed(path, BlueZNames.device, ["Connected": .bool(true)]), now: Self.start)
    #expect(update.events == [.connectionChanged(address, connected: true)])

    update = model.apply(
      Self.changed(path, BlueZNames.device, [:], invalidated: ["RSSI"]), now: Self.start)
    #expect(update.events == [.deviceUpdated(Advertisement(address: address))])

    update = model.apply(
      Self.signal(
        .root, BlueZNames.objectManager, "InterfacesRemoved",
        [.objectPath(path), .strings([BlueZNames.device])]), now: Self.start)
    #expect(update.events == [.deviceRemoved(address)])
    #expect(model.devices.isEmpty)
  }

  @Test("adapter changes report the full state; removing the adapter drops its devices")
  func adapterChanges() throws {
    var (model, _) = try loaded(devices: 3)
    var update = model.apply(
      Self.changed(Self.adapterPath, BlueZNames.adapter, ["Discovering": .bool(true)]),
      now: Self.start)
    guard case .adapterChanged(let info) = update.events.first else {
      Issue.record("expected adapterChanged, got \(update.events)")
      return
    }
    #expect(info.discovering && info.powered)
    update = model.apply(
      Self.changed(Self.adapterPath, BlueZNames.adapter, ["Discovering": .bool(true)]),
      now: Self.start)
    #expect(update.events.isEmpty)
    update = model.apply(
      Self.signal(
        .root, BlueZNames.objectManager, "InterfacesRemoved",
        [.objectPath(Self.adapterPath), .strings([BlueZNames.adapter])]), now: Self.start)
    #expect(update.events == [.adapterRemoved(id: "hci0")])
    #expect(model.devices.isEmpty && model.adapters.isEmpty)
  }

  /// Two gateways on two adapters of one bluetoothd (the lab's fleet hand-over): each adapter
  /// has its own object for the same address. Bound to hci0, the model must not report hci1's
  /// link as its own (the gateway then disconnected the other gateway's link).
  @Test("bound to one adapter, another adapter's object for the same address is not mirrored")
  func boundToOneAdapter() throws {
    let address = Self.address(5)
    let own: DBusObjectPath = "/org/bluez/hci0/dev_00_00_00_00_00_05"
    let foreign: DBusObjectPath = "/org/bluez/hci1/dev_00_00_00_00_00_05"
    let device: [String: DBusValue] = ["Address": .string(address.description)]
    let objects: [(DBusObjectPath, [String: [String: DBusValue]])] = [
      (Self.adapterPath, [BlueZNames.adapter: Self.adapterProperties]),
      ("/org/bluez/hci1", [BlueZNames.adapter: Self.adapterProperties]),
      (own, [BlueZNames.device: device]),
      (foreign, [BlueZNames.device: device.merging(["Connected": .bool(true)]) { $1 }]),
      (
        "/org/bluez/hci1/dev_00_00_00_00_00_05/service0001",
        [BlueZNames.gattService: ["UUID": .string("0000180d-0000-1000-8000-00805f9b34fb")]]
      ),
    ]
    var bound = BlueZObjectModel(maxDevices: 10, adapter: "hci0")
    let events = try bound.load(Self.snapshot(objects), now: Self.start)
    #expect(bound.devices.keys.sorted() == [own])
    #expect(bound.device(address: address)?.connected == false)
    #expect(bound.adapters.count == 2)
    #expect(events.filter { if case .deviceAppeared = $0 { true } else { false } }.count == 1)
    // The other adapter's signals change nothing and ask for nothing.
    var update = bound.apply(
      Self.changed(foreign, BlueZNames.device, ["Connected": .bool(false)]), now: Self.start)
    #expect(update == BlueZObjectModel.Update())
    update = bound.apply(
      Self.added(
        "/org/bluez/hci1/dev_00_00_00_00_00_06",
        [BlueZNames.device: ["Address": .string(Self.address(6).description)]]),
      now: Self.start)
    #expect(update == BlueZObjectModel.Update())
    update = bound.apply(
      Self.changed(own, BlueZNames.device, ["Connected": .bool(true)]), now: Self.start)
    #expect(update.events == [.connectionChanged(address, connected: true)])

    // Unbound (no bluetooth.adapter), both objects are mirrored and the connected one wins.
    var every = BlueZObjectModel(maxDevices: 10)
    _ = try every.load(Self.snapshot(objects), now: Self.start)
    #expect(every.devices.count == 2)
    #expect(every.device(address: address)?.connected == true)
  }

  @Test("malformed signals are ignored and counted")
  func malformedSignals() throws {
    var (model, _) = try loaded(devices: 1)
    let before = model.devices
    let signals = [
      Self.signal(.root, BlueZNames.objectManager, "InterfacesAdded", [.string("x")]),
      Self.signal(
        .root, BlueZNames.objectManager, "InterfacesRemoved", [.objectPath(Self.devicePath(0))]),
      Self.signal(
        Self.devicePath(0), BlueZNames.properties, "PropertiesChanged", [.int32(1), .int32(2)]),
      Self.changed(Self.devicePath(0), BlueZNames.device, ["RSSI": .string("loud")]),
    ]
    for signal in signals { _ = model.apply(signal, now: Self.start) }
    #expect(model.malformed == 3)
    #expect(model.devices == before)
  }

  @Test("the device map is bounded: the longest-unseen unconnected devices are forgotten")
  func eviction() throws {
    var (model, _) = try loaded(devices: 0, maxDevices: 10)
    for n in 0..<10 {
      _ = model.apply(
        Self.added(
          Self.devicePath(n),
          [
            BlueZNames.device: [
              "Address": .string(Self.address(n).description), "RSSI": .int16(-50),
              "Connected": .bool(n == 0),
            ]
          ]),
        now: Self.start + .seconds(n))
    }
    #expect(model.devices.count == 10)
    // Device 1 is seen again, so 2 is now the longest unseen unconnected device.
    _ = model.apply(
      Self.changed(Self.devicePath(1), BlueZNames.device, ["RSSI": .int16(-40)]),
      now: Self.start + .seconds(20))
    let update = model.apply(
      Self.added(
        Self.devicePath(10), [BlueZNames.device: ["Address": .string(Self.address(10).description)]]
      ),
      now: Self.start + .seconds(30))
    #expect(update.events.count == 1)
    #expect(model.devices.count == 9)
    #expect(model.evicted == 2)
    #expect(model.devices[Self.devicePath(0)] != nil, "connected devices are kept")
    #expect(model.devices[Self.devicePath(1)] != nil)
    #expect(model.devices[Self.devicePath(2)] == nil && model.devices[Self.devicePath(3)] == nil)

    // An evicted device that reports again is flagged for re-learning.
    let again = model.apply(
      Self.changed(Self.devicePath(2), BlueZNames.device, ["RSSI": .int16(-70)]), now: Self.start)
    #expect(again.events.isEmpty)
    #expect(again.unknownDevice == Self.devicePath(2))
  }
}
