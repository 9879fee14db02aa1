import BridgeCore
import Dispatch
import Glibc
import LoopSupport
import Synchronization

/// LE discovery run through the kernel's Bluetooth management interface instead of bluetoothd
/// (``BlueZCentralConfiguration/ScanMethod/management``): one control-channel socket, read on a
/// thread of its own, that starts and stops discovery on the controllers the central scans on
/// and turns every Device Found event into a device event, delivered on that thread.
///
/// Why: while a D-Bus client discovers, bluetoothd turns each advertising report into a
/// `PropertiesChanged` signal that dbus-daemon routes to the gateway, which costs bluetoothd,
/// dbus-daemon and the gateway more than the advertisement is worth. bluetoothd ignores reports
/// it did not ask for (bluez 5.66 `src/adapter.c`, `btd_adapter_update_found_device` returns
/// unless one of its clients discovers), so with discovery started here no D-Bus message flows
/// per advertisement. Home Assistant's habluetooth reads the same events
/// (`channels/bluez.py`), though it still scans through bluetoothd.
///
/// LE discovery ends by itself (the kernel's 10.24-s LE discovery timeout): when the kernel
/// reports it stopped on a controller that is still wanted, the scanner starts it again at once
/// (see ``restartSpacing``). The kernel runs one discovery per controller: while another client's runs
/// (bluetoothd's), its reports reach this socket too.
///
/// Needs `CAP_NET_ADMIN`: without it the kernel refuses the commands (``start(index:filter:)``
/// throws `not_permitted`) and sends no events.
final class ManagementScanner: Sendable {
  private struct Waiter {
    let id: UInt64
    let index: UInt16
    let opcode: UInt16
    let continuation: CheckedContinuation<UInt8?, Never>
  }

  private struct State {
    var reports: AdvertisementReports
    /// The controllers to keep discovering on, with the filter for their reports.
    var wanted: [UInt16: DiscoveryFilter] = [:]
    /// When a report of each controller was last read.
    var lastReport: [UInt16: ContinuousClock.Instant] = [:]
    var waiters: [Waiter] = []
    var nextWaiter: UInt64 = 0
    /// Discovery starts the scanner made after the kernel ended one.
    var restarts = 0
    /// When the last of them was made.
    var lastRestart: ContinuousClock.Instant?
    /// Controllers whose discovery is paused (``pause(index:)``): reports still count, the
    /// scanner does not start it again.
    var paused: Set<UInt16> = []
    var closed = false
  }

  /// The kernel ends LE discovery after 10.24 s, and when it makes a connection: the scanner
  /// starts it again at once (every advertisement in between would be lost), but not twice
  /// within this time — a discovery that keeps ending at once is started again this long after.
  static let restartSpacing: Duration = .seconds(1)

  private let fd: Int32
  private let reader: DatagramReader
  private let state: Mutex<State>
  private let deliver: @Sendable ([CentralEvent]) -> Void

  /// Opens the control socket and starts reading it.
  ///
  /// - Parameters:
  ///   - maxDevices: The most devices whose reports are kept (``AdvertisementReports``).
  ///   - deliver: Receives the device events of each batch of reports, on the reader thread.
  /// - Throws: ``CentralError`` as ``ManagementSocket/open(purpose:)``, or `bluez_error` when
  ///   the reader thread cannot start.
  convenience init(maxDevices: Int, deliver: @escaping @Sendable ([CentralEvent]) -> Void)
    throws(CentralError)
  {
    let fd = try ManagementSocket.open(
      purpose: "scanning through the kernel (bluetooth.scan_method: management)")
    try self.init(socket: fd, maxDevices: maxDevices, deliver: deliver)
  }

  /// Reads and writes management packets on `fd` (a control-channel socket; tests pass one end
  /// of a socket pair and play the kernel on the other).
  ///
  /// - Parameters:
  ///   - fd: The socket; the scanner owns it from now on.
  ///   - maxDevices: The most devices whose reports are kept.
  ///   - deliver: Receives the device events of each batch of reports, on the reader thread.
  /// - Throws: ``CentralError`` `bluez_error` when the reader thread cannot start.
  init(socket fd: Int32, maxDevices: Int, deliver: @escaping @Sendable ([CentralEvent]) -> Void)
    throws(CentralError)
  {
    do {
      reader = try DatagramReader(name: "gatt2mqtt-mgmt", maxDatagram: 2048)
    } catch {
      Glibc.close(fd)
      throw CentralError(.bluezError, message: "cannot start the management reader: \(error)")
    }
    self.fd = fd
    self.deliver = deliver
    state = Mutex(State(reports: AdvertisementReports(maxDevices: maxDevices)))
    reader.add(
      fd, receive: { [weak self] packets in self?.received(packets) },
      closed: { [weak self] in self?.socketEnded() })
  }

  deinit {
    reader.stop()
  }

  /// Starts LE discovery on a controller and keeps it running until ``stop(index:)``.
  ///
  /// - Parameters:
  ///   - index: The controller (`hci0` → 0).
  ///   - filter: What to report (its RSSI floor and service UUIDs; duplicates always).
  /// - Throws: ``CentralError``: `powered_off`, `not_permitted` (no `CAP_NET_ADMIN`),
  ///   `unknown_adapter`, `timeout` (the kernel did not answer), `bluez_error`. Busy (another
  ///   client's discovery runs) is no error: its reports arrive all the same, and this
  ///   discovery starts when that one ends.
  func start(index: UInt16, filter: DiscoveryFilter) async throws(CentralError) {
    state.withLock { $0.wanted[index] = filter }
    let status = await command(ManagementPacket.startDiscovery(index: index), index: index)
    switch status {
    case ManagementPacket.Status.success, ManagementPacket.Status.busy:
      return
    default:
      state.withLock { $0.wanted[index] = nil }
      throw Self.error(status, index: index)
    }
  }

  /// Stops discovery on a controller (not running is no error).
  ///
  /// - Parameter index: The controller.
  func stop(index: UInt16) async {
    let wanted = state.withLock { state in
      defer {
        state.wanted[index] = nil
        state.paused.remove(index)
      }
      return state.wanted[index] != nil
    }
    guard wanted else { return }
    _ = await command(ManagementPacket.stopDiscovery(index: index), index: index)
  }

  /// Stops discovery on a controller for a while, for another client's (bluetoothd's) to run;
  /// the reports of that one are still delivered.
  ///
  /// - Parameter index: The controller.
  /// - Returns: Whether it was scanning there (then ``resume(index:)`` it).
  func pause(index: UInt16) async -> Bool {
    let scanning = state.withLock { state in
      guard state.wanted[index] != nil else { return false }
      state.paused.insert(index)
      return true
    }
    guard scanning else { return false }
    _ = await command(ManagementPacket.stopDiscovery(index: index), index: index)
    return true
  }

  /// Starts a paused discovery again (a refusal is left to the central's watchdog).
  ///
  /// - Parameter index: The controller.
  func resume(index: UInt16) async {
    let wanted = state.withLock { state in
      state.paused.remove(index)
      return state.wanted[index] != nil
    }
    guard wanted else { return }
    _ = await command(ManagementPacket.startDiscovery(index: index), index: index)
  }

  /// Whether discovery is wanted on a controller.
  func isScanning(index: UInt16) -> Bool {
    state.withLock { $0.wanted[index] != nil }
  }

  /// When a report of the controller was last read, if ever.
  func lastReport(index: UInt16) -> ContinuousClock.Instant? {
    state.withLock { $0.lastReport[index] }
  }

  /// Discovery starts made after the kernel ended one.
  var restarts: Int { state.withLock { $0.restarts } }

  /// Forgets the devices heard so far (each appears anew at its next report).
  func forgetDevices() {
    state.withLock { $0.reports.removeAll() }
  }

  /// Stops reading and closes the socket (discovery started here is not stopped: call
  /// ``stop(index:)`` first).
  func close() {
    let waiters = state.withLock { state in
      state.closed = true
      state.wanted = [:]
      defer { state.waiters = [] }
      return state.waiters
    }
    for waiter in waiters { waiter.continuation.resume(returning: nil) }
    reader.remove(fd)
    reader.stop()
  }

  // MARK: commands

  /// Writes a command and waits for the kernel's status (`nil`: no answer within 5 s, or the
  /// socket failed).
  private func command(_ packet: [UInt8], index: UInt16) async -> UInt8? {
    let opcode = ManagementPacket.u16(packet, 0)
    return await withCheckedContinuation { (continuation: CheckedContinuation<UInt8?, Never>) in
      let id = state.withLock { state -> UInt64? in
        guard !state.closed else { return nil }
        state.nextWaiter += 1
        state.waiters.append(
          Waiter(id: state.nextWaiter, index: index, opcode: opcode, continuation: continuation))
        return state.nextWaiter
      }
      guard let id else {
        continuation.resume(returning: nil)
        return
      }
      let written = packet.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
      if written < 0 {
        giveUp(id)
        return
      }
      // An unprivileged socket's commands may go unanswered (write returns 0): time out.
      DispatchQueue.global().asyncAfter(deadline: .now() + 5) { [weak self] in
        self?.giveUp(id)
      }
    }
  }

  /// Resumes a waiter with no answer, if it still waits.
  private func giveUp(_ id: UInt64) {
    let waiter = state.withLock { state -> Waiter? in
      guard let position = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
      return state.waiters.remove(at: position)
    }
    waiter?.continuation.resume(returning: nil)
  }

  /// Resumes the first waiter for this command, if any still waits.
  private func answer(index: UInt16, opcode: UInt16, status: UInt8?) {
    let waiter = state.withLock { state -> Waiter? in
      guard
        let position = state.waiters.firstIndex(where: { $0.index == index && $0.opcode == opcode })
      else { return nil }
      return state.waiters.remove(at: position)
    }
    waiter?.continuation.resume(returning: status)
  }

  // MARK: reader thread

  private func received(_ packets: [[UInt8]]) {
    var events: [CentralEvent] = []
    var replies: [(UInt16, UInt16, UInt8)] = []
    var ended: [UInt16] = []
    var now: ContinuousClock.Instant?
    state.withLock { state in
      for packet in packets {
        switch ManagementPacket.event(packet) {
        case .deviceFound(let index, let report):
          guard let filter = state.wanted[index] else { continue }
          if now == nil { now = ContinuousClock.now }
          state.lastReport[index] = now
          if let event = state.reports.apply(report, filter: filter) { events.append(event) }
        case .discovering(let index, let types, let on):
          if !on, types & ManagementPacket.leDiscovery != 0, state.wanted[index] != nil,
            !state.paused.contains(index)
          {
            ended.append(index)
          }
        case .reply(let index, let opcode, let status):
          replies.append((index, opcode, status))
        case .other:
          break
        }
      }
    }
    if !events.isEmpty { deliver(events) }
    for (index, opcode, status) in replies { answer(index: index, opcode: opcode, status: status) }
    for index in ended { restartLater(index) }
  }

  /// Starts discovery again if it is still wanted: at once, or ``restartSpacing`` after the
  /// last restart when that was less than that ago.
  private func restartLater(_ index: UInt16) {
    let now = ContinuousClock.now
    let soon = state.withLock { state in
      state.lastRestart.map { now - $0 < Self.restartSpacing } ?? false
    }
    guard soon else {
      restart(index)
      return
    }
    let spacing = Self.restartSpacing.components
    let delay = Double(spacing.seconds) + Double(spacing.attoseconds) / 1e18
    DispatchQueue.global().asyncAfter(deadline: .now() + delay) { [weak self] in
      self?.restart(index)
    }
  }

  private func restart(_ index: UInt16) {
    let wanted = state.withLock { state in
      guard !state.closed, state.wanted[index] != nil, !state.paused.contains(index) else {
        return false
      }
      state.restarts += 1
      state.lastRestart = ContinuousClock.now
      return true
    }
    guard wanted else { return }
    // The answer is read like any other; a refusal (not powered, busy) is left to the
    // central: it starts discovery again when the adapter powers on, its watchdog when
    // reports stop.
    let packet = ManagementPacket.startDiscovery(index: index)
    _ = packet.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, 0) }
  }

  private func socketEnded() {
    let waiters = state.withLock { state in
      state.closed = true
      defer { state.waiters = [] }
      return state.waiters
    }
    for waiter in waiters { waiter.continuation.resume(returning: nil) }
  }

  /// The error for a refused command.
  static func error(_ status: UInt8?, index: UInt16) -> CentralError {
    guard let status else {
      return CentralError(
        .timeout, message: "the kernel did not answer Start Discovery on hci\(index)")
    }
    switch status {
    case ManagementPacket.Status.notPowered:
      return CentralError(.poweredOff, message: "hci\(index) is powered off")
    case ManagementPacket.Status.invalidIndex:
      return CentralError(.unknownAdapter, message: "the kernel has no controller hci\(index)")
    case ManagementPacket.Status.permissionDenied:
      return CentralError(
        .notPermitted,
        message:
          "scanning through the kernel's management interface needs CAP_NET_ADMIN (bluetooth.scan_method: management)"
      )
    default:
      return CentralError(
        .bluezError,
        message: "Start Discovery on hci\(index) failed: management status 0x"
          + String(status, radix: 16))
    }
  }
}
