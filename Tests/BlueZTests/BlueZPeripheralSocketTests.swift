import BlueZ
import BridgeCore
import BusTestSupport
import DBus
import Glibc
import Logging
import Testing

/// The peripheral role's notification socket (`NotifyAcquired`, `AcquireNotify`) against a
/// private dbus-daemon, with the test playing bluetoothd: it calls `AcquireNotify` as BlueZ
/// 5.66 does when a central subscribes, and reads the datagrams from the socket it gets.
@Suite(
  "BlueZPeripheral notification socket",
  .enabled(if: PrivateBus.isAvailable, "dbus-daemon is not installed (apt-get install dbus)"),
  .timeLimit(.minutes(1)))
struct BlueZPeripheralSocketTests {
  typealias Base = BlueZPeripheralTests

  /// A fake bluetoothd and a peripheral advertising the test definition, with a short grace
  /// for unseen subscriptions.
  static func advertising(
    _ bus: PrivateBus, grace: Duration = .milliseconds(300),
    severalCentrals: SeveralCentralsPath = .signals
  ) async throws
    -> (FakeBlueZ, BlueZPeripheral, Recorder<PeripheralEvent>, Task<Void, Never>)
  {
    let fake = try await FakeBlueZ.start(on: bus)
    var logger = Logger(label: "test.bluez.peripheral")
    logger.logLevel = .critical
    let peripheral = BlueZPeripheral(
      configuration: BlueZPeripheralConfiguration(
        bus: BlueZSessionConfiguration(busAddress: bus.address, callTimeout: .seconds(5)),
        severalCentrals: severalCentrals,
        unseenSubscriptionGrace: grace),
      logger: logger)
    let events = Recorder(peripheral.peripheralEvents())
    let task = Task { await peripheral.run() }
    try await peripheral.startPeripheral(Base.definition)
    try await events.next("advertising", where: Base.isState(.advertising))
    return (fake, peripheral, events, task)
  }

  /// A device connected through `hci0`, as bluetoothd shows one; returns its path.
  @discardableResult
  static func connected(_ fake: FakeBlueZ, _ address: String) async throws -> String {
    let path = try await fake.addDevice(address)
    try await fake.change(path, "org.bluez.Device1", ["Connected": .bool(true)])
    return path
  }

  /// The `PropertiesChanged` signals of the object at `path` from now on.
  static func propertiesChanged(_ fake: FakeBlueZ, _ path: String) async throws -> Recorder<
    DBusSignal
  > {
    Recorder(
      try await fake.connection.signals(
        matching: DBusMatchRule(
          interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged",
          path: try DBusObjectPath(path))))
  }

  /// Calls `AcquireNotify` as bluetoothd does for `central` with `mtu`.
  static func acquire(_ fake: FakeBlueZ, central: String = Base.central, mtu: UInt16)
    async throws -> (DBusFileDescriptor, UInt16)
  {
    let path = try Base.characteristicPath(fake)
    let reply = try await fake.callApplication(
      path, "AcquireNotify", [try FakeBlueZ.options(central: central, mtu: mtu)])
    guard reply.count == 2, case .unixFD(let fd) = reply[0], case .uint16(let granted) = reply[1]
    else { throw HarnessError("AcquireNotify replied \(reply)") }
    return (fd, granted)
  }

  /// Reads one datagram, waiting up to `timeout`; `nil` at the end (hang-up) or timeout.
  /// Polls without blocking (tests share the cooperative threads).
  static func read(_ fd: DBusFileDescriptor, timeout: Duration = .seconds(5)) async -> [UInt8]? {
    var probe = pollfd(fd: fd.rawValue, events: Int16(POLLIN), revents: 0)
    let deadline = ContinuousClock.now + timeout
    while poll(&probe, 1, 0) <= 0 {
      guard ContinuousClock.now < deadline else { return nil }
      try? await Task.sleep(for: .milliseconds(2))
    }
    var buffer = [UInt8](repeating: 0, count: 1024)
    let count = buffer.withUnsafeMutableBytes {
      recv(fd.rawValue, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT))
    }
    if count == 0, probe.revents & Int16(POLLHUP) != 0 { return nil }
    return count >= 0 ? Array(buffer[..<count]) : nil
  }

  /// Whether the other end hung up (after every datagram queued was read).
  static func hungUp(_ fd: DBusFileDescriptor) -> Bool {
    var probe = pollfd(fd: fd.rawValue, events: Int16(POLLIN), revents: 0)
    return poll(&probe, 1, 0) > 0 && probe.revents & Int16(POLLHUP) != 0
  }

  @Test(
    "AcquireNotify hands bluetoothd a socket with the central's MTU; values go through it in order, with back-pressure, none lost, no signal"
  )
  func valuesGoThroughTheSocket() async throws {
    try await PrivateBus.with { bus in
      let (fake, peripheral, events, task) = try await Self.advertising(bus)
      defer { task.cancel() }
      let path = try Base.characteristicPath(fake)
      #expect(
        try fake.application().objects[path]?[Base.characteristicInterface]?["NotifyAcquired"]
          == .bool(false))
      let signals = try await Self.propertiesChanged(fake, path)

      let (fd, mtu) = try await Self.acquire(fake, mtu: 185)
      #expect(mtu == 185)
      let central = try BluetoothAddress(Base.central)
      try await events.next("subscribed") { $0 == .subscribed(central: central, mtu: 185) }

      // Far more than the socket holds: the sender must wait for the reader.
      let count = 3000
      let sender = Task { () throws(CentralError) -> [NotificationPath] in
        var paths: [NotificationPath] = []
        for index in 0..<count {
          paths.append(
            try await peripheral.notify(
              [UInt8(index >> 8), UInt8(index & 0xFF)] + Array(repeating: 0xAB, count: 18)))
        }
        return paths
      }
      try await Task.sleep(for: .milliseconds(300))
      let queued = await peripheral.statistics.notifications
      #expect(queued < count, "the sender never waited: \(queued) queued without a reader")

      var received: [[UInt8]] = []
      while received.count < count, let value = await Self.read(fd) { received.append(value) }
      let paths = try await sender.value
      #expect(paths.allSatisfy { $0 == .flowControlled })
      #expect(received.count == count)
      #expect(
        received.map { Int($0[0]) << 8 | Int($0[1]) } == Array(0..<count),
        "values lost or out of order")
      #expect(received.allSatisfy { $0.count == 20 })
      #expect(signals.all.isEmpty, "a value went as a signal too")
    }
  }

  @Test(
    "bluetoothd closing the socket ends the subscription; the next subscription gets a new socket")
  func hangUpEndsTheSubscription() async throws {
    try await PrivateBus.with { bus in
      let (fake, peripheral, events, task) = try await Self.advertising(bus)
      defer { task.cancel() }
      let central = try BluetoothAddress(Base.central)
      var (fd, _) = try await Self.acquire(fake, mtu: 23)
      try await events.next("subscribed") { $0 == .subscribed(central: central, mtu: 23) }
      #expect(try await peripheral.notify([1, 2, 3]) == .flowControlled)
      #expect(await Self.read(fd) == [1, 2, 3])

      fd = try DBusFileDescriptor(duplicating: 0)  // drops (closes) the acquired end
      try await events.next("unsubscribed") { $0 == .unsubscribed(central: central) }
      let after = await #expect(throws: CentralError.self) { try await peripheral.notify([4]) }
      #expect(after?.code == .notConnected)

      let (again, _) = try await Self.acquire(fake, mtu: 247)
      try await events.next("subscribed again") { $0 == .subscribed(central: central, mtu: 247) }
      #expect(try await peripheral.notify([5]) == .flowControlled)
      #expect(await Self.read(again) == [5])
      _ = fd
    }
  }

  @Test(
    "a second connected device retires the socket once bluetoothd read what was queued; then values go as signals and AcquireNotify is refused with NotSupported"
  )
  func secondDeviceRetiresTheSocket() async throws {
    try await PrivateBus.with { bus in
      let (fake, peripheral, events, task) = try await Self.advertising(bus)
      defer { task.cancel() }
      let path = try Base.characteristicPath(fake)
      try await Self.connected(fake, Base.central)
      let (fd, _) = try await Self.acquire(fake, mtu: 23)
      try await events.next("subscribed") { _ in true }
      for index in 0..<10 { try await peripheral.notify([UInt8(index)]) }

      try await Self.connected(fake, Base.stranger)
      // The socket is let go of only once bluetoothd has read what is queued.
      try await Task.sleep(for: .milliseconds(300))
      #expect(!Self.hungUp(fd), "let go of before bluetoothd read the queued values")
      // Everything queued before the retirement is read, then the end.
      var received: [[UInt8]] = []
      while let value = await Self.read(fd) { received.append(value) }
      #expect(received == (0..<10).map { [UInt8($0)] })
      #expect(Self.hungUp(fd))
      // No subscription seen after that: the new device may have subscribed unseen, one
      // subscription of unknown origin.
      try await events.next("a possible unseen subscription") {
        $0 == .subscribed(central: nil, mtu: nil)
      }

      let signals = try await Self.propertiesChanged(fake, path)
      // The subscription stays: bluetoothd still counts it.
      #expect(try await peripheral.notify([0xEE]) == .unpaced)
      try await Base.eventually("the value as a signal") { !signals.all.isEmpty }

      let refused = await #expect(throws: DBusError.self) {
        _ = try await Self.acquire(fake, central: Base.stranger, mtu: 23)
      }
      #expect(refused?.name == "org.bluez.Error.NotSupported")
    }
  }

  @Test(
    "several_centrals socket: granted with two devices connected and kept; every other device counts as a subscriber once connected for the grace, the socket's own central too after it left and came back"
  )
  func sharedSocket() async throws {
    try await PrivateBus.with { bus in
      let (fake, peripheral, events, task) = try await Self.advertising(
        bus, severalCentrals: .socket)
      defer { task.cancel() }
      let central = try BluetoothAddress(Base.central)
      let stranger = try BluetoothAddress(Base.stranger)
      let brief = try BluetoothAddress("AA:BB:CC:00:11:22")
      let late = try BluetoothAddress("AA:BB:CC:00:11:33")
      let path = try Base.characteristicPath(fake)
      let signals = try await Self.propertiesChanged(fake, path)
      let own = try await Self.connected(fake, Base.central)
      let other = try await Self.connected(fake, Base.stranger)
      // Refused with NotSupported under `signals` (the test above): granted here.
      let (fd, _) = try await Self.acquire(fake, mtu: 247)
      try await events.next("subscribed") { $0 == .subscribed(central: central, mtu: 247) }
      #expect(
        !events.all.contains(.subscribed(central: stranger, mtu: nil)), "counted before the grace")
      try await events.next("the other device, once the grace is over") {
        $0 == .subscribed(central: stranger, mtu: nil)
      }
      #expect(try await peripheral.notify([1, 2, 3]) == .flowControlled)
      #expect(await Self.read(fd) == [1, 2, 3])
      #expect(!Self.hungUp(fd), "the socket is let go of with two devices connected")

      try await fake.change(other, "org.bluez.Device1", ["Connected": .bool(false)])
      try await events.next("the other device's subscription ends") {
        $0 == .unsubscribed(central: stranger)
      }
      // A device that connects and leaves within the grace is never counted; one that
      // connects after the socket was granted and stays is.
      let third = try await fake.addDevice("\(brief)")
      try await fake.change(third, "org.bluez.Device1", ["Connected": .bool(true)])
      try await fake.change(third, "org.bluez.Device1", ["Connected": .bool(false)])
      try await Self.connected(fake, "\(late)")
      try await events.next("a device connected after the grant") {
        $0 == .subscribed(central: late, mtu: nil)
      }
      // The socket's own central leaves (bluetoothd keeps the socket for the others) and
      // comes back: it may subscribe unseen now, like any other device.
      try await fake.change(own, "org.bluez.Device1", ["Connected": .bool(false)])
      try await events.next("the socket's central left") { $0 == .unsubscribed(central: central) }
      try await fake.change(own, "org.bluez.Device1", ["Connected": .bool(true)])
      try await events.next("the socket's central, back") {
        $0 == .subscribed(central: central, mtu: nil)
      }
      #expect(try await peripheral.notify([4]) == .flowControlled)
      #expect(await Self.read(fd) == [4])
      #expect(!events.all.contains { $0 == .subscribed(central: brief, mtu: nil) })
      #expect(signals.all.isEmpty, "a value went as a signal")
    }
  }

  @Test(
    "the socket's central disconnecting ends its subscription at once; the socket goes when another device connects (bluetoothd is late to end it while it fails to send its queue)"
  )
  func centralDisconnectEndsTheSubscription() async throws {
    try await PrivateBus.with { bus in
      let (fake, peripheral, events, task) = try await Self.advertising(bus)
      defer { task.cancel() }
      let central = try BluetoothAddress(Base.central)
      let device = try await Self.connected(fake, Base.central)
      let (fd, _) = try await Self.acquire(fake, mtu: 23)
      try await events.next("subscribed") { $0 == .subscribed(central: central, mtu: 23) }
      // A transfer streams through the socket.
      try await peripheral.notify([0])

      try await fake.change(device, "org.bluez.Device1", ["Connected": .bool(false)])
      try await events.next("unsubscribed") { $0 == .unsubscribed(central: central) }
      let after = await #expect(throws: CentralError.self) { try await peripheral.notify([1]) }
      #expect(after?.code == .notConnected)

      // A new central connects before bluetoothd let go of the old one's subscription: it may
      // have subscribed through the old socket, unseen.
      try await Self.connected(fake, Base.stranger)
      try await events.next("a possible unseen subscription") {
        $0 == .subscribed(central: nil, mtu: nil)
      }
      while await Self.read(fd, timeout: .seconds(2)) != nil {}
      #expect(Self.hungUp(fd))
      #expect(try await peripheral.notify([2]) == .unpaced)
    }
  }

  @Test(
    "a subscription seen after the socket was let go of means no unseen one is counted"
  )
  func seenSubscriptionIsNotCountedTwice() async throws {
    try await PrivateBus.with { bus in
      // A grace the steps below fit in under load (with 300 ms the grace ended before the
      // subscription was seen on a busy machine, and an unseen one was counted, rightly).
      let grace: Duration = .seconds(3)
      let (fake, _, events, task) = try await Self.advertising(bus, grace: grace)
      defer { task.cancel() }
      try await Self.connected(fake, Base.central)
      let (fd, _) = try await Self.acquire(fake, mtu: 23)
      try await events.next("subscribed") { _ in true }
      try await Self.connected(fake, Base.stranger)
      while await Self.read(fd, timeout: .seconds(2)) != nil {}
      #expect(Self.hungUp(fd))
      // The new central subscribes: AcquireNotify refused, then StartNotify, as bluetoothd does.
      await #expect(throws: DBusError.self) {
        _ = try await Self.acquire(fake, central: Base.stranger, mtu: 23)
      }
      let released = ContinuousClock.now
      try await fake.callApplication(try Base.characteristicPath(fake), "StartNotify")
      // Past the grace (counted from the release, which came before `released`).
      try await Task.sleep(until: released + grace + .milliseconds(500))
      #expect(events.all.filter { $0 == .subscribed(central: nil, mtu: nil) }.count == 1)
    }
  }

  @Test("with notify_socket off the characteristic offers no socket")
  func socketCanBeTurnedOff() async throws {
    try await PrivateBus.with { bus in
      let fake = try await FakeBlueZ.start(on: bus)
      var logger = Logger(label: "test.bluez.peripheral")
      logger.logLevel = .critical
      let peripheral = BlueZPeripheral(
        configuration: BlueZPeripheralConfiguration(
          bus: BlueZSessionConfiguration(busAddress: bus.address, callTimeout: .seconds(5)),
          notifySocket: false),
        logger: logger)
      let events = Recorder(peripheral.peripheralEvents())
      let task = Task { await peripheral.run() }
      defer { task.cancel() }
      try await peripheral.startPeripheral(Base.definition)
      try await events.next("advertising", where: Base.isState(.advertising))
      let path = try Base.characteristicPath(fake)
      #expect(
        try fake.application().objects[path]?[Base.characteristicInterface]?["NotifyAcquired"]
          == nil)
      await #expect(throws: DBusError.self) { _ = try await Self.acquire(fake, mtu: 23) }
    }
  }
}
