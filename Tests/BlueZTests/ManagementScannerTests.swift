import BridgeCore
import Glibc
import Synchronization
import Testing

@testable import BlueZ

/// The test's end of a socket pair, playing the kernel's control channel.
final class FakeKernel: Sendable {
  let fd: Int32
  let scannerEnd: Int32

  init() throws {
    var fds: [Int32] = [0, 0]
    guard socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue), 0, &fds) == 0 else {
      throw CentralError(.bluezError, message: "socketpair failed")
    }
    fd = fds[0]
    scannerEnd = fds[1]
  }

  deinit { close(fd) }

  /// The next packet the scanner wrote, or `nil` after `timeout` seconds (polled without
  /// blocking a thread of the cooperative pool, which the scanner's callers need).
  func read(timeout: Double = 5) async -> [UInt8]? {
    let deadline = ContinuousClock.now + .milliseconds(Int64(timeout * 1000))
    var buffer = [UInt8](repeating: 0, count: 512)
    // One read after the deadline too: a sleep that overran it (a busy machine) still sees
    // what arrived meanwhile.
    while true {
      let count = buffer.withUnsafeMutableBytes {
        recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT))
      }
      if count > 0 { return Array(buffer[..<count]) }
      guard ContinuousClock.now < deadline else { return nil }
      try? await Task.sleep(for: .milliseconds(5))
    }
  }

  func write(_ packet: [UInt8]) {
    _ = packet.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
  }

  /// A Command Complete for `opcode` on controller `index`.
  func answer(_ opcode: UInt16, status: UInt8, index: UInt8 = 0) {
    write([
      0x01, 0x00, index, 0x00, 0x04, 0x00, UInt8(opcode & 0xFF), UInt8(opcode >> 8), status, 0x06,
    ])
  }

  /// A Discovering event.
  func discovering(_ on: Bool, index: UInt8 = 0) {
    write([0x13, 0x00, index, 0x00, 0x02, 0x00, 0x06, on ? 1 : 0])
  }
}

/// What the scanner delivered.
final class Delivered: Sendable {
  let events = Mutex<[CentralEvent]>([])
  let batches = Mutex(0)
  var sink: @Sendable ([CentralEvent]) -> Void {
    { batch in
      self.events.withLock { $0 += batch }
      self.batches.withLock { $0 += 1 }
    }
  }
  var all: [CentralEvent] { events.withLock { $0 } }
}

@Suite(
  "The management scanner against a fake kernel (a socket pair)", .serialized,
  .timeLimit(.minutes(1)))
struct ManagementScannerTests {
  let kernel: FakeKernel
  let delivered = Delivered()
  let scanner: ManagementScanner

  init() throws {
    kernel = try FakeKernel()
    scanner = try ManagementScanner(
      socket: kernel.scannerEnd, maxDevices: 100, deliver: delivered.sink)
  }

  /// Starts discovery on controller 0, answering as the kernel.
  func started() async throws {
    async let start: Void = scanner.start(index: 0, filter: DiscoveryFilter())
    #expect(await kernel.read() == ManagementPacket.startDiscovery(index: 0))
    kernel.answer(ManagementPacket.startDiscovery, status: 0)
    try await start
    #expect(scanner.isScanning(index: 0))
  }

  /// Runs a scanner call in a task; its value is the error it threw, if any.
  func outcome(_ body: @escaping @Sendable () async throws(CentralError) -> Void)
    -> Task<CentralError?, Never>
  {
    Task {
      do throws(CentralError) {
        try await body()
        return nil
      } catch {
        return error
      }
    }
  }

  func eventually(_ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + .seconds(5)
    while !condition() && ContinuousClock.now < deadline {
      try? await Task.sleep(for: .milliseconds(10))
    }
    return condition()
  }

  @Test func startWaitsForTheKernelAndBusyIsNoError() async throws {
    let scanner = self.scanner
    let finished = Mutex(false)
    let start = outcome { () async throws(CentralError) in
      try await scanner.start(index: 0, filter: DiscoveryFilter())
      finished.withLock { $0 = true }
    }
    #expect(await kernel.read() == ManagementPacket.startDiscovery(index: 0))
    try await Task.sleep(for: .milliseconds(200))
    #expect(!finished.withLock { $0 }, "start returned before the kernel answered")
    kernel.answer(ManagementPacket.startDiscovery, status: 0)
    #expect(await start.value == nil)
    #expect(finished.withLock { $0 })
    scanner.close()
  }

  @Test func aNewFilterForARunningDiscoveryNeedsNoCommand() async throws {
    try await started()
    try await scanner.start(index: 0, filter: DiscoveryFilter(rssiFloor: -70))
    #expect(await kernel.read(timeout: 0.3) == nil)
    // The new filter applies: a report below its floor is not delivered.
    kernel.write(deviceFound(rssi: -80, data: []))
    kernel.write(deviceFound(rssi: -60, data: []))
    #expect(await eventually { delivered.all.count == 1 })
    // Stopping still stops it (it is the scanner's own).
    async let stopped: Void = scanner.stop(index: 0)
    #expect(await kernel.read() == ManagementPacket.stopDiscovery(index: 0))
    kernel.answer(ManagementPacket.stopDiscovery, status: 0)
    await stopped
    scanner.close()
  }

  @Test func aBorrowedDiscoveryIsNeverStopped() async throws {
    // Another client's discovery runs (Busy): its reports arrive all the same...
    async let start: Void = scanner.start(index: 0, filter: DiscoveryFilter())
    #expect(await kernel.read() == ManagementPacket.startDiscovery(index: 0))
    kernel.answer(ManagementPacket.startDiscovery, status: ManagementPacket.Status.busy)
    try await start
    kernel.write(deviceFound(data: []))
    #expect(await eventually { delivered.all.count == 1 })
    // ...and stopping or pausing does not stop it for that client.
    #expect(await scanner.pause(index: 0))
    #expect(await kernel.read(timeout: 0.3) == nil)
    await scanner.stop(index: 0)
    #expect(await kernel.read(timeout: 0.3) == nil)
    // When it ends, the scanner's own starts (then the scanner's, stopped on request).
    try await started()
    kernel.discovering(false)
    #expect(await kernel.read(timeout: 1) == ManagementPacket.startDiscovery(index: 0))
    kernel.answer(ManagementPacket.startDiscovery, status: 0)
    try await Task.sleep(for: .milliseconds(100))
    async let stopped: Void = scanner.stop(index: 0)
    #expect(await kernel.read() == ManagementPacket.stopDiscovery(index: 0))
    kernel.answer(ManagementPacket.stopDiscovery, status: 0)
    await stopped
    scanner.close()
  }

  @Test func twoControllersEndingTogetherBothStartAgainAtOnce() async throws {
    try await started()
    async let second: Void = scanner.start(index: 1, filter: DiscoveryFilter())
    #expect(await kernel.read() == ManagementPacket.startDiscovery(index: 1))
    kernel.answer(ManagementPacket.startDiscovery, status: 0, index: 1)
    try await second
    kernel.discovering(false)
    kernel.discovering(false, index: 1)
    // Both within half a second: restarts spaced a second apart leave the second read empty.
    // (Not timed in this task as well: it runs late when the whole suite shares two cores.)
    let restarted = [await kernel.read(timeout: 0.5), await kernel.read(timeout: 0.5)]
    #expect(
      Set(restarted.compactMap { $0 })
        == [ManagementPacket.startDiscovery(index: 0), ManagementPacket.startDiscovery(index: 1)])
    scanner.close()
  }

  @Test func aRefusedRestartIsTriedAgainSpaced() async throws {
    try await started()
    kernel.discovering(false)
    #expect(await kernel.read(timeout: 0.5) == ManagementPacket.startDiscovery(index: 0))
    let refused = ContinuousClock.now
    kernel.answer(ManagementPacket.startDiscovery, status: 0x03)  // Failed
    #expect(await kernel.read(timeout: 3) == ManagementPacket.startDiscovery(index: 0))
    #expect(ContinuousClock.now - refused >= .milliseconds(900))
    kernel.answer(ManagementPacket.startDiscovery, status: 0)
    // Not powered: left to the central (it starts discovery again when the adapter powers on).
    kernel.discovering(false)
    _ = await kernel.read(timeout: 1.5)
    kernel.answer(ManagementPacket.startDiscovery, status: ManagementPacket.Status.notPowered)
    #expect(await kernel.read(timeout: 1.5) == nil)
    scanner.close()
  }

  @Test func eachAnswerReachesTheCommandItAnswers() async throws {
    try await started()
    // The scanner's own restart is answered after a caller's start was sent: the first answer
    // (a refusal) is the restart's, the second (success) the caller's.
    kernel.discovering(false)
    #expect(await kernel.read(timeout: 0.5) == ManagementPacket.startDiscovery(index: 0))
    let scanner = self.scanner
    let start = outcome { () async throws(CentralError) in
      try await scanner.start(index: 0, filter: DiscoveryFilter(rssiFloor: -80))
    }
    #expect(await kernel.read() == ManagementPacket.startDiscovery(index: 0))
    kernel.answer(ManagementPacket.startDiscovery, status: 0x03)
    kernel.answer(ManagementPacket.startDiscovery, status: 0)
    #expect(await start.value == nil)
    scanner.close()
  }

  @Test func aRefusalIsThrownWithWhatToDo() async throws {
    let scanner = self.scanner
    let start = outcome { () async throws(CentralError) in
      try await scanner.start(index: 0, filter: DiscoveryFilter())
    }
    #expect(await kernel.read() == ManagementPacket.startDiscovery(index: 0))
    kernel.answer(ManagementPacket.startDiscovery, status: ManagementPacket.Status.permissionDenied)
    #expect(await start.value?.code == .notPermitted)
    let powered = outcome { () async throws(CentralError) in
      try await scanner.start(index: 0, filter: DiscoveryFilter())
    }
    _ = await kernel.read()
    kernel.answer(ManagementPacket.startDiscovery, status: ManagementPacket.Status.notPowered)
    #expect(await powered.value?.code == .poweredOff)
    #expect(!scanner.isScanning(index: 0))
    #expect(ManagementScanner.error(0x14, index: 0).code == .notPermitted)
    #expect(ManagementScanner.error(0x14, index: 0).message.contains("CAP_NET_ADMIN"))
    #expect(ManagementScanner.error(nil, index: 2).code == .timeout)
    scanner.close()
  }

  @Test func reportsOfAScannedControllerBecomeEvents() async throws {
    try await started()
    let data: [UInt8] = [0x02, 0x01, 0x06, 0x05, 0xFF, 0x4C, 0x00, 0x02, 0x15]
    kernel.write(deviceFound(rssi: -61, data: data))
    kernel.write(deviceFound(rssi: -62, data: data, index: 1))  // a controller not scanned
    kernel.write(deviceFound(rssi: -63, data: data))
    #expect(await eventually { delivered.all.count >= 2 })
    let address = try BluetoothAddress("A4:C1:38:1E:29:DF")
    let advertisement = Advertisement(
      address: address, rssi: -61, manufacturerData: [0x004C: [0x02, 0x15]])
    var second = advertisement
    second.rssi = -63
    #expect(delivered.all == [.deviceAppeared(advertisement), .deviceUpdated(second)])
    #expect(scanner.lastReport(index: 0) != nil)
    #expect(scanner.lastReport(index: 1) == nil)
    scanner.close()
  }

  @Test(
    "with a batch window, reports that come fast are delivered once per window, each one, in order")
  func gathering() async throws {
    let kernel = try FakeKernel()
    let delivered = Delivered()
    let scanner = try ManagementScanner(
      socket: kernel.scannerEnd, maxDevices: 100, gathering: .seconds(1), deliver: delivered.sink)
    async let start: Void = scanner.start(index: 0, filter: DiscoveryFilter())
    #expect(await kernel.read() == ManagementPacket.startDiscovery(index: 0))
    kernel.answer(ManagementPacket.startDiscovery, status: 0)
    try await start
    let data: [UInt8] = [0x02, 0x01, 0x06]
    let began = ContinuousClock.now
    for rssi in 0..<60 {
      kernel.write(deviceFound(rssi: Int8(-20 - rssi), data: data))
      try await Task.sleep(for: .milliseconds(5))
    }
    #expect(await eventually { delivered.all.count == 60 })
    let seconds = (ContinuousClock.now - began).components.seconds
    let rssis = delivered.all.compactMap { event -> Int? in
      switch event {
      case .deviceAppeared(let a), .deviceUpdated(let a): a.rssi
      default: nil
      }
    }
    #expect(rssis == (0..<60).map { -20 - $0 })
    // Each report delivered by itself without the window: 60 batches.
    let batches = delivered.batches.withLock { $0 }
    #expect(batches <= Int(seconds) + 4, "\(batches) batches in \(seconds) s")
    scanner.close()
  }

  @Test func discoveryTheKernelEndedIsStartedAgainAtOnceThenSpaced() async throws {
    try await started()
    // Before the first restart, which the spacing counts from (a reading after it, late on a
    // loaded machine, would make the second restart look too early).
    let ended = ContinuousClock.now
    kernel.discovering(false)
    #expect(await kernel.read(timeout: 0.5) == ManagementPacket.startDiscovery(index: 0))
    kernel.answer(ManagementPacket.startDiscovery, status: 0)
    // Ending again at once: started again a second later, not in a loop.
    kernel.discovering(false)
    #expect(await kernel.read(timeout: 3) == ManagementPacket.startDiscovery(index: 0))
    #expect(ContinuousClock.now - ended >= .milliseconds(900))
    #expect(scanner.restarts == 2)
    // Another controller's end starts nothing.
    kernel.discovering(false, index: 1)
    #expect(await kernel.read(timeout: 0.3) == nil)
    scanner.close()
  }

  @Test func aPausedOrStoppedDiscoveryIsNotStartedAgain() async throws {
    try await started()
    async let paused = scanner.pause(index: 0)
    #expect(await kernel.read() == ManagementPacket.stopDiscovery(index: 0))
    kernel.answer(ManagementPacket.stopDiscovery, status: 0)
    #expect(await paused)
    kernel.discovering(false)
    #expect(await kernel.read(timeout: 1.5) == nil)
    // Reports of the discovery that runs meanwhile (bluetoothd's) still count.
    kernel.write(deviceFound(data: []))
    #expect(await eventually { delivered.all.count == 1 })
    async let resumed: Void = scanner.resume(index: 0)
    #expect(await kernel.read() == ManagementPacket.startDiscovery(index: 0))
    kernel.answer(ManagementPacket.startDiscovery, status: 0)
    await resumed

    async let stopped: Void = scanner.stop(index: 0)
    #expect(await kernel.read() == ManagementPacket.stopDiscovery(index: 0))
    kernel.answer(ManagementPacket.stopDiscovery, status: 0)
    await stopped
    #expect(!scanner.isScanning(index: 0))
    kernel.discovering(false)
    #expect(await kernel.read(timeout: 1.5) == nil)
    // Not scanning: no stop is sent, and reports are not delivered.
    await scanner.stop(index: 0)
    #expect(await kernel.read(timeout: 0.3) == nil)
    kernel.write(deviceFound(data: []))
    try await Task.sleep(for: .milliseconds(200))
    #expect(delivered.all.count == 1)
    scanner.close()
  }

  @Test func closingAnswersWhatWaits() async throws {
    let scanner = self.scanner
    let start = outcome { () async throws(CentralError) in
      try await scanner.start(index: 0, filter: DiscoveryFilter())
    }
    #expect(await kernel.read() == ManagementPacket.startDiscovery(index: 0))
    scanner.close()
    #expect(await start.value?.code == .timeout)
  }
}
