import BlueZ
import BridgeCore
import BusTestSupport
import DBus
import Logging
import Testing

/// The peripheral role against a private dbus-daemon, with the test playing bluetoothd
/// (``FakeBlueZ``, `FakeBlueZ+Peripheral.swift`): registration, the exported tree, reads,
/// notifications, and recovery.
@Suite(
  "BlueZPeripheral on a private bus",
  .enabled(if: PrivateBus.isAvailable, "dbus-daemon is not installed (apt-get install dbus)"),
  .timeLimit(.minutes(1)))
struct BlueZPeripheralTests {
  static let central = "11:22:33:44:55:66"
  static let stranger = "66:55:44:33:22:11"
  static let characteristicInterface = "org.bluez.GattCharacteristic1"

  static let definition = PeripheralService(
    writeCharacteristic: BluetoothUUID(uuid16: 0x2A3D), localName: "gw1")

  /// A running peripheral on `bus`, its event recorder, and a cancel handle.
  static func peripheral(_ bus: PrivateBus) -> (
    BlueZPeripheral, Recorder<PeripheralEvent>, Task<Void, Never>
  ) {
    var logger = Logger(label: "test.bluez.peripheral")
    logger.logLevel = .critical
    let peripheral = BlueZPeripheral(
      configuration: BlueZPeripheralConfiguration(
        bus: BlueZSessionConfiguration(
          busAddress: bus.address, callTimeout: .seconds(5), reconnectDelay: .milliseconds(100)),
        retryDelay: .milliseconds(100), maxRetryDelay: .milliseconds(400)),
      logger: logger)
    let recorder = Recorder(peripheral.peripheralEvents())
    let task = Task { await peripheral.run() }
    return (peripheral, recorder, task)
  }

  static func isState(_ state: PeripheralState) -> (PeripheralEvent) -> Bool {
    { $0 == .stateChanged(state) }
  }

  static func isUnavailable(_ containing: String) -> (PeripheralEvent) -> Bool {
    { event in
      if case .stateChanged(.unavailable(let reason)) = event { return reason.contains(containing) }
      return false
    }
  }

  /// Waits until `condition` holds.
  static func eventually(
    _ what: String, timeout: Duration = .seconds(10), _ condition: () async throws -> Bool
  ) async throws {
    let deadline = ContinuousClock.now + timeout
    while try await !condition() {
      guard ContinuousClock.now < deadline else { throw HarnessError("never: \(what)") }
      try await Task.sleep(for: .milliseconds(10))
    }
  }

  /// Starts a fake bluetoothd and a peripheral, and waits until it advertises `definition`.
  static func advertising(
    _ bus: PrivateBus, _ definition: PeripheralService = Self.definition
  ) async throws -> (FakeBlueZ, BlueZPeripheral, Recorder<PeripheralEvent>, Task<Void, Never>) {
    let fake = try await FakeBlueZ.start(on: bus)
    let (peripheral, events, task) = Self.peripheral(bus)
    try await peripheral.startPeripheral(definition)
    try await events.next("advertising", where: Self.isState(.advertising))
    return (fake, peripheral, events, task)
  }

  /// The (un)registration calls the fake received, in order.
  static func registrationSteps(_ fake: FakeBlueZ) -> [String] {
    fake.calls.map(\.member).filter { $0.hasSuffix("Application") || $0.hasSuffix("Advertisement") }
  }

  static func characteristicPath(
    _ fake: FakeBlueZ, _ uuid: BluetoothUUID = GATTBridge.defaultTransferCharacteristic
  ) throws -> String {
    try #require(try fake.application().path(of: characteristicInterface, uuid: uuid.longForm))
  }

  @Test("registers the application, then the advertisement, once started and not before")
  func registersAfterStart() async throws {
    try await PrivateBus.with { bus in
      let fake = try await FakeBlueZ.start(on: bus)
      let (peripheral, events, task) = Self.peripheral(bus)
      defer { task.cancel() }
      try await Task.sleep(for: .milliseconds(300))
      #expect(fake.calls("RegisterApplication").isEmpty)

      try await peripheral.startPeripheral(Self.definition)
      try await events.next("advertising", where: Self.isState(.advertising))
      let registrations = fake.calls.map(\.member).filter { $0.hasPrefix("Register") }
      #expect(registrations == ["RegisterApplication", "RegisterAdvertisement"])
      #expect(fake.calls("RegisterApplication").first?.path == "/org/bluez/hci0")
      let application = try fake.application()
      #expect(application.path == "/org/gatt2mqtt/app")
      #expect(fake.advertisements.map(\.path) == ["/org/gatt2mqtt/advertisement0"])
      let statistics = await peripheral.statistics
      #expect(statistics.registered)
      #expect(statistics.applicationRegistrations == 1)
      #expect(statistics.advertisementRegistrations == 1)
      #expect(await peripheral.currentState == .advertising)
    }
  }

  @Test(
    "the exported tree carries the UUIDs, the flags and NotifyAcquired (the notification socket)")
  func exportedTree() async throws {
    try await PrivateBus.with { bus in
      let (fake, _, _, task) = try await Self.advertising(bus)
      defer { task.cancel() }
      let application = try fake.application()
      let service = try #require(
        application.path(
          of: "org.bluez.GattService1", uuid: GATTBridge.defaultTransferService.longForm))
      #expect(
        application.objects[service]?["org.bluez.GattService1"]
          == [
            "UUID": .string("e20a39f4-73f5-4bc4-a12f-17d1ad07a961"), "Primary": .bool(true),
          ])
      let transfer = try Self.characteristicPath(fake)
      #expect(
        application.objects[transfer]?[Self.characteristicInterface]
          == [
            "UUID": .string("08590f7e-db05-467e-8757-72f6faeb13d4"),
            "Service": .objectPath(try DBusObjectPath(service)),
            "Flags": .strings(["read", "notify"]),
            "NotifyAcquired": .bool(false),
          ])
      let writable = try Self.characteristicPath(fake, BluetoothUUID(uuid16: 0x2A3D))
      #expect(
        application.objects[writable]?[Self.characteristicInterface]?["Flags"]
          == .strings(["write", "write-without-response"]))
      #expect(application.objects.count == 3)

      let advertisement = try #require(fake.advertisements.first)
      #expect(
        advertisement.properties
          == [
            "Type": .string("peripheral"),
            "ServiceUUIDs": .strings(["e20a39f4-73f5-4bc4-a12f-17d1ad07a961"]),
            "LocalName": .string("gw1"),
          ])
    }
  }

  @Test("requireEncryption exports encrypt-read, encrypt-notify and encrypt-write")
  func encryptionFlags() async throws {
    try await PrivateBus.with { bus in
      var definition = Self.definition
      definition.requireEncryption = true
      let (fake, _, _, task) = try await Self.advertising(bus, definition)
      defer { task.cancel() }
      let application = try fake.application()
      let transfer = try Self.characteristicPath(fake)
      let writable = try Self.characteristicPath(fake, BluetoothUUID(uuid16: 0x2A3D))
      #expect(
        application.objects[transfer]?[Self.characteristicInterface]?["Flags"]
          == .strings(["encrypt-read", "encrypt-notify"]))
      #expect(
        application.objects[writable]?[Self.characteristicInterface]?["Flags"]
          == .strings(["encrypt-write", "write-without-response"]))
    }
  }

  @Test(
    "ReadValue serves the value from the offset, InvalidOffset past the end, and learns the MTU")
  func readsWithOffsets() async throws {
    try await PrivateBus.with { bus in
      let (fake, peripheral, events, task) = try await Self.advertising(bus)
      defer { task.cancel() }
      await peripheral.setReadValue(Array("hello world".utf8))
      let path = try Self.characteristicPath(fake)
      func read(_ offset: UInt16?, mtu: UInt16? = 185) async throws -> [UInt8]? {
        let reply = try await fake.callApplication(
          path, "ReadValue",
          [try FakeBlueZ.options(central: Self.central, mtu: mtu, offset: offset)])
        return reply.first?.bytesValue
      }
      #expect(try await read(nil) == Array("hello world".utf8))
      let central = try BluetoothAddress(Self.central)
      try await events.next("mtu") { $0 == .mtu(central: central, mtu: 185) }
      #expect(try await read(6) == Array("world".utf8))
      #expect(try await read(11) == [])
      let error = await #expect(throws: DBusError.self) { try await read(12) }
      #expect(error?.name == "org.bluez.Error.InvalidOffset")

      // The same MTU is reported once; a new one again.
      #expect(try await read(0, mtu: 247) == Array("hello world".utf8))
      try await events.next("new mtu") { $0 == .mtu(central: central, mtu: 247) }
      #expect(events.all.filter { if case .mtu = $0 { true } else { false } }.count == 2)

      // Only bluetoothd (the owner of org.bluez) may call.
      let other = try await bus.connect()
      let application = try fake.application()
      let refused = await #expect(throws: DBusError.self) {
        try await other.call(
          destination: application.sender, path: try DBusObjectPath(path),
          interface: Self.characteristicInterface, member: "ReadValue",
          arguments: [try FakeBlueZ.options()])
      }
      #expect(refused?.name == "org.bluez.Error.NotAuthorized")
      await other.close()
    }
  }

  @Test(
    "notify emits PropertiesChanged(Value) in order while a central is subscribed; StopNotify ends every subscription"
  )
  func notifiesInOrder() async throws {
    try await PrivateBus.with { bus in
      let fake = try await FakeBlueZ.start(on: bus)
      let (peripheral, events, task) = Self.peripheral(bus)
      defer { task.cancel() }
      let unregistered = await #expect(throws: CentralError.self) {
        try await peripheral.notify([1])
      }
      #expect(unregistered?.code == .unavailable)
      try await peripheral.startPeripheral(Self.definition)
      try await events.next("advertising", where: Self.isState(.advertising))
      let nobody = await #expect(throws: CentralError.self) { try await peripheral.notify([1]) }
      #expect(nobody?.code == .notConnected)

      let path = try Self.characteristicPath(fake)
      try await fake.callApplication(path, "StartNotify")
      try await events.next("subscribed") { $0 == .subscribed(central: nil, mtu: nil) }
      let signals = try await fake.connection.signals(
        matching: DBusMatchRule(
          interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged",
          path: try DBusObjectPath(path)))
      let received = Recorder(signals)
      for index in 0..<100 { try await peripheral.notify([UInt8(index), 0xEE]) }
      try await Self.eventually("100 notifications") { received.all.count >= 100 }
      let values = received.all.map { signal -> [UInt8]? in
        guard signal.arguments.count == 3,
          signal.arguments[0] == .string(Self.characteristicInterface),
          signal.arguments[2] == .strings([])
        else { return nil }
        return signal.arguments[1].propertyMap?["Value"]?.bytesValue
      }
      #expect(values == (0..<100).map { [UInt8($0), 0xEE] })
      #expect(await peripheral.statistics.notifications == 100)

      // A second central: BlueZ 5.66 calls StartNotify again, but StopNotify only once, when
      // the last one leaves; each subscription is matched by one unsubscribed.
      try await fake.callApplication(path, "StartNotify")
      try await events.next("second subscription") { $0 == .subscribed(central: nil, mtu: nil) }
      try await fake.callApplication(path, "StopNotify")
      try await events.next("unsubscribed") { $0 == .unsubscribed(central: nil) }
      try await events.next("unsubscribed twice") { $0 == .unsubscribed(central: nil) }
      let after = await #expect(throws: CentralError.self) { try await peripheral.notify([1]) }
      #expect(after?.code == .notConnected)
    }
  }

  @Test("after a bluetoothd restart everything is registered again")
  func reRegistersAfterRestart() async throws {
    try await PrivateBus.with { bus in
      let (fake, peripheral, events, task) = try await Self.advertising(bus)
      defer { task.cancel() }
      let path = try Self.characteristicPath(fake)
      try await fake.callApplication(path, "StartNotify")
      try await events.next("subscribed") { $0 == .subscribed(central: nil, mtu: nil) }

      try await fake.restart()
      // The subscription ended with the old stack.
      try await events.next("unsubscribed") { $0 == .unsubscribed(central: nil) }
      try await Self.eventually("registered again") {
        let registered = await peripheral.statistics.registered
        return registered && fake.calls("RegisterAdvertisement").count == 2
          && fake.advertisements.count == 1
      }
      #expect(fake.calls("RegisterApplication").count == 2)
      #expect(fake.applications.count == 1)
      // The old stack lost the registrations: nothing to unregister.
      #expect(fake.calls("UnregisterApplication").isEmpty)
      #expect(await peripheral.currentState == .advertising)
    }
  }

  @Test("an adapter powered off unregisters; powered on registers again")
  func reRegistersAfterPowerCycle() async throws {
    try await PrivateBus.with { bus in
      let (fake, peripheral, events, task) = try await Self.advertising(bus)
      defer { task.cancel() }
      try await fake.change("/org/bluez/hci0", "org.bluez.Adapter1", ["Powered": .bool(false)])
      try await events.next("unavailable", where: Self.isUnavailable("no powered"))
      #expect(fake.calls("UnregisterAdvertisement").count == 1)
      #expect(fake.calls("UnregisterApplication").count == 1)
      #expect(fake.applications.isEmpty && fake.advertisements.isEmpty)

      try await fake.change("/org/bluez/hci0", "org.bluez.Adapter1", ["Powered": .bool(true)])
      try await events.next("advertising", where: Self.isState(.advertising))
      #expect(fake.calls("RegisterApplication").count == 2)
      #expect(fake.calls("RegisterAdvertisement").count == 2)
      #expect(fake.applications.count == 1 && fake.advertisements.count == 1)
      #expect(await peripheral.statistics.registered)
    }
  }

  @Test("AlreadyExists: the registration is undone and retried after a delay")
  func alreadyExistsIsRetried() async throws {
    try await PrivateBus.with { bus in
      let fake = try await FakeBlueZ.start(on: bus)
      fake.fail("RegisterApplication", with: "org.bluez.Error.AlreadyExists")
      let (peripheral, events, task) = Self.peripheral(bus)
      defer { task.cancel() }
      try await peripheral.startPeripheral(Self.definition)
      try await events.next("refused", where: Self.isUnavailable("AlreadyExists"))
      try await events.next("advertising", where: Self.isState(.advertising))
      let steps = Self.registrationSteps(fake)
      #expect(
        steps == [
          "RegisterApplication", "UnregisterApplication", "RegisterApplication",
          "RegisterAdvertisement",
        ])
      #expect(await peripheral.statistics.failedRegistrations == 1)
    }
  }

  @Test("a refused advertisement undoes the application too, then both are retried")
  func refusedAdvertisementIsRetried() async throws {
    try await PrivateBus.with { bus in
      let fake = try await FakeBlueZ.start(on: bus)
      fake.fail(
        "RegisterAdvertisement", with: "org.bluez.Error.Failed",
        message: "Failed to register advertisement")
      let (peripheral, events, task) = Self.peripheral(bus)
      defer { task.cancel() }
      try await peripheral.startPeripheral(Self.definition)
      try await events.next(
        "refused", where: Self.isUnavailable("Failed to register advertisement"))
      try await events.next("advertising", where: Self.isState(.advertising))
      let steps = Self.registrationSteps(fake)
      #expect(
        steps == [
          "RegisterApplication", "RegisterAdvertisement", "UnregisterApplication",
          "RegisterApplication", "RegisterAdvertisement",
        ])
      #expect(fake.applications.count == 1 && fake.advertisements.count == 1)
      #expect(await peripheral.statistics.registered)
    }
  }

  @Test("stopPeripheral unregisters both and unexports the objects")
  func stopUnregisters() async throws {
    try await PrivateBus.with { bus in
      let (fake, peripheral, events, task) = try await Self.advertising(bus)
      defer { task.cancel() }
      let sender = try fake.application().sender
      await peripheral.stopPeripheral()
      try await events.next("stopped", where: Self.isState(.stopped))
      #expect(fake.calls("UnregisterAdvertisement").count == 1)
      #expect(fake.calls("UnregisterApplication").count == 1)
      #expect(fake.applications.isEmpty && fake.advertisements.isEmpty)
      let managed = try await fake.connection.call(
        destination: sender, path: "/org/gatt2mqtt/app",
        interface: "org.freedesktop.DBus.ObjectManager", member: "GetManagedObjects")
      guard case .dictionary(_, _, let entries)? = managed.first else {
        Issue.record("GetManagedObjects replied \(managed)")
        return
      }
      #expect(entries.isEmpty)
      let gone = await #expect(throws: DBusError.self) {
        try await fake.connection.call(
          destination: sender, path: "/org/gatt2mqtt/advertisement0",
          interface: "org.freedesktop.DBus.Properties", member: "GetAll",
          arguments: [.string("org.bluez.LEAdvertisement1")])
      }
      #expect(gone?.code == .unknownObject)
      let registered = await peripheral.statistics.registered
      #expect(!registered)
      let error = await #expect(throws: CentralError.self) { try await peripheral.notify([1]) }
      #expect(error?.code == .unavailable)
    }
  }

  @Test("Release from bluetoothd registers the advertisement again")
  func releaseReRegisters() async throws {
    try await PrivateBus.with { bus in
      let (fake, peripheral, _, task) = try await Self.advertising(bus)
      defer { task.cancel() }
      try await fake.releaseAdvertisements()
      try await Self.eventually("advertisement registered again") {
        let registered = await peripheral.statistics.registered
        return registered && fake.calls("RegisterAdvertisement").count == 2
          && fake.advertisements.count == 1
      }
      #expect(fake.calls("RegisterApplication").count == 1)
      let statistics = await peripheral.statistics
      #expect(statistics.releases == 1 && statistics.registered)
    }
  }

  @Test("a local name that does not fit 31 bytes is left out of the advertisement")
  func dropsLongName() async throws {
    try await PrivateBus.with { bus in
      var definition = Self.definition
      definition.localName = "gatt2mqtt-gateway"
      let (fake, peripheral, _, task) = try await Self.advertising(bus, definition)
      defer { task.cancel() }
      let advertisement = try #require(fake.advertisements.first)
      #expect(advertisement.properties["LocalName"] == nil)
      #expect(advertisement.properties["ServiceUUIDs"] != nil)
      let statistics = await peripheral.statistics
      #expect(statistics.droppedLocalName == "gatt2mqtt-gateway")
      #expect(statistics.advertisedLocalName == nil)
    }
  }

  @Test("the allow-list refuses other centrals' reads and writes with NotAuthorized")
  func allowList() async throws {
    try await PrivateBus.with { bus in
      var definition = Self.definition
      definition.allowedCentrals = [try BluetoothAddress(Self.central)]
      let (fake, peripheral, events, task) = try await Self.advertising(bus, definition)
      defer { task.cancel() }
      await peripheral.setReadValue([1, 2, 3])
      let transfer = try Self.characteristicPath(fake)
      let writable = try Self.characteristicPath(fake, BluetoothUUID(uuid16: 0x2A3D))

      let read = try await fake.callApplication(
        transfer, "ReadValue", [try FakeBlueZ.options(central: Self.central, mtu: 23)])
      #expect(read.first?.bytesValue == [1, 2, 3])
      let refused = await #expect(throws: DBusError.self) {
        try await fake.callApplication(
          transfer, "ReadValue", [try FakeBlueZ.options(central: Self.stranger, mtu: 23)])
      }
      #expect(refused?.name == "org.bluez.Error.NotAuthorized")
      let stranger = try BluetoothAddress(Self.stranger)
      try await events.next("refused") { $0 == .refused(central: stranger) }
      let anonymous = await #expect(throws: DBusError.self) {
        try await fake.callApplication(transfer, "ReadValue", [try FakeBlueZ.options()])
      }
      #expect(anonymous?.name == "org.bluez.Error.NotAuthorized")

      let refusedWrite = await #expect(throws: DBusError.self) {
        try await fake.callApplication(
          writable, "WriteValue", [.bytes([9]), try FakeBlueZ.options(central: Self.stranger)])
      }
      #expect(refusedWrite?.name == "org.bluez.Error.NotAuthorized")
      try await fake.callApplication(
        writable, "WriteValue", [.bytes([7, 8]), try FakeBlueZ.options(central: Self.central)])
      let central = try BluetoothAddress(Self.central)
      try await events.next("written") { $0 == .written(central: central, value: [7, 8]) }
      let longWrite = await #expect(throws: DBusError.self) {
        try await fake.callApplication(
          writable, "WriteValue",
          [.bytes([7]), try FakeBlueZ.options(central: Self.central, offset: 4)])
      }
      #expect(longWrite?.name == "org.bluez.Error.NotSupported")
      #expect(!events.all.contains(.refused(central: central)))
      #expect(await peripheral.statistics.refused == 3)

      // Widening the allow-list applies without registering again.
      definition.allowedCentrals = []
      try await peripheral.startPeripheral(definition)
      try await Self.eventually("stranger served") {
        let reply = try? await fake.callApplication(
          transfer, "ReadValue", [try FakeBlueZ.options(central: Self.stranger)])
        return reply?.first?.bytesValue == [1, 2, 3]
      }
      #expect(fake.calls("RegisterApplication").count == 1)
    }
  }

  @Test("waits for bluetoothd and for the requested adapter, then registers on it")
  func waitsForStackAndAdapter() async throws {
    try await PrivateBus.with { bus in
      let (peripheral, events, task) = Self.peripheral(bus)
      defer { task.cancel() }
      var definition = Self.definition
      definition.adapter = "hci1"
      try await peripheral.startPeripheral(definition)
      try await events.next("no bluetoothd", where: Self.isUnavailable("not running"))

      let fake = try await FakeBlueZ.start(on: bus)
      try await events.next("no hci1", where: Self.isUnavailable("hci1 is not present"))
      try await fake.addAdapter("hci1", address: "00:1A:7D:DA:71:20", powered: false)
      try await events.next("hci1 off", where: Self.isUnavailable("hci1 is powered off"))
      try await fake.change("/org/bluez/hci1", "org.bluez.Adapter1", ["Powered": .bool(true)])
      try await events.next("advertising", where: Self.isState(.advertising))
      #expect(fake.calls("RegisterApplication").map(\.path) == ["/org/bluez/hci1"])
      #expect(fake.advertisements.map(\.adapter) == ["/org/bluez/hci1"])
    }
  }

  @Test("a definition BlueZ would refuse for good is rejected at once")
  func rejectsBadDefinitions() async throws {
    var logger = Logger(label: "test.bluez.peripheral")
    logger.logLevel = .critical
    let peripheral = BlueZPeripheral(logger: logger)
    let uuid = BluetoothUUID(uuid16: 0x180F)
    let same = await #expect(throws: CentralError.self) {
      try await peripheral.startPeripheral(PeripheralService(service: uuid, characteristic: uuid))
    }
    #expect(same?.code == .notPermitted)
    let write = await #expect(throws: CentralError.self) {
      try await peripheral.startPeripheral(
        PeripheralService(writeCharacteristic: GATTBridge.defaultTransferCharacteristic))
    }
    #expect(write?.code == .notPermitted)
    let adapter = await #expect(throws: CentralError.self) {
      try await peripheral.startPeripheral(PeripheralService(adapter: "hci0/../x"))
    }
    #expect(adapter?.code == .unknownAdapter)
    #expect(await peripheral.currentState == .stopped)
  }
}
