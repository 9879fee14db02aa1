import BridgeCore
import BusTestSupport
import DBus
import Foundation
import Logging
import Synchronization
import Testing

@testable import BlueZ

/// One ``BlueZSession`` under the central and the peripheral, against a private dbus-daemon
/// with the test playing bluetoothd (``FakeBlueZ``).
@Suite(
  "BlueZSession shared by both roles",
  .enabled(if: PrivateBus.isAvailable, "dbus-daemon is not installed (apt-get install dbus)"),
  .timeLimit(.minutes(1)))
struct BlueZSessionTests {
  /// The session's counters once it counts itself synced (it does once every client has the
  /// snapshot, a moment after they act on it), within 10 s.
  func synced(_ session: BlueZSession) async throws -> BlueZSession.Statistics {
    let deadline = ContinuousClock.now + .seconds(10)
    while !session.statistics.synced, ContinuousClock.now < deadline {
      try await Task.sleep(for: .milliseconds(20))
    }
    return session.statistics
  }

  /// A session on `bus` with a central and a peripheral on it, all running.
  static func roles(
    _ bus: PrivateBus, signalBuffer: Int = 8192, first: (any BlueZSessionClient)? = nil
  ) -> (
    BlueZSession, BlueZCentral, Recorder<CentralEvent>, BlueZPeripheral,
    Recorder<PeripheralEvent>, Task<Void, Never>
  ) {
    var logger = Logger(label: "test.bluez.session")
    logger.logLevel = .critical
    let settings = BlueZSessionConfiguration(
      busAddress: bus.address, signalBufferSize: signalBuffer, callTimeout: .seconds(5),
      reconnectDelay: .milliseconds(100))
    let session = BlueZSession(configuration: settings, logger: logger)
    if let first { session.register(first) }
    let central = BlueZCentral(
      session: session,
      configuration: BlueZCentralConfiguration(bus: settings, watchdog: .init(enabled: false)),
      logger: logger)
    let peripheral = BlueZPeripheral(
      session: session,
      configuration: BlueZPeripheralConfiguration(
        bus: settings, retryDelay: .milliseconds(100), maxRetryDelay: .milliseconds(400)),
      logger: logger)
    let centralEvents = Recorder(central.events())
    let peripheralEvents = Recorder(peripheral.peripheralEvents())
    let task = Task {
      await withTaskGroup(of: Void.self) { group in
        group.addTask { await session.run() }
        group.addTask { await central.run() }
        group.addTask { await peripheral.run() }
      }
    }
    return (session, central, centralEvents, peripheral, peripheralEvents, task)
  }

  static func isAdapter(_ id: String) -> (CentralEvent) -> Bool {
    { event in
      if case .adapterChanged(let info) = event { return info.id == id }
      return false
    }
  }

  @Test(
    "the liveness ping answers on a bus whose policy refuses Peer.Ping, as the system bus does for non-root users"
  )
  func pingUnderSystemPolicy() async throws {
    let deny =
      #"<policy context="default"><deny send_destination="org.freedesktop.DBus" send_interface="org.freedesktop.DBus.Peer"/></policy>"#
    let bus = try await PrivateBus.start(policy: deny)
    let fake = try await FakeBlueZ.start(on: bus)
    let (session, _, centralEvents, _, _, task) = Self.roles(bus)
    try await centralEvents.next(where: Self.isAdapter("hci0"))
    #expect(await session.ping(timeout: .seconds(5)))
    task.cancel()
    await fake.stop()
    await bus.stop()
  }

  @Test("one connection and one snapshot serve the central and the peripheral")
  func oneConnectionForBothRoles() async throws {
    try await PrivateBus.with { bus in
      let fake = try await FakeBlueZ.start(on: bus)
      let (session, central, centralEvents, peripheral, peripheralEvents, task) = Self.roles(bus)
      defer { task.cancel() }
      try await centralEvents.next(where: Self.isAdapter("hci0"))
      try await central.startDiscovery(adapter: "hci0", filter: DiscoveryFilter())
      try await peripheral.startPeripheral(PeripheralService(localName: "gw1"))
      try await peripheralEvents.next("advertising") { $0 == .stateChanged(.advertising) }

      let statistics = try await synced(session)
      #expect(statistics.connections == 1)
      #expect(statistics.snapshots == 1)
      #expect(statistics.synced)
      // bluetoothd sees both roles' calls come from the same bus connection.
      let discovery = try #require(fake.calls("StartDiscovery").first?.sender)
      let application = try #require(fake.calls("RegisterApplication").first?.sender)
      let advertisement = try #require(fake.calls("RegisterAdvertisement").first?.sender)
      #expect(discovery == application && application == advertisement)
      #expect(await central.statistics.connections == 1)
      #expect(await peripheral.statistics.connections == 1)
      await fake.stop()
    }
  }

  @Test(
    "a bluetoothd restart: one new snapshot; the central mirrors again, the peripheral registers again"
  )
  func restartOnSharedSession() async throws {
    try await PrivateBus.with { bus in
      let fake = try await FakeBlueZ.start(on: bus)
      let (session, central, centralEvents, peripheral, peripheralEvents, task) = Self.roles(bus)
      defer { task.cancel() }
      try await centralEvents.next(where: Self.isAdapter("hci0"))
      try await peripheral.startPeripheral(PeripheralService(localName: "gw1"))
      try await peripheralEvents.next("advertising") { $0 == .stateChanged(.advertising) }

      try await fake.restart()
      try await centralEvents.next { $0 == .stackLost }
      try await centralEvents.next(where: Self.isAdapter("hci0"))
      let deadline = ContinuousClock.now + .seconds(10)
      while fake.calls("RegisterAdvertisement").count < 2, ContinuousClock.now < deadline {
        try await Task.sleep(for: .milliseconds(20))
      }
      #expect(fake.calls("RegisterApplication").count == 2)
      #expect(fake.calls("RegisterAdvertisement").count == 2)
      #expect(try await central.adapters().map(\.id) == ["hci0"])
      let statistics = try await synced(session)
      #expect(statistics.connections == 1)
      #expect(statistics.snapshots == 2)
      await fake.stop()
    }
  }

  @Test(
    "another bluetoothd takes over (a new unique name, other adapters): one new snapshot from it; the roles follow it, the old stack's objects are gone"
  )
  func anotherOwnerTakesOver() async throws {
    try await PrivateBus.with { bus in
      let first = try await FakeBlueZ.start(on: bus)
      let (session, central, centralEvents, peripheral, peripheralEvents, task) = Self.roles(bus)
      defer { task.cancel() }
      try await centralEvents.next(where: Self.isAdapter("hci0"))
      try await peripheral.startPeripheral(PeripheralService(localName: "gw1"))
      try await peripheralEvents.next("advertising") { $0 == .stateChanged(.advertising) }
      let firstName = try #require(first.calls("RegisterApplication").first?.sender)

      await first.stop()
      try await centralEvents.next { $0 == .stackLost }
      let second = try await FakeBlueZ.start(on: bus, adapters: ["hci1"])
      try await centralEvents.next(where: Self.isAdapter("hci1"))
      #expect(try await central.adapters().map(\.id) == ["hci1"])
      let deadline = ContinuousClock.now + .seconds(10)
      while second.calls("RegisterAdvertisement").isEmpty, ContinuousClock.now < deadline {
        try await Task.sleep(for: .milliseconds(20))
      }
      #expect(second.calls("RegisterApplication").count == 1)
      #expect(second.calls("RegisterAdvertisement").count == 1)
      // The same session connection calls the new owner.
      #expect(second.calls("RegisterApplication").first?.sender == firstName)
      let statistics = try await synced(session)
      #expect(statistics.connections == 1)
      #expect(statistics.snapshots == 2)
      #expect(statistics.synced)
      await second.stop()
    }
  }

  @Test(
    "signals dropped while the session fell behind (its buffer full): a new snapshot is taken, the mirror ends as bluetoothd's state, and what the lost signals said (a link that went) is told"
  )
  func droppedSignalsTakeANewSnapshot() async throws {
    try await PrivateBus.with { bus in
      let fake = try await FakeBlueZ.start(on: bus)
      let device = try await fake.addDevice(
        "A4:C1:38:00:00:01", properties: ["Connected": .bool(true)])
      let address = try BluetoothAddress("A4:C1:38:00:00:01")
      let stall = Stall()
      let (session, central, centralEvents, _, _, task) = Self.roles(
        bus, signalBuffer: 4, first: stall)
      defer { task.cancel() }
      try await centralEvents.next(where: Self.isAdapter("hci0"))
      // The next signal holds the session until released; the ones behind it overflow its buffer.
      stall.armed.withLock { $0 = true }
      for index in 0..<40 {
        if index == 20 {
          try await fake.change(device, "org.bluez.Device1", ["Connected": .bool(false)])
        }
        try await fake.change(
          "/org/bluez/hci0", "org.bluez.Adapter1", ["Alias": .string("a\(index)")])
      }
      stall.released.withLock { $0 = true }
      try await centralEvents.next { $0 == .connectionChanged(address, connected: false) }
      let deadline = ContinuousClock.now + .seconds(10)
      while try await central.adapters().first?.name != "a39", ContinuousClock.now < deadline {
        try await Task.sleep(for: .milliseconds(20))
      }
      #expect(try await central.adapters().first?.name == "a39")
      let statistics = try await synced(session)
      #expect(statistics.snapshotsAfterLoss >= 1)
      #expect(statistics.snapshots >= 2)
      #expect(statistics.synced)
      await fake.stop()
    }
  }
}

@Suite("MirrorSummary: what lost signals would have said")
struct MirrorSummaryTests {
  @Test(
    "a link that went and a device that went (its link first), an adapter that went, a link that came up before the snapshot's own events; evicted devices are no removal"
  )
  func changes() throws {
    func address(_ last: Int) throws -> BluetoothAddress {
      try BluetoothAddress(String(format: "A4:C1:38:00:00:%02X", last))
    }
    let (a, b, c, d, f) = (
      try address(1), try address(2), try address(3), try address(4), try address(6)
    )
    let before = MirrorSummary(
      adapters: ["hci0", "hci1"], connected: [a: true, b: false, c: true, d: true, f: false],
      present: nil)
    // f: still in bluetoothd's reply, evicted from the mirror.
    let now = MirrorSummary(
      adapters: ["hci0"], connected: [a: true, b: true, d: false], present: [a, b, d, f])
    let loaded: [CentralEvent] = [.deviceAppeared(Advertisement(address: b))]
    #expect(
      before.changes(to: now, then: loaded) == [
        .connectionChanged(c, connected: false), .deviceRemoved(c),
        .connectionChanged(d, connected: false), .adapterRemoved(id: "hci1"),
        .connectionChanged(b, connected: true), .deviceAppeared(Advertisement(address: b)),
      ])
    #expect(before.changes(to: before, then: []).isEmpty)
  }
}

/// A session client that holds the session on the first signals after it is armed, until it
/// is released (10 s at most): the signals behind them then overflow the session's buffer
/// however slowly they come (a fixed 300-ms hold let a loaded CI machine emit them too slowly
/// to overflow it).
private actor Stall: BlueZSessionClient {
  nonisolated let armed = Mutex(false)
  nonisolated let released = Mutex(false)

  func session(_ event: BlueZSessionEvent) async throws {
    // The stalling client acts only on the first signals after it is armed and ignores every
    // other event (what the test checks is the other clients' mirror).
    if case .signals = event, armed.withLock({ $0 }) {
      armed.withLock { $0 = false }
      let deadline = ContinuousClock.now + .seconds(10)
      while !released.withLock({ $0 }), ContinuousClock.now < deadline {
        try await Task.sleep(for: .milliseconds(10))
      }
    }
  }
}
