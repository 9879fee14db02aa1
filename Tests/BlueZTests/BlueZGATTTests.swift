import BridgeCore
import BusTestSupport
import DBus
import Glibc
import Logging
import Testing

@testable import BlueZ

/// Connections and GATT operations of the central against ``FakeBlueZ`` on a private bus.
@Suite(
  "BlueZCentral GATT on a private bus",
  .enabled(if: PrivateBus.isAvailable, "dbus-daemon is not installed (apt-get install dbus)"),
  .timeLimit(.minutes(1)))
struct BlueZGATTTests {
  static let deviceAddress = "A4:C1:38:1E:29:DF"
  static let battery = BluetoothUUID(uuid16: 0x180F)
  static let level = BluetoothUUID(uuid16: 0x2A19)
  static let control = BluetoothUUID(uuid16: 0xFFF1)
  static let custom = BluetoothUUID(uuid16: 0xFFF0)
  static let alarm = BluetoothUUID(uuid16: 0xFFF2)

  static func long(_ uuid: BluetoothUUID) -> String { uuid.longForm }

  /// The GATT objects of the test device: a custom service (handle 0x20) exported before the
  /// battery service (handle 0x10), so the tree's order must come from the paths.
  struct Device {
    var path: String
    var level: String
    var control: String
    /// Indicate-only, with `AcquireNotify` (which BlueZ 5.66 refuses for it).
    var alarm: String
  }

  static func exportGATT(_ fake: FakeBlueZ, device path: String) async throws -> Device {
    let custom = try await fake.addService(device: path, handle: 0x20, uuid: long(Self.custom))
    let control = try await fake.addCharacteristic(
      service: custom, handle: 0x21, uuid: long(Self.control),
      flags: ["write", "write-without-response"], mtu: 185)
    let alarm = try await fake.addCharacteristic(
      service: custom, handle: 0x23, uuid: long(Self.alarm), flags: ["indicate"], mtu: 185,
      acquire: true)
    let battery = try await fake.addService(device: path, handle: 0x10, uuid: long(Self.battery))
    let level = try await fake.addCharacteristic(
      service: battery, handle: 0x11, uuid: long(Self.level), flags: ["read", "notify"],
      value: [87], mtu: 247, acquire: true)
    try await fake.addDescriptor(
      characteristic: level, handle: 0x13, uuid: long(.init(uuid16: 0x2902)))
    return Device(path: path, level: level, control: control, alarm: alarm)
  }

  static let expectedTree = GATTTree(
    services: [
      .init(
        uuid: battery,
        characteristics: [
          .init(uuid: level, flags: ["read", "notify"], descriptors: [.init(uuid16: 0x2902)])
        ]),
      .init(
        uuid: custom,
        characteristics: [
          .init(uuid: control, flags: ["write", "write-without-response"]),
          .init(uuid: alarm, flags: ["indicate"]),
        ]),
    ], mtu: 247)

  static var address: BluetoothAddress { try! BluetoothAddress(deviceAddress) }
  static var levelID: GATTCharacteristicID {
    GATTCharacteristicID(address: address, service: battery, characteristic: level)
  }
  static var controlID: GATTCharacteristicID {
    GATTCharacteristicID(address: address, service: custom, characteristic: control)
  }
  static var alarmID: GATTCharacteristicID {
    GATTCharacteristicID(address: address, service: custom, characteristic: alarm)
  }

  static func isResolved(_ event: CentralEvent) -> Bool {
    if case .servicesResolved = event { true } else { false }
  }

  /// A central on `bus` whose model already holds a connected device with resolved services.
  static func resolved(_ bus: PrivateBus, batchWindow: Duration = .zero) async throws -> (
    FakeBlueZ, Device, BlueZCentral, Recorder<CentralEvent>, Task<Void, Never>
  ) {
    let fake = try await FakeBlueZ.start(on: bus)
    let path = try await fake.addDevice(
      deviceAddress, properties: ["Connected": .bool(true), "ServicesResolved": .bool(true)])
    let device = try await exportGATT(fake, device: path)
    let (central, events, task) = BlueZCentralTests.central(bus, batchWindow: batchWindow)
    try await events.next(where: isResolved)
    return (fake, device, central, events, task)
  }

  /// Waits up to 5 s for `condition`.
  static func until(_ what: String, _ condition: () async -> Bool) async throws {
    let deadline = ContinuousClock.now + .seconds(5)
    while await !condition() {
      guard ContinuousClock.now < deadline else { throw HarnessError("not within 5 s: \(what)") }
      try await Task.sleep(for: .milliseconds(10))
    }
  }

  @Test("Connect, then services appearing and ServicesResolved become the GATT tree")
  func treeOnServicesResolved() async throws {
    try await PrivateBus.with { bus in
      let fake = try await FakeBlueZ.start(on: bus)
      let path = try await fake.addDevice(Self.deviceAddress)
      let (central, events, task) = BlueZCentralTests.central(bus)
      defer { task.cancel() }
      try await events.next { if case .deviceAppeared = $0 { true } else { false } }

      try await central.connect(Self.address, timeout: 5)
      #expect(fake.calls("Connect").map(\.path) == [path])
      try await events.next { $0 == .connectionChanged(Self.address, connected: true) }

      _ = try await Self.exportGATT(fake, device: path)
      try await fake.change(path, "org.bluez.Device1", ["ServicesResolved": .bool(true)])
      let resolved = try await events.next(where: Self.isResolved)
      #expect(resolved == .servicesResolved(Self.address, Self.expectedTree))
      #expect(await central.statistics.gattObjects == 6)

      // Connecting a device whose services are resolved already reports its tree again.
      try await central.connect(Self.address, timeout: 5)
      let again = try await events.next(where: Self.isResolved)
      #expect(again == resolved)

      try await central.disconnect(Self.address)
      try await events.next { $0 == .connectionChanged(Self.address, connected: false) }
      // Not connected (BlueZ answers NotConnected) and unknown devices are not errors.
      try await central.disconnect(Self.address)
      try await central.disconnect(try BluetoothAddress("00:00:00:00:00:01"))
      #expect(fake.calls("Disconnect").count == 2)
      await fake.stop()
    }
  }

  @Test(
    "ServicesResolved before the GATT objects (BlueZ 5.66 may flush them in that order): the tree comes again with every object"
  )
  func resolvedBeforeObjects() async throws {
    try await PrivateBus.with { bus in
      let fake = try await FakeBlueZ.start(on: bus)
      let path = try await fake.addDevice(Self.deviceAddress)
      let (central, events, task) = BlueZCentralTests.central(bus)
      defer { task.cancel() }
      try await events.next { if case .deviceAppeared = $0 { true } else { false } }
      try await central.connect(Self.address, timeout: 5)
      try await fake.change(path, "org.bluez.Device1", ["ServicesResolved": .bool(true)])
      let early = try await events.next(where: Self.isResolved)
      #expect(early == .servicesResolved(Self.address, GATTTree(services: [])))
      _ = try await Self.exportGATT(fake, device: path)
      try await events.next { $0 == .servicesResolved(Self.address, Self.expectedTree) }
      await fake.stop()
    }
  }

  @Test("a device connected and resolved in the snapshot reports its tree after appearing")
  func snapshotTree() async throws {
    try await PrivateBus.with { bus in
      let (fake, _, _, events, task) = try await Self.resolved(bus)
      defer { task.cancel() }
      let appeared = events.all.firstIndex {
        if case .deviceAppeared(let a) = $0 { a.address == Self.address } else { false }
      }
      let resolved = events.all.firstIndex(where: Self.isResolved)
      #expect(appeared != nil && resolved != nil && appeared! < resolved!)
      #expect(events.all[resolved!] == .servicesResolved(Self.address, Self.expectedTree))
      await fake.stop()
    }
  }

  @Test("read and write send ReadValue({}) and WriteValue(value, {type: request|command})")
  func readWrite() async throws {
    try await PrivateBus.with { bus in
      let (fake, device, central, _, task) = try await Self.resolved(bus)
      defer { task.cancel() }

      #expect(try await central.read(Self.levelID, timeout: 5) == [87])
      let reads = fake.calls("ReadValue")
      #expect(reads.map(\.path) == [device.level])
      #expect(reads.first?.arguments == [.properties([:])])

      try await central.write(Self.controlID, value: [1, 2, 3], withResponse: true, timeout: 5)
      try await central.write(Self.controlID, value: [], withResponse: false, timeout: 5)
      let writes = fake.calls("WriteValue")
      #expect(writes.map(\.path) == [device.control, device.control])
      #expect(
        writes.map(\.arguments) == [
          [.bytes([1, 2, 3]), .properties(["type": .string("request")])],
          [.bytes([]), .properties(["type": .string("command")])],
        ])
      await fake.stop()
    }
  }

  @Test(
    "StartNotify: 200 notifications arrive as 200 events in order; Value changes while not notifying don't"
  )
  func notifications() async throws {
    try await PrivateBus.with { bus in
      let (fake, device, central, events, task) = try await Self.resolved(bus)
      defer { task.cancel() }
      let id = Self.levelID
      func notifications() -> [[UInt8]] {
        events.all.compactMap { if case .notification(id, let v) = $0 { v } else { nil } }
      }

      // A read updates Value (BlueZ signals it), and a Value change without Notifying: no events.
      _ = try await central.read(id, timeout: 5)
      try await fake.notify(device.level, [0xEE])

      try await central.setNotify(id, enabled: true, method: .start, timeout: 5)
      #expect(fake.calls("StartNotify").map(\.path) == [device.level])
      try await events.next { $0 == .notifyingChanged(id, true) }
      // Starting again is harmless.
      try await central.setNotify(id, enabled: true, method: .start, timeout: 5)

      let values = (0..<200).map { [UInt8($0 >> 8), UInt8($0 & 0xFF), 0x42] }
      for value in values { try await fake.notify(device.level, value) }
      try await events.next { $0 == .notification(id, values.last!) }
      #expect(notifications() == values)

      try await central.setNotify(id, enabled: false, timeout: 5)
      try await events.next { $0 == .notifyingChanged(id, false) }
      try await fake.notify(device.level, [0xEF])
      // Stopping again: BlueZ answers "No notify session started", which is fine.
      try await central.setNotify(id, enabled: false, timeout: 5)

      // A sentinel after turning it on again proves that nothing came in between.
      try await central.setNotify(id, enabled: true, method: .start, timeout: 5)
      try await fake.notify(device.level, [0xF0])
      try await events.next { $0 == .notification(id, [0xF0]) }
      #expect(notifications() == values + [[0xF0]])
      await fake.stop()
    }
  }

  @Test(
    "AcquireNotify: 2,000 values through the socket in order; those sent before a disconnection are delivered before it"
  )
  func acquiredNotifications() async throws {
    try await PrivateBus.with { bus in
      let (fake, device, central, events, task) = try await Self.resolved(bus)
      defer { task.cancel() }
      let id = Self.levelID
      func notifications() -> [[UInt8]] {
        events.all.compactMap { if case .notification(id, let v) = $0 { v } else { nil } }
      }

      try await central.setNotify(id, enabled: true, timeout: 5)
      #expect(fake.calls("AcquireNotify").map(\.path) == [device.level])
      #expect(fake.calls("StartNotify").isEmpty)
      try await events.next { $0 == .notifyingChanged(id, true) }
      #expect(await central.statistics.acquiredSockets == 1)
      // Values that come as D-Bus signals while acquired are no notifications (BlueZ sends none).
      try await fake.notify(device.level, [0xEE])

      let values = (0..<2000).map { [UInt8($0 >> 8), UInt8($0 & 0xFF), 0x42] }
      for value in values { fake.notifyAcquired(device.level, value) }
      try await events.next { $0 == .notification(id, values.last!) }
      #expect(notifications() == values)

      // Values in the socket when the link drops come out before the disconnection.
      let last = (0..<100).map { [0xD0, UInt8($0)] }
      for value in last { fake.notifyAcquired(device.level, value) }
      try await fake.change(
        device.path, "org.bluez.Device1",
        ["Connected": .bool(false), "ServicesResolved": .bool(false)])
      try await events.next { $0 == .connectionChanged(Self.address, connected: false) }
      let disconnection = try #require(
        events.all.firstIndex { $0 == .connectionChanged(Self.address, connected: false) })
      let lastValue = try #require(events.all.lastIndex { $0 == .notification(id, last.last!) })
      #expect(lastValue < disconnection)
      #expect(notifications() == values + last)
      #expect(fake.acquiredHungUp(device.level))
      #expect(await central.statistics.acquiredSockets == 0)
      await fake.stop()
    }
  }

  @Test(
    "a read of the backlog threshold's worth of waiting values reports a backlog, once per socket; one value fewer, or values read as they come, report none"
  )
  func acquiredBacklog() async throws {
    try await PrivateBus.with { bus in
      let (fake, device, central, events, task) = try await Self.resolved(bus)
      defer { task.cancel() }
      let id = Self.levelID
      let threshold = AcquiredNotify.currentBacklogThreshold()
      func backlogs() -> [CentralEvent] {
        events.all.filter { if case .notificationBacklog = $0 { true } else { false } }
      }
      func values(_ tag: UInt8, _ count: Int) -> [[UInt8]] {
        (0..<count).map { [tag, UInt8($0 & 0xFF), UInt8($0 >> 8)] }
      }

      // One value fewer than the threshold waiting when the socket comes: no backlog.
      let fewer = values(0xA0, threshold - 1)
      fake.state.acquirePrefill.withLock { $0 = fewer }
      try await central.setNotify(id, enabled: true, timeout: 5)
      try await events.next { $0 == .notification(id, fewer.last!) }
      #expect(backlogs().isEmpty)

      // A new socket with the threshold's worth waiting: reported once, after its values.
      try await central.setNotify(id, enabled: false, timeout: 5)
      try await fake.endAcquired(device.level)
      try await events.next { $0 == .notifyingChanged(id, false) }
      let waiting = values(0xB0, threshold)
      fake.state.acquirePrefill.withLock { $0 = waiting }
      try await central.setNotify(id, enabled: true, timeout: 5)
      try await events.next { $0 == .notificationBacklog(id, waiting: threshold) }
      let all = events.all
      let backlog = all.lastIndex { $0 == .notificationBacklog(id, waiting: threshold) }
      let lastValue = all.lastIndex { $0 == .notification(id, waiting.last!) }
      #expect(backlog != nil && lastValue != nil && lastValue! < backlog!)
      #expect(await central.statistics.notifyBacklogs == 1)

      // Values read as they come report nothing more.
      for index in 0..<20 {
        fake.notifyAcquired(device.level, [0xC0, UInt8(index)])
        try await events.next { $0 == .notification(id, [0xC0, UInt8(index)]) }
      }
      #expect(await central.statistics.notifyBacklogs == 1)
      #expect(backlogs().count == 1)
      await fake.stop()
    }
  }

  @Test(
    "the backlog threshold is half of the short values bluetoothd's send buffer holds, between 8 and one read"
  )
  func backlogThreshold() {
    #expect(AcquiredNotify.backlogThreshold(sendBuffer: 212_992) == 139)  // Linux's default
    #expect(AcquiredNotify.backlogThreshold(sendBuffer: 65_536) == 42)
    #expect(AcquiredNotify.backlogThreshold(sendBuffer: 4_096) == 8)
    #expect(AcquiredNotify.backlogThreshold(sendBuffer: 8 << 20) == AcquiredNotify.readLimit)
  }

  /// What ``AcquiredNotify/backlogThreshold(sendBuffer:)`` rests on: the queue of an `AF_UNIX`
  /// `SOCK_SEQPACKET` pair (the socket of `AcquireNotify`) is bounded by the sending end's
  /// buffer, which is bluetoothd's, about ``AcquiredNotify/bytesPerQueuedValue`` bytes per short
  /// value; the gateway's `SO_RCVBUF` changes nothing.
  @Test("the receive buffer of a socket pair bounds nothing: the sending end's buffer does")
  func socketPairCapacity() throws {
    func capacity(receiveBuffer: Int32?, sendBuffer: Int32?) throws -> Int {
      var fds: [Int32] = [-1, -1]
      try #require(
        socketpair(
          AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0, &fds) == 0)
      defer {
        close(fds[0])
        close(fds[1])
      }
      func set(_ fd: Int32, _ option: Int32, _ value: Int32?) {
        guard var value else { return }
        _ = setsockopt(fd, SOL_SOCKET, option, &value, socklen_t(MemoryLayout<Int32>.size))
      }
      set(fds[1], SO_RCVBUF, receiveBuffer)
      set(fds[0], SO_SNDBUF, sendBuffer)
      var sent = 0
      let value: [UInt8] = [0x10, 0x48, 0x00, 0x00]
      while sent < 100_000,
        value.withUnsafeBytes({ Glibc.send(fds[0], $0.baseAddress, $0.count, 0) }) == 4
      {
        sent += 1
      }
      return sent
    }
    let plain = try capacity(receiveBuffer: nil, sendBuffer: nil)
    #expect(plain > 0 && plain < 100_000)
    // The estimate the threshold uses, within a quarter of what this kernel queues.
    var sendBuffer: Int32 = 0
    var length = socklen_t(MemoryLayout<Int32>.size)
    var fds: [Int32] = [-1, -1]
    try #require(socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue), 0, &fds) == 0)
    _ = getsockopt(fds[0], SOL_SOCKET, SO_SNDBUF, &sendBuffer, &length)
    close(fds[0])
    close(fds[1])
    let estimate = Int(sendBuffer) / AcquiredNotify.bytesPerQueuedValue
    #expect(
      abs(estimate - plain) <= plain / 4,
      "\(sendBuffer) bytes: \(plain) queued, estimate \(estimate)")
    #expect(try capacity(receiveBuffer: 4 << 20, sendBuffer: nil) == plain)
    #expect(try capacity(receiveBuffer: 4096, sendBuffer: nil) == plain)
    #expect(try capacity(receiveBuffer: nil, sendBuffer: 4 << 20) > plain)
  }

  @Test(
    "values of an acquired socket that come fast gather per batch window: 100 values 5 ms apart in a few reads, in order; a lone value after a quiet spell at once"
  )
  func acquiredBatchWindow() async throws {
    try await PrivateBus.with { bus in
      // A window of 5 s: a lone value held back a window (the defect) costs 5 s, far from a
      // test task that resumes a second or two late under full-suite load.
      let (fake, device, central, events, task) = try await Self.resolved(
        bus, batchWindow: .seconds(5))
      defer { task.cancel() }
      let id = Self.levelID
      try await central.setNotify(id, enabled: true, timeout: 5)
      let sent = (0..<100).map { [0xD0, UInt8($0)] }
      let began = ContinuousClock.now
      for value in sent {
        fake.notifyAcquired(device.level, value)
        try await Task.sleep(for: .milliseconds(5))
      }
      try await events.next { $0 == .notification(id, sent.last!) }
      let seconds = (ContinuousClock.now - began).components.seconds
      let received = events.all.compactMap { event -> [UInt8]? in
        if case .notification(id, let value) = event { value } else { nil }
      }
      #expect(received == sent)
      // Half a second or more of values (longer on a busy machine), one read per window once
      // they came fast (each value read at once without the window: about 100).
      let turns = await central.notificationReadingTurns
      #expect(turns <= Int(seconds) + 4, "\(turns) reads in \(seconds) s")
      // Quiet for longer than the window: the next value is read at once, not a window later.
      try await Task.sleep(for: .milliseconds(5500))
      let start = ContinuousClock.now
      fake.notifyAcquired(device.level, [0xD1])
      try await events.next { $0 == .notification(id, [0xD1]) }
      #expect(ContinuousClock.now - start < .seconds(3))
      await fake.stop()
    }
  }

  @Test("AcquireNotify off: the socket is drained and shut, no StopNotify; on again acquires anew")
  func acquiredOff() async throws {
    try await PrivateBus.with { bus in
      let (fake, device, central, events, task) = try await Self.resolved(bus)
      defer { task.cancel() }
      let id = Self.levelID
      try await central.setNotify(id, enabled: true, timeout: 5)
      fake.notifyAcquired(device.level, [1])
      fake.notifyAcquired(device.level, [])  // an empty value is a value, not the end
      fake.notifyAcquired(device.level, [2])
      try await events.next { $0 == .notification(id, [2]) }
      #expect(events.all.contains(.notification(id, [])))
      try await central.setNotify(id, enabled: false, timeout: 5)
      #expect(fake.calls("StopNotify").isEmpty)
      #expect(fake.acquiredHungUp(device.level))
      try await fake.endAcquired(device.level)
      try await events.next { $0 == .notifyingChanged(id, false) }
      try await central.setNotify(id, enabled: true, timeout: 5)
      #expect(fake.calls("AcquireNotify").count == 2)
      fake.notifyAcquired(device.level, [3])
      try await events.next { $0 == .notification(id, [3]) }
      await fake.stop()
    }
  }

  @Test(
    "fallbacks: indicate-only and another subscriber use StartNotify; start skips the socket; acquire reports the refusal"
  )
  func notifyFallbacks() async throws {
    try await PrivateBus.with { bus in
      let (fake, device, central, events, task) = try await Self.resolved(bus)
      defer { task.cancel() }
      // BlueZ 5.66 refuses AcquireNotify without the notify flag: StartNotify instead.
      try await central.setNotify(Self.alarmID, enabled: true, timeout: 5)
      #expect(fake.calls("AcquireNotify").map(\.path) == [device.alarm])
      #expect(fake.calls("StartNotify").map(\.path) == [device.alarm])
      try await events.next { $0 == .notifyingChanged(Self.alarmID, true) }
      // `acquire` alone: the refusal is the error.
      try await central.setNotify(Self.alarmID, enabled: false, timeout: 5)
      let refused = await #expect(throws: CentralError.self) {
        try await central.setNotify(Self.alarmID, enabled: true, method: .acquire, timeout: 5)
      }
      #expect(refused?.code == .notPermitted && refused?.detail == "org.bluez.Error.NotSupported")
      // `start`: no socket asked for.
      let before = fake.calls("AcquireNotify").count
      try await central.setNotify(Self.levelID, enabled: true, method: .start, timeout: 5)
      #expect(fake.calls("AcquireNotify").count == before)
      try await central.setNotify(Self.levelID, enabled: false, timeout: 5)
      #expect(fake.calls("StopNotify").map(\.path).last == device.level)
      // A StartNotify session of ours is on: AcquireNotify says InProgress, StartNotify is fine.
      try await central.setNotify(Self.levelID, enabled: true, method: .start, timeout: 5)
      try await central.setNotify(Self.levelID, enabled: true, timeout: 5)
      #expect(await central.statistics.acquiredSockets == 0)
      await fake.stop()
    }
  }

  @Test(
    "off while StartNotify is under way: answered at once, the StopNotify sent after the start; none after a start BlueZ refused"
  )
  func stopDuringStart() async throws {
    try await PrivateBus.with { bus in
      let (fake, device, central, _, task) = try await Self.resolved(bus)
      defer { task.cancel() }
      fake.hang("StartNotify")
      let start = Task {
        try await central.setNotify(Self.levelID, enabled: true, method: .start, timeout: 5)
      }
      try await Task.sleep(for: .milliseconds(300))
      try await central.setNotify(Self.levelID, enabled: false, timeout: 5)
      #expect(fake.calls("StopNotify").isEmpty)
      try await start.value
      #expect(fake.calls("StopNotify").map(\.path) == [device.level])
      // Refused while another client holds the socket: no StopNotify follows.
      fake.holdForeignSocket(device.level)
      let refused = Task {
        try await central.setNotify(Self.levelID, enabled: true, method: .start, timeout: 5)
      }
      try await Task.sleep(for: .milliseconds(300))
      try await central.setNotify(Self.levelID, enabled: false, timeout: 5)
      await #expect(throws: CentralError.self) { try await refused.value }
      #expect(fake.calls("StopNotify").count == 1)
      await fake.stop()
    }
  }

  @Test(
    "a socket acquired by someone else (or left over, bluez/bluez#1376): both ways refused, and never a StopNotify, which BlueZ 5.66 would answer by closing that socket (or crash on)"
  )
  func foreignSocketIsNeverStopped() async throws {
    try await PrivateBus.with { bus in
      let (fake, device, central, _, task) = try await Self.resolved(bus)
      defer { task.cancel() }
      fake.holdForeignSocket(device.level)
      let refused = await #expect(throws: CentralError.self) {
        try await central.setNotify(Self.levelID, enabled: true, timeout: 5)
      }
      #expect(refused?.code == .notPermitted)
      #expect(fake.calls("AcquireNotify").map(\.path) == [device.level])
      #expect(fake.calls("StartNotify").map(\.path) == [device.level])
      // Off: nothing of ours to stop.
      try await central.setNotify(Self.levelID, enabled: false, timeout: 5)
      #expect(fake.calls("StopNotify").isEmpty)
      // The other socket goes: on works again (StartNotify), and off now stops our session.
      try await fake.endAcquired(device.level)
      try await central.setNotify(Self.levelID, enabled: true, method: .start, timeout: 5)
      try await central.setNotify(Self.levelID, enabled: false, timeout: 5)
      #expect(fake.calls("StopNotify").map(\.path) == [device.level])
      await fake.stop()
    }
  }

  @Test("a socket that ends at once without a value moves the characteristic to StartNotify")
  func learnedFallback() async throws {
    try await PrivateBus.with { bus in
      let (fake, device, central, events, task) = try await Self.resolved(bus)
      defer { task.cancel() }
      let id = Self.levelID
      try await central.setNotify(id, enabled: true, timeout: 5)
      try await events.next { $0 == .notifyingChanged(id, true) }
      try await fake.endAcquired(device.level)  // the peripheral's quirk (hbldh/bleak#1885)
      try await Self.until("StartNotify by itself") { !fake.calls("StartNotify").isEmpty }
      #expect(fake.calls("StartNotify").map(\.path) == [device.level])
      try await fake.notify(device.level, [7])
      try await events.next { $0 == .notification(id, [7]) }
      // From now on `auto` goes straight to StartNotify for it.
      try await central.setNotify(id, enabled: true, timeout: 5)
      #expect(fake.calls("AcquireNotify").count == 1)
      await fake.stop()
    }
  }

  @Test("connection errors map to stable codes with the D-Bus name kept")
  func connectErrors() async throws {
    try await PrivateBus.with { bus in
      let fake = try await FakeBlueZ.start(on: bus)
      try await fake.addDevice(Self.deviceAddress)
      let (central, events, task) = BlueZCentralTests.central(bus)
      defer { task.cancel() }
      try await events.next { if case .deviceAppeared = $0 { true } else { false } }

      let unknown = await #expect(throws: CentralError.self) {
        try await central.connect(try BluetoothAddress("00:00:00:00:00:01"), timeout: 5)
      }
      #expect(unknown?.code == .notFound)

      fake.fail("Connect", with: "org.bluez.Error.InProgress")
      let busy = await #expect(throws: CentralError.self) {
        try await central.connect(Self.address, timeout: 5)
      }
      #expect(busy?.code == .inProgress && busy?.detail == "org.bluez.Error.InProgress")

      fake.fail("Connect", with: "org.bluez.Error.Failed", message: "le-connection-abort-by-local")
      let aborted = await #expect(throws: CentralError.self) {
        try await central.connect(Self.address, timeout: 5)
      }
      #expect(aborted?.code == .aborted && aborted?.detail == "org.bluez.Error.Failed")
      #expect(aborted?.message.contains("le-connection-abort-by-local") == true)

      fake.fail("Connect", with: "org.bluez.Error.AlreadyConnected")
      try await central.connect(Self.address, timeout: 5)
      #expect(fake.calls("Connect").count == 3)
      await fake.stop()
    }
  }

  @Test("a connection attempt without answer times out and is cancelled with Disconnect")
  func connectTimeout() async throws {
    try await PrivateBus.with { bus in
      let fake = try await FakeBlueZ.start(on: bus)
      let path = try await fake.addDevice(Self.deviceAddress)
      // Calls time out after 60 s by default here: a connection that waited for that instead of
      // its own 0.3 s would cost a minute, far from a late test task's seconds.
      let (central, events, task) = BlueZCentralTests.central(bus, callTimeout: .seconds(60))
      defer { task.cancel() }
      try await events.next { if case .deviceAppeared = $0 { true } else { false } }

      fake.hang("Connect")
      let start = ContinuousClock.now
      let timeout = await #expect(throws: CentralError.self) {
        try await central.connect(Self.address, timeout: 0.3)
      }
      let elapsed = ContinuousClock.now - start
      #expect(timeout?.code == .timeout)
      #expect(timeout?.detail == "org.freedesktop.DBus.Error.NoReply")
      #expect(elapsed >= .milliseconds(300) && elapsed < .seconds(20))
      #expect(fake.calls("Disconnect").map(\.path) == [path])
      await fake.stop()
    }
  }

  @Test("GATT errors: not connected, unknown characteristic, BlueZ refusals, malformed replies")
  func gattErrors() async throws {
    try await PrivateBus.with { bus in
      let (fake, device, central, events, task) = try await Self.resolved(bus)
      defer { task.cancel() }
      let odd = try await fake.addCharacteristic(
        service: device.path + "/service0010", handle: 0x15, uuid: Self.long(.init(uuid16: 0x2A1A)),
        flags: ["read"], readReply: .string("surprise"))
      let oddID = GATTCharacteristicID(
        address: Self.address, service: Self.battery, characteristic: .init(uuid16: 0x2A1A))
      try await Self.until("the new characteristic is mirrored") {
        await central.statistics.gattObjects == 7
      }

      let malformed = await #expect(throws: CentralError.self) {
        try await central.read(oddID, timeout: 5)
      }
      #expect(malformed?.code == .bluezError)
      #expect(malformed?.message.contains("instead of 'ay'") == true)
      #expect(fake.calls("ReadValue").map(\.path) == [odd])

      let missing = await #expect(throws: CentralError.self) {
        try await central.read(
          GATTCharacteristicID(
            address: Self.address, service: Self.custom, characteristic: Self.level),
          timeout: 5)
      }
      #expect(missing?.code == .unknownCharacteristic)

      fake.fail("ReadValue", with: "org.bluez.Error.NotPermitted", message: "Read not permitted")
      let refused = await #expect(throws: CentralError.self) {
        try await central.read(Self.levelID, timeout: 5)
      }
      #expect(refused?.code == .notPermitted && refused?.detail == "org.bluez.Error.NotPermitted")

      fake.fail("WriteValue", with: "org.bluez.Error.InProgress")
      let busy = await #expect(throws: CentralError.self) {
        try await central.write(Self.controlID, value: [1], withResponse: true, timeout: 5)
      }
      #expect(busy?.code == .inProgress)

      fake.fail("WriteValue", with: "org.bluez.Error.Failed", message: "Not connected")
      let gone = await #expect(throws: CentralError.self) {
        try await central.write(Self.controlID, value: [1], withResponse: false, timeout: 5)
      }
      #expect(gone?.code == .notConnected && gone?.detail == "org.bluez.Error.Failed")

      fake.fail("StartNotify", with: "org.bluez.Error.NotConnected")
      let notConnected = await #expect(throws: CentralError.self) {
        try await central.setNotify(Self.levelID, enabled: true, method: .start, timeout: 5)
      }
      #expect(notConnected?.code == .notConnected)
      // Not connected is no reason to try StartNotify after AcquireNotify.
      fake.fail("AcquireNotify", with: "org.bluez.Error.Failed", message: "Not connected")
      let starts = fake.calls("StartNotify").count
      let stillDown = await #expect(throws: CentralError.self) {
        try await central.setNotify(Self.levelID, enabled: true, timeout: 5)
      }
      #expect(stillDown?.code == .notConnected)
      #expect(fake.calls("StartNotify").count == starts)
      #expect(notConnected?.code == .notConnected)

      // After the link goes down nothing is sent to BlueZ.
      try await fake.change(device.path, "org.bluez.Device1", ["Connected": .bool(false)])
      try await events.next { $0 == .connectionChanged(Self.address, connected: false) }
      let reads = fake.calls("ReadValue").count
      let down = await #expect(throws: CentralError.self) {
        try await central.read(Self.levelID, timeout: 5)
      }
      #expect(down?.code == .notConnected)
      #expect(fake.calls("ReadValue").count == reads)
      // Turning notifications off on a disconnected device is fine.
      try await central.setNotify(Self.levelID, enabled: false, timeout: 5)
      await fake.stop()
    }
  }

  @Test(
    "a connection asked for as the central starts (a device the earlier run left) waits for the first snapshot instead of failing unavailable"
  )
  func connectAtStartup() async throws {
    try await PrivateBus.with { bus in
      let fake = try await FakeBlueZ.start(on: bus)
      let path = try await fake.addDevice(Self.deviceAddress)
      let (central, events, task) = BlueZCentralTests.central(bus)
      defer { task.cancel() }
      // At once, before the session has opened its connection and mirrored bluetoothd.
      try await central.connect(Self.address, timeout: 5)
      #expect(fake.calls("Connect").map(\.path) == [path])
      try await events.next { $0 == .connectionChanged(Self.address, connected: true) }
      await fake.stop()
    }
  }

  @Test("without bluetoothd at start, a connection fails unavailable at once, not after a wait")
  func connectWithoutStackAtStartup() async throws {
    try await PrivateBus.with { bus in
      // A startup wait of 60 s, so that the defect (waiting it out) costs a minute and a test
      // task that resumes seconds late under full-suite load does not look like it.
      let (central, events, task) = BlueZCentralTests.central(bus, startupWait: .seconds(60))
      defer { task.cancel() }
      _ = events
      let started = ContinuousClock.now
      let error = await #expect(throws: CentralError.self) {
        try await central.connect(Self.address, timeout: 60)
      }
      #expect(error?.code == .unavailable)
      #expect(
        ContinuousClock.now - started < .seconds(20),
        "the startup wait is for a stack that answers")
    }
  }

  @Test("without bluetoothd, operations report unavailable")
  func unavailable() async throws {
    try await PrivateBus.with { bus in
      let fake = try await FakeBlueZ.start(on: bus)
      let (central, events, task) = BlueZCentralTests.central(bus)
      defer { task.cancel() }
      try await events.next(where: BlueZCentralTests.isAdapter("hci0"))
      await fake.stop()
      try await events.next { $0 == .stackLost }
      let connect = await #expect(throws: CentralError.self) {
        try await central.connect(Self.address, timeout: 1)
      }
      #expect(connect?.code == .unavailable)
      let read = await #expect(throws: CentralError.self) {
        try await central.read(Self.levelID, timeout: 1)
      }
      #expect(read?.code == .unavailable)
      try await central.disconnect(Self.address)
      #expect(await central.statistics.gattObjects == 0)
    }
  }
}
