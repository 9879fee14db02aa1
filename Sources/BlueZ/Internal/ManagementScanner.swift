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
/// (see ``restartSpacing``), and again after a refusal. The kernel runs one discovery per
/// controller: while another client's runs (bluetoothd's), a start is answered Busy, the scanner
/// *borrows* that discovery (its reports reach this socket too) and never stops it.
///
/// Needs `CAP_NET_ADMIN`: without it the kernel refuses the commands (``start(index:filter:)``
/// throws `not_permitted`) and sends no events.
final class ManagementScanner: Sendable {
  /// A command whose answer is still owed, in the order the commands were sent: the kernel
  /// answers one control socket's commands in order.
  private enum Owed {
    /// A caller waits (``command(_:index:)``); it may have given up meanwhile.
    case caller(UInt64)
    /// A start the scanner made by itself (``restart(_:)``).
    case restart
    /// Nobody waits (``stopAll()``).
    case ignored
  }

  private struct Key: Hashable {
    let index: UInt16
    let opcode: UInt16
  }

  private struct State {
    var reports: AdvertisementReports
    /// The controllers to keep discovering on, with the filter for their reports.
    var wanted: [UInt16: DiscoveryFilter] = [:]
    /// The controllers where the running discovery is the scanner's own (not borrowed from
    /// another client, which it must not stop).
    var owned: Set<UInt16> = []
    /// Controllers whose discovery is paused (``pause(index:)``): reports still count, the
    /// scanner does not start it again.
    var paused: Set<UInt16> = []
    /// When a report of each controller was last read.
    var lastReport: [UInt16: ContinuousClock.Instant] = [:]
    /// Answers owed, by command, oldest first, with when the command was sent.
    var owed: [Key: [(Owed, ContinuousClock.Instant)]] = [:]
    /// Callers waiting for an answer.
    var callers: [UInt64: CheckedContinuation<UInt8?, Never>] = [:]
    var nextCaller: UInt64 = 0
    /// Discovery starts the scanner made by itself.
    var restarts = 0
    /// When the last of them was made, by controller.
    var lastRestart: [UInt16: ContinuousClock.Instant] = [:]
    var closed = false
  }

  /// The kernel ends LE discovery after 10.24 s, and when it makes a connection: the scanner
  /// starts it again at once (every advertisement in between would be lost), but not twice
  /// within this time on one controller — a discovery that keeps ending at once, or a start
  /// the kernel refused, is started again this long after.
  static let restartSpacing: Duration = .seconds(1)
  /// How long a caller waits for the kernel's answer.
  static let answerWait: Duration = .seconds(5)
  /// An answer owed this long is taken as never coming (the commands after it are matched
  /// to the answers that do come).
  static let answerLimit: Duration = .seconds(30)

  private let fd: Int32
  private let reader: DatagramReader
  private let state: Mutex<State>
  private let deliver: @Sendable ([CentralEvent]) -> Void

  /// Opens the control socket and starts reading it.
  ///
  /// - Parameters:
  ///   - maxDevices: The most devices whose reports are kept (``AdvertisementReports``).
  ///   - gathering: While reports come more than once per this interval, the reader takes
  ///     them once per interval (``BlueZCentralConfiguration/batchWindow``).
  ///   - deliver: Receives the device events of each batch of reports, on the reader thread.
  /// - Throws: ``CentralError`` as ``ManagementSocket/open(purpose:)``, or `bluez_error` when
  ///   the reader thread cannot start.
  convenience init(
    maxDevices: Int, gathering: Duration,
    deliver: @escaping @Sendable ([CentralEvent]) -> Void
  ) throws(CentralError) {
    let fd = try ManagementSocket.open(
      purpose: "scanning through the kernel (bluetooth.scan_method: management)")
    Self.enlargeReceiveBuffer(fd)
    try self.init(socket: fd, maxDevices: maxDevices, gathering: gathering, deliver: deliver)
  }

  /// Bytes of reports the socket should hold: the kernel drops a report it cannot queue, and
  /// while reports gather for up to the batch window (or the host is busy) they wait there. 1 MiB
  /// asked (the kernel doubles it for its bookkeeping) is five times the default.
  static let receiveBuffer: Int32 = 1 << 20

  /// Sets ``receiveBuffer``: `SO_RCVBUFFORCE`, allowed with `CAP_NET_ADMIN` (which the
  /// scanner's discovery commands need too), else `SO_RCVBUF`, which the kernel caps at
  /// `net.core.rmem_max`. Best effort: the default buffer still works.
  private static func enlargeReceiveBuffer(_ fd: Int32) {
    var bytes = receiveBuffer
    let size = socklen_t(MemoryLayout<Int32>.size)
    if setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &bytes, size) != 0 {
      _ = setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, size)
    }
  }

  /// Reads and writes management packets on `fd` (a control-channel socket; tests pass one end
  /// of a socket pair and play the kernel on the other).
  ///
  /// - Parameters:
  ///   - fd: The socket; the scanner owns it from now on.
  ///   - maxDevices: The most devices whose reports are kept.
  ///   - gathering: The interval over which fast reports gather (`.zero`: none).
  ///   - deliver: Receives the device events of each batch of reports, on the reader thread.
  /// - Throws: ``CentralError`` `bluez_error` when the reader thread cannot start.
  init(
    socket fd: Int32, maxDevices: Int, gathering: Duration = .zero,
    deliver: @escaping @Sendable ([CentralEvent]) -> Void
  ) throws(CentralError) {
    do {
      reader = try DatagramReader(name: "mgmt-scan", maxDatagram: 2048, gathering: gathering)
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
    let running = state.withLock { state in
      state.wanted[index] = filter
      return state.owned.contains(index)
    }
    // Our own discovery runs there: the new filter is all (a Start would be answered Busy).
    guard !running else { return }
    let status = await command(ManagementPacket.startDiscovery(index: index), index: index)
    // Whose discovery runs (ours, or a borrowed one) was noted when the answer was read, in
    // order with the kernel's events.
    switch status {
    case ManagementPacket.Status.success, ManagementPacket.Status.busy:
      return
    default:
      state.withLock { $0.wanted[index] = nil }
      throw Self.error(status, index: index)
    }
  }

  /// Stops discovery on a controller: the scanner's own is stopped, a borrowed one only left.
  ///
  /// - Parameter index: The controller.
  func stop(index: UInt16) async {
    let owned = state.withLock { state in
      defer {
        state.wanted[index] = nil
        state.paused.remove(index)
        state.owned.remove(index)
      }
      return state.owned.contains(index)
    }
    guard owned else { return }
    _ = await command(ManagementPacket.stopDiscovery(index: index), index: index)
  }

  /// Stops discovery on every controller (or on `only` that one) without waiting for the
  /// kernel's answers: the stack or the adapter went away, or the central stops.
  ///
  /// - Parameter only: The one controller; `nil` for all.
  func stopAll(only: UInt16? = nil) {
    state.withLock { state in
      let indexes = only.map { [$0] } ?? Array(state.wanted.keys)
      for index in indexes.sorted() {
        if state.owned.contains(index) {
          send(ManagementPacket.stopDiscovery(index: index), index: index, as: .ignored, &state)
        }
        state.wanted[index] = nil
        state.owned.remove(index)
        state.paused.remove(index)
      }
    }
  }

  /// Stops discovery on a controller for a while, for another client's (bluetoothd's) to run;
  /// the reports of that one are still delivered.
  ///
  /// - Parameter index: The controller.
  /// - Returns: Whether it was scanning there (then ``resume(index:)`` it).
  func pause(index: UInt16) async -> Bool {
    let (scanning, owned) = state.withLock { state in
      guard state.wanted[index] != nil else { return (false, false) }
      state.paused.insert(index)
      return (true, state.owned.remove(index) != nil)
    }
    if owned { _ = await command(ManagementPacket.stopDiscovery(index: index), index: index) }
    return scanning
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
    let status = await command(ManagementPacket.startDiscovery(index: index), index: index)
    if status != ManagementPacket.Status.success && status != ManagementPacket.Status.busy {
      restartLater(index, spaced: true)
    }
  }

  /// Whether discovery is wanted on a controller.
  func isScanning(index: UInt16) -> Bool {
    state.withLock { $0.wanted[index] != nil }
  }

  /// The controllers discovery is wanted on.
  var scanningIndexes: [UInt16] { state.withLock { $0.wanted.keys.sorted() } }

  /// When a report of the controller was last read, if ever.
  func lastReport(index: UInt16) -> ContinuousClock.Instant? {
    state.withLock { $0.lastReport[index] }
  }

  /// Discovery starts the scanner made by itself.
  var restarts: Int { state.withLock { $0.restarts } }

  /// Forgets the devices heard so far (each appears anew at its next report).
  func forgetDevices() {
    state.withLock { $0.reports.removeAll() }
  }

  /// Stops reading and closes the socket (discovery is not stopped: call ``stopAll()`` first).
  func close() {
    let callers = state.withLock { state in
      state.closed = true
      state.wanted = [:]
      defer { state.callers = [:] }
      return Array(state.callers.values)
    }
    for caller in callers { caller.resume(returning: nil) }
    reader.remove(fd)
    reader.stop()
  }

  // MARK: commands

  /// Writes a command and waits for the kernel's status (`nil`: no answer within
  /// ``answerWait``, or the socket is closed).
  private func command(_ packet: [UInt8], index: UInt16) async -> UInt8? {
    await withCheckedContinuation { (continuation: CheckedContinuation<UInt8?, Never>) in
      let id = state.withLock { state -> UInt64? in
        guard !state.closed else { return nil }
        state.nextCaller += 1
        let id = state.nextCaller
        state.callers[id] = continuation
        guard send(packet, index: index, as: .caller(id), &state) else {
          state.callers[id] = nil
          return nil
        }
        return id
      }
      guard let id else {
        continuation.resume(returning: nil)
        return
      }
      DispatchQueue.global().asyncAfter(deadline: .now() + Self.answerWait.seconds) {
        [weak self] in
        self?.giveUp(id)
      }
    }
  }

  /// Writes a packet while the state is locked (so no close can come between the check and
  /// the write, and the owed answers stay in the order of the writes).
  ///
  /// - Returns: Whether it was written.
  @discardableResult
  private func send(_ packet: [UInt8], index: UInt16, as owed: Owed, _ state: inout State)
    -> Bool
  {
    guard !state.closed else { return false }
    let written = packet.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, 0) }
    guard written >= 0 else { return false }
    let key = Key(index: index, opcode: ManagementPacket.u16(packet, 0))
    state.owed[key, default: []].append((owed, ContinuousClock.now))
    return true
  }

  /// Answers a caller with no status, if it still waits (its answer, if it comes, is dropped).
  private func giveUp(_ id: UInt64) {
    let caller = state.withLock { $0.callers.removeValue(forKey: id) }
    caller?.resume(returning: nil)
  }

  // MARK: reader thread

  private func received(_ packets: [[UInt8]]) {
    var events: [CentralEvent] = []
    var answers: [(UInt16, Owed, UInt8)] = []
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
          guard types & ManagementPacket.leDiscovery != 0 else { continue }
          if !on {
            state.owned.remove(index)
            if state.wanted[index] != nil, !state.paused.contains(index) { ended.append(index) }
          }
        case .reply(let index, let opcode, let status):
          // In order with the Discovering events of the same batch: whose discovery runs.
          if opcode == ManagementPacket.startDiscovery {
            if status == ManagementPacket.Status.success {
              state.owned.insert(index)
            } else if status == ManagementPacket.Status.busy {
              state.owned.remove(index)
            }
          }
          if let owed = Self.takeOwed(Key(index: index, opcode: opcode), &state) {
            answers.append((index, owed, status))
          }
        case .other:
          break
        }
      }
    }
    if !events.isEmpty { deliver(events) }
    for (index, owed, status) in answers { settle(owed, index: index, status: status) }
    for index in ended { restartLater(index, spaced: false) }
  }

  /// The oldest answer owed for a command, skipping those owed longer than ``answerLimit``.
  private static func takeOwed(_ key: Key, _ state: inout State) -> Owed? {
    let now = ContinuousClock.now
    while var queue = state.owed[key], !queue.isEmpty {
      let (owed, sent) = queue.removeFirst()
      state.owed[key] = queue.isEmpty ? nil : queue
      if now - sent < answerLimit { return owed }
    }
    return nil
  }

  /// Hands an answer to whoever it is owed to.
  private func settle(_ owed: Owed, index: UInt16, status: UInt8) {
    switch owed {
    case .caller(let id):
      let caller = state.withLock { $0.callers.removeValue(forKey: id) }
      caller?.resume(returning: status)
    case .restart:
      switch status {
      case ManagementPacket.Status.success, ManagementPacket.Status.busy,
        ManagementPacket.Status.notPowered:
        // Running; or another client's discovery runs (its end brings a restart); or the
        // central starts discovery again when the adapter powers on.
        break
      default:
        restartLater(index, spaced: true)
      }
    case .ignored:
      break
    }
  }

  /// Starts discovery again if it is still wanted: at once, or ``restartSpacing`` after the
  /// controller's last restart when that was less than that ago (always after a refusal).
  private func restartLater(_ index: UInt16, spaced: Bool) {
    let now = ContinuousClock.now
    let soon = state.withLock { state in
      spaced || state.lastRestart[index].map { now - $0 < Self.restartSpacing } ?? false
    }
    guard soon else {
      restart(index)
      return
    }
    DispatchQueue.global().asyncAfter(deadline: .now() + Self.restartSpacing.seconds) {
      [weak self] in
      self?.restart(index)
    }
  }

  private func restart(_ index: UInt16) {
    state.withLock { state in
      guard state.wanted[index] != nil, !state.paused.contains(index),
        !state.owned.contains(index)
      else { return }
      state.restarts += 1
      state.lastRestart[index] = ContinuousClock.now
      // The answer is settled like any other (a refusal is tried again, spaced).
      send(ManagementPacket.startDiscovery(index: index), index: index, as: .restart, &state)
    }
  }

  private func socketEnded() {
    let callers = state.withLock { state in
      state.closed = true
      defer { state.callers = [:] }
      return Array(state.callers.values)
    }
    for caller in callers { caller.resume(returning: nil) }
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
