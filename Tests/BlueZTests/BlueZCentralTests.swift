import BlueZ
import BridgeCore
import BusTestSupport
import DBus
import Glibc
import Logging
import Synchronization
import Testing

/// The central against a private dbus-daemon, with the test playing bluetoothd (``FakeBlueZ``).
@Suite(
  "BlueZCentral on a private bus",
  .enabled(if: PrivateBus.isAvailable, "dbus-daemon is not installed (apt-get install dbus)"),
  .timeLimit(.minutes(1)))
struct BlueZCentralTests {
  static let deviceAddress = "A4:C1:38:1E:29:DF"

  /// A running central on `bus`, its event recorder, and a cancel handle.
  static func central(
    _ bus: PrivateBus, watchdog: ScannerWatchdogConfiguration = .init(enabled: false),
    scanMethod: BlueZCentralConfiguration.ScanMethod = .dbus, batchWindow: Duration = .zero,
    signalGathering: Duration = .zero, callTimeout: Duration = .seconds(5),
    startupWait: Duration = .seconds(5)
  ) -> (BlueZCentral, Recorder<CentralEvent>, Task<Void, Never>) {
    var logger = Logger(label: "test.bluez")
    logger.logLevel = .critical
    let central = BlueZCentral(
      configuration: BlueZCentralConfiguration(
        bus: BlueZSessionConfiguration(
          busAddress: bus.address, callTimeout: callTimeout, reconnectDelay: .milliseconds(100),
          signalGathering: signalGathering),
        startupWait: startupWait, watchdog: watchdog, scanMethod: scanMethod,
        batchWindow: batchWindow),
      logger: logger)
    let recorder = Recorder(central.events())
    let task = Task { await central.run() }
    return (central, recorder, task)
  }

  static func isAdapter(_ id: String, _ check: @escaping (AdapterInfo) -> Bool = { _ in true })
    -> (CentralEvent) -> Bool
  {
    { event in
      if case .adapterChanged(let info) = event { return info.id == id && check(info) }
      return false
    }
  }

  @Test(
    "a discovery operation waiting for the adapter's turn returns at once when its task is cancelled; the others go on in order"
  )
  func cancelledWaitForTheAdapter() async throws {
    try await PrivateBus.with { bus in
      let fake = try await FakeBlueZ.start(on: bus)
      // Calls time out after 30 s: the first call below must not end before bluetoothd answers.
      let (central, events, task) = Self.central(bus, callTimeout: .seconds(30))
      defer { task.cancel() }
      try await events.next(where: Self.isAdapter("hci0"))
      fake.hang("StartDiscovery", for: .seconds(12))
      // The first holds the adapter while bluetoothd takes 12 s to answer: a cancelled wait
      // that went on waiting for the adapter (the defect) would cost 12 s, far from a late
      // test task's second or two.
      let first = Task { () -> CentralError? in
        do throws(CentralError) {
          try await central.startDiscovery(adapter: "hci0", filter: DiscoveryFilter())
          return nil
        } catch {
          return error
        }
      }
      try await Task.sleep(for: .milliseconds(300))
      let waiting = Task { () -> CentralError? in
        do throws(CentralError) {
          try await central.setPowered(adapter: "hci0", true)
          return nil
        } catch {
          return error
        }
      }
      try await Task.sleep(for: .milliseconds(200))
      let cancelled = ContinuousClock.now
      waiting.cancel()
      let error = await waiting.value
      #expect(ContinuousClock.now - cancelled < .seconds(8))
      #expect(error?.code == .aborted)
      // The holder finishes; the adapter is free again afterwards.
      #expect(await first.value == nil)
      try await central.setPowered(adapter: "hci0", true)
      #expect(fake.calls("StartDiscovery").count == 1)
      await fake.stop()
    }
  }

  @Test("snapshot, InterfacesAdded, PropertiesChanged and InterfacesRemoved become events")
  func mirrorsTheStack() async throws {
    try await PrivateBus.with { bus in
      let fake = try await FakeBlueZ.start(on: bus)
      try await fake.addDevice(
        "11:22:33:44:55:66",
        properties: ["Name": .string("cached"), "AddressType": .string("random")])
      let (central, events, task) = Self.central(bus)
      defer { task.cancel() }

      let adapter = try await events.next(where: Self.isAdapter("hci0"))
      guard case .adapterChanged(let info) = adapter else {
        Issue.record("expected adapterChanged, got \(adapter)")
        return
      }
      #expect(info.name == "lab-hci0" && info.powered && !info.discovering)
      #expect(info.address?.description == "00:1A:7D:DA:71:10")
      let cached = try await events.next { if case .deviceAppeared = $0 { true } else { false } }
      #expect(
        cached
          == .deviceAppeared(
            Advertisement(
              address: try BluetoothAddress("11:22:33:44:55:66"), addressType: .random,
              name: Array("cached".utf8))))
      #expect(try await central.adapters().map(\.id) == ["hci0"])

      let path = try await fake.addDevice(
        Self.deviceAddress,
        properties: [
          "Name": .string("Thermo/#+"), "RSSI": .int16(-70),
          "ManufacturerData": .dictionary(
            key: "q", value: "v", [(.uint16(0x004C), .variant(.bytes([2, 21])))]),
        ])
      let address = try BluetoothAddress(Self.deviceAddress)
      let appeared = try await events.next {
        if case .deviceAppeared(let a) = $0 { a.address == address } else { false }
      }
      #expect(
        appeared
          == .deviceAppeared(
            Advertisement(
              address: address, name: Array("Thermo/#+".utf8), rssi: -70,
              manufacturerData: [0x004C: [2, 21]])))

      try await fake.change(path, "org.bluez.Device1", ["RSSI": .int16(-42)])
      let updated = try await events.next {
        if case .deviceUpdated(let a) = $0 { a.address == address } else { false }
      }
      guard case .deviceUpdated(let advertisement) = updated else {
        Issue.record("expected deviceUpdated, got \(updated)")
        return
      }
      #expect(advertisement.rssi == -42)
      #expect(advertisement.manufacturerData == [0x004C: [2, 21]])

      try await fake.change(path, "org.bluez.Device1", ["Connected": .bool(true)])
      try await events.next { $0 == .connectionChanged(address, connected: true) }

      try await fake.remove(path)
      try await events.next { $0 == .deviceRemoved(address) }

      // Everything above came from signals: one GetManagedObjects only.
      #expect(await central.statistics.snapshots == 1)
      #expect(await central.statistics.devices == 1)
      await fake.stop()
    }
  }

  @Test(
    "40 advertisement signals gathered by the bus thread reach the central's sinks in a few batches, every update in order"
  )
  func signalsInBatches() async throws {
    try await PrivateBus.with { bus in
      let fake = try await FakeBlueZ.start(on: bus)
      let path = try await fake.addDevice(Self.deviceAddress, properties: ["RSSI": .int16(-90)])
      let (central, events, task) = Self.central(bus, signalGathering: .milliseconds(500))
      defer { task.cancel() }
      try await events.next(where: Self.isAdapter("hci0"))
      let batches = Mutex<[[Int]]>([])
      // When each batch reached the sink, taken on the bus thread that hands it over.
      let arrivals = Mutex<[ContinuousClock.Instant]>([])
      let subscription = central.attach(
        EventSink(receive: { events in
          let rssis = events.compactMap { event -> Int? in
            if case .deviceUpdated(let advertisement) = event { advertisement.rssi } else { nil }
          }
          if !rssis.isEmpty {
            arrivals.withLock { $0.append(.now) }
            batches.withLock { $0.append(rssis) }
          }
        }))
      defer { subscription.cancel() }
      let start = ContinuousClock.now
      for i in 0..<40 {
        try await fake.change(path, "org.bluez.Device1", ["RSSI": .int16(Int16(-80 + i))])
        try await Task.sleep(for: .milliseconds(5))
      }
      let sending = (ContinuousClock.now - start).seconds
      for _ in 0..<500 where batches.withLock({ $0.joined().count }) < 40 {
        try await Task.sleep(for: .milliseconds(10))
      }
      let received = batches.withLock { $0 }
      #expect(Array(received.joined()) == (0..<40).map { -80 + $0 })
      // One bridge step per turn of the bus thread (about one per half second while signals
      // come), not per signal. On a loaded machine the 40 changes reach the bus over seconds (a
      // CI-like run saw 11 batches), later than the test's task sent them (one saw 5 batches in
      // 0.23 s of sending), so the bound follows the time between the first batch and the last.
      let times = arrivals.withLock { $0 }
      let span = times.count > 1 ? (times.last! - times.first!).seconds : 0
      #expect(
        received.count <= Int(span / 0.5) + 3 && received.count < 20,
        "batches: \(received.map(\.count)) over \(span) s (sent in \(sending) s)")
      await fake.stop()
    }
  }

  @Test("discovery sends SetDiscoveryFilter without false booleans, then StartDiscovery once")
  func discovery() async throws {
    try await PrivateBus.with { bus in
      let fake = try await FakeBlueZ.start(on: bus)
      let (central, events, task) = Self.central(bus)
      defer { task.cancel() }
      try await events.next(where: Self.isAdapter("hci0"))

      let filter = DiscoveryFilter(serviceUUIDs: [BluetoothUUID(uuid16: 0x180F)], rssiFloor: -80)
      try await central.startDiscovery(adapter: "hci0", filter: filter)
      try await events.next(where: Self.isAdapter("hci0") { $0.discovering })
      let filters = fake.calls("SetDiscoveryFilter")
      #expect(filters.count == 1)
      let dictionary = try #require(filters.first?.arguments.first?.propertyMap)
      #expect(
        dictionary == [
          "Transport": .string("le"), "UUIDs": .strings(["0000180f-0000-1000-8000-00805f9b34fb"]),
          "RSSI": .int16(-80), "DuplicateData": .bool(true),
        ])
      #expect(fake.calls("StartDiscovery").count == 1)

      // Idempotent: already discovering → only the new filter is applied.
      try await central.startDiscovery(
        adapter: "hci0", filter: DiscoveryFilter(duplicateData: false))
      #expect(fake.calls("StartDiscovery").count == 1)
      let second = try #require(fake.calls("SetDiscoveryFilter").last?.arguments.first?.propertyMap)
      #expect(second == ["Transport": .string("le")])
      #expect(
        !fake.calls("SetDiscoveryFilter").contains { call in
          call.arguments.first?.propertyMap?.values.contains(.bool(false)) ?? true
        })

      try await central.stopDiscovery(adapter: "hci0")
      #expect(fake.calls("StopDiscovery").count == 1)
      try await central.stopDiscovery(adapter: "hci0")  // not discovering: still fine

      try await central.setPowered(adapter: "hci0", false)
      try await events.next(where: Self.isAdapter("hci0") { !$0.powered })
      #expect(fake.calls("Set Powered").map(\.arguments) == [[.bool(false)]])
      await fake.stop()
    }
  }

  /// Whether this kernel refuses Bluetooth sockets (no Bluetooth, as on the test machines).
  static let kernelHasNoBluetooth: Bool = {
    let fd = socket(31, Int32(SOCK_RAW.rawValue), 1)  // AF_BLUETOOTH, BTPROTO_HCI
    if fd >= 0 { close(fd) }
    return fd < 0
  }()

  @Test(
    "scan_method management without the kernel's management interface falls back to bluetoothd",
    .enabled(
      if: kernelHasNoBluetooth,
      "this kernel has Bluetooth: the kernel path is exercised in the lab (gateway-kernel-scan)"))
  func kernelScanningFallsBack() async throws {
    try await PrivateBus.with { bus in
      let fake = try await FakeBlueZ.start(on: bus)
      let (central, events, task) = Self.central(bus, scanMethod: .management)
      defer { task.cancel() }
      try await events.next(where: Self.isAdapter("hci0"))
      try await central.startDiscovery(adapter: "hci0", filter: DiscoveryFilter())
      // Refused by the kernel: bluetoothd discovers, and its advertisements are reported.
      #expect(fake.calls("StartDiscovery").count == 1)
      try await events.next(where: Self.isAdapter("hci0") { $0.discovering })
      let address = try BluetoothAddress(Self.deviceAddress)
      try await fake.addDevice(Self.deviceAddress, properties: ["RSSI": .int16(-70)])
      try await events.next {
        if case .deviceAppeared(let a) = $0 { a.address == address && a.rssi == -70 } else { false }
      }
      try await central.stopDiscovery(adapter: "hci0")
      #expect(fake.calls("StopDiscovery").count == 1)
      await fake.stop()
    }
  }

  @Test("BlueZ error replies map to CentralError codes with the D-Bus name kept")
  func errors() async throws {
    try await PrivateBus.with { bus in
      let fake = try await FakeBlueZ.start(on: bus)
      let (central, events, task) = Self.central(bus)
      defer { task.cancel() }
      try await events.next(where: Self.isAdapter("hci0"))

      fake.fail("StartDiscovery", with: "org.bluez.Error.InProgress")
      let inProgress = await #expect(throws: CentralError.self) {
        try await central.startDiscovery(adapter: "hci0", filter: DiscoveryFilter())
      }
      #expect(inProgress?.code == .inProgress)
      #expect(inProgress?.detail == "org.bluez.Error.InProgress")

      fake.fail("SetDiscoveryFilter", with: "org.bluez.Error.NotReady")
      let notReady = await #expect(throws: CentralError.self) {
        try await central.startDiscovery(adapter: "hci0", filter: DiscoveryFilter())
      }
      #expect(notReady?.code == .poweredOff)

      let unknown = await #expect(throws: CentralError.self) {
        try await central.startDiscovery(adapter: "hci9", filter: DiscoveryFilter())
      }
      #expect(unknown?.code == .unknownAdapter)

      // After the refusals a normal start works (no session was recorded for them).
      try await central.startDiscovery(adapter: "hci0", filter: DiscoveryFilter())
      #expect(fake.calls("StartDiscovery").count == 2)
      await fake.stop()
    }
  }

  @Test(
    "removeDevice calls Adapter1.RemoveDevice on the device's adapter; unknown and gone are not errors"
  )
  func removeDevice() async throws {
    try await PrivateBus.with { bus in
      let fake = try await FakeBlueZ.start(on: bus)
      let path = try await fake.addDevice(Self.deviceAddress)
      let (central, events, task) = Self.central(bus)
      defer { task.cancel() }
      try await events.next(where: Self.isAdapter("hci0"))
      let address = try BluetoothAddress(Self.deviceAddress)

      try await central.removeDevice(address)
      let calls = fake.calls("RemoveDevice")
      #expect(calls.map(\.path) == ["/org/bluez/hci0"])
      #expect(calls.first?.arguments == [.objectPath(try DBusObjectPath(path))])

      // BlueZ removed it meanwhile: not an error.
      fake.fail("RemoveDevice", with: "org.bluez.Error.DoesNotExist")
      try await central.removeDevice(address)
      // A refusal is reported.
      fake.fail("RemoveDevice", with: "org.bluez.Error.NotPermitted")
      let refused = await #expect(throws: CentralError.self) {
        try await central.removeDevice(address)
      }
      #expect(refused?.code == .notPermitted)
      // A device BlueZ does not know: nothing to do.
      try await central.removeDevice(try BluetoothAddress("11:22:33:44:55:66"))
      #expect(fake.calls("RemoveDevice").count == 3)
      await fake.stop()
    }
  }

  @Test("wrong property types from the stack are ignored, not fatal")
  func brokenProperties() async throws {
    try await PrivateBus.with { bus in
      let fake = try await FakeBlueZ.start(on: bus)
      try await fake.addDevice(
        Self.deviceAddress,
        properties: [
          "RSSI": .string("loud"), "ManufacturerData": .strings(["nope"]),
          "UUIDs": .int32(3), "Name": .string("ok"),
        ])
      try await fake.addDevice(
        "00:00:00:00:00:01", path: "/org/bluez/hci0/not_a_device", includeAddress: false)
      let (central, events, task) = Self.central(bus)
      defer { task.cancel() }
      let appeared = try await events.next { if case .deviceAppeared = $0 { true } else { false } }
      #expect(
        appeared
          == .deviceAppeared(
            Advertisement(address: try BluetoothAddress(Self.deviceAddress), name: Array("ok".utf8))
          ))
      let statistics = await central.statistics
      #expect(statistics.devices == 1 && statistics.malformed == 1)
      await fake.stop()
    }
  }

  @Test(
    "a bus policy that denies us org.bluez → one stackRefused saying what to do; allowed → the stack"
  )
  func accessDenied() async throws {
    let deny = #"<policy context="default"><deny send_destination="org.bluez"/></policy>"#
    let bus = try await PrivateBus.start(policy: deny)
    let fake = try await FakeBlueZ.start(on: bus)
    let (central, events, task) = Self.central(bus)
    defer { task.cancel() }
    let refused = try await events.next { if case .stackRefused(_?) = $0 { true } else { false } }
    guard case .stackRefused(let refusal) = refused else {
      Issue.record("expected stackRefused, got \(refused)")
      return
    }
    let error = try #require(refusal)
    #expect(error.code == .accessDenied)
    #expect(error.detail == "org.freedesktop.DBus.Error.AccessDenied")
    #expect(error.message.contains("gatt2mqtt.conf"), "\(error.message)")
    // A subscriber that comes later learns it from the snapshot: the refusal, not "unavailable".
    let late = await #expect(throws: CentralError.self) { try await central.adapters() }
    #expect(late?.code == .accessDenied)
    // The policy installed and reloaded: the central mirrors the stack by itself.
    try await bus.reload(policy: "")
    try await events.next { $0 == .stackRefused(nil) }
    try await events.next(where: Self.isAdapter("hci0"))
    #expect(try await central.adapters().map(\.id) == ["hci0"])
    await fake.stop()
    await bus.stop()
  }

  @Test("org.bluez going away → stackLost; coming back → a rebuilt model")
  func bluetoothdRestart() async throws {
    try await PrivateBus.with { bus in
      let first = try await FakeBlueZ.start(on: bus)
      try await first.addDevice(Self.deviceAddress)
      let (central, events, task) = Self.central(bus)
      defer { task.cancel() }
      try await events.next(where: Self.isAdapter("hci0"))
      try await central.startDiscovery(adapter: "hci0", filter: DiscoveryFilter())

      await first.stop()
      try await events.next { $0 == .stackLost }
      let unavailable = await #expect(throws: CentralError.self) { try await central.adapters() }
      #expect(unavailable?.code == .unavailable)
      let refused = await #expect(throws: CentralError.self) {
        try await central.startDiscovery(adapter: "hci0", filter: DiscoveryFilter())
      }
      #expect(refused?.code == .unavailable)

      let second = try await FakeBlueZ.start(on: bus, adapters: ["hci1"])
      try await events.next(where: Self.isAdapter("hci1"))
      #expect(try await central.adapters().map(\.id) == ["hci1"])
      #expect(await central.statistics.snapshots == 2)
      // The old discovery session is gone with the old stack: a start really starts again.
      try await central.startDiscovery(adapter: "hci1", filter: DiscoveryFilter())
      #expect(second.calls("StartDiscovery").count == 1)
      await second.stop()
    }
  }

  @Test("losing the bus reports stackLost; the central reconnects and mirrors the stack again")
  func busLost() async throws {
    let bus = try await PrivateBus.start()
    let fake = try await FakeBlueZ.start(on: bus)
    let (central, events, task) = Self.central(bus)
    defer { task.cancel() }
    try await events.next(where: Self.isAdapter("hci0"))
    await bus.stop()
    try await events.next { $0 == .stackLost }
    #expect(await central.statistics.synced == false)
    _ = fake

    let again = try await PrivateBus.start(in: bus.folder)
    let second = try await FakeBlueZ.start(on: again, adapters: ["hci0"])
    try await events.next(timeout: .seconds(15), where: Self.isAdapter("hci0"))
    let statistics = await central.statistics
    #expect(statistics.connections >= 2 && statistics.synced)
    await second.stop()
    await again.stop()
  }

  @Test("the watchdog restarts discovery, then power-cycles the adapter, and sees recovery")
  func watchdog() async throws {
    try await PrivateBus.with { bus in
      let fake = try await FakeBlueZ.start(on: bus)
      let path = try await fake.addDevice(Self.deviceAddress)
      let (central, events, task) = Self.central(
        bus,
        watchdog: ScannerWatchdogConfiguration(
          restartAfter: .milliseconds(600), powerCycleAfter: .milliseconds(600),
          checkInterval: .milliseconds(100)))
      defer { task.cancel() }
      let steps = Recorder(central.events())
      try await events.next(where: Self.isAdapter("hci0"))
      try await central.startDiscovery(adapter: "hci0", filter: DiscoveryFilter())

      // Each step, or the step's failure (which the test reports: it failed once under load
      // with no word of which call failed).
      func step(_ done: @escaping @Sendable (ScannerWatchdogEvent) -> Bool) async throws -> Bool {
        let event = try await steps.next {
          guard case .scannerWatchdog(let event) = $0 else { return false }
          if case .stepFailed = event { return true }
          return done(event)
        }
        guard case .scannerWatchdog(.stepFailed(_, let failed, let error)) = event else {
          return true
        }
        Issue.record("the watchdog's \(failed) failed: \(error)")
        return false
      }
      let restarted = try await step {
        if case .discoveryRestarted(adapter: "hci0", _) = $0 { true } else { false }
      }
      guard restarted else { return }
      #expect(fake.calls("StopDiscovery").count == 1)
      #expect(fake.calls("StartDiscovery").count == 2)

      let cycled = try await step {
        if case .adapterPowerCycled(adapter: "hci0", _) = $0 { true } else { false }
      }
      guard cycled else { return }
      #expect(fake.calls("Set Powered").map(\.arguments) == [[.bool(false)], [.bool(true)]])
      #expect(fake.calls("StartDiscovery").count == 3)
      try await events.next(where: Self.isAdapter("hci0") { $0.resetting })
      try await events.next(where: Self.isAdapter("hci0") { !$0.resetting && $0.powered })

      try await fake.change(path, "org.bluez.Device1", ["RSSI": .int16(-50)])
      try await steps.next { $0 == .scannerWatchdog(.recovered(adapter: "hci0")) }
      await fake.stop()
    }
  }
}
