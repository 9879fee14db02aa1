public import BridgeCore
import DBus
import Glibc
import Logging
import LoopSupport
import Synchronization

/// One characteristic whose notifications arrive through the socket of `AcquireNotify`.
struct AcquiredNotify: Sendable {
  /// Counts the values the socket carried, and the reads that found a backlog (on the reader
  /// thread).
  final class Tap: Sendable {
    let values = Atomic<Int>(0)
    let backlogs = Atomic<Int>(0)
    /// Values read at once from which the reader reports a backlog
    /// (``backlogThreshold(sendBuffer:)``).
    let threshold: Int

    init(threshold: Int) {
      self.threshold = threshold
    }
  }

  /// Counts, across sockets, the reads that found a backlog.
  final class Backlogs: Sendable {
    let count = Atomic<Int>(0)
  }

  /// Bytes of bluetoothd's send buffer one short value takes while it waits in the socket
  /// (Linux 6.1: 212,992 bytes hold 278 values of up to ~100 bytes; 167 of up to 512).
  static let bytesPerQueuedValue = 766

  /// The most values one read hands over (the reader's batch limit).
  static let readLimit = 256

  /// How many values read at once make a backlog worth reporting, for bluetoothd's send buffer
  /// of `sendBuffer` bytes: half of the short values that buffer holds, between 8 and
  /// ``readLimit``.
  ///
  /// bluetoothd writes each value into its end of the socket pair without waiting, and drops
  /// the value when that fails (bluez 5.66 `src/gatt-client.c`, `notify_io_cb`: it logs
  /// `sendmsg: Resource temporarily unavailable`; the gateway cannot see it). An `AF_UNIX`
  /// `SOCK_SEQPACKET` pair queues as much as the *sending* end's buffer holds (bluetoothd's,
  /// `net.core.wmem_default` when it made the pair); the receiving end's `SO_RCVBUF` bounds
  /// nothing, so the gateway has no buffer of its own to enlarge (the test "the receive buffer
  /// of a socket pair bounds nothing" shows it). What it can do is read on a thread of its own
  /// and say when it fell behind by half of what bluetoothd's end holds, before values are lost.
  ///
  /// - Parameter sendBuffer: bluetoothd's send buffer in bytes.
  /// - Returns: The threshold in values.
  static func backlogThreshold(sendBuffer: Int) -> Int {
    min(readLimit, max(8, sendBuffer / bytesPerQueuedValue / 2))
  }

  /// ``backlogThreshold(sendBuffer:)`` for the buffer bluetoothd's sockets get now
  /// (`/proc/sys/net/core/wmem_default`; Linux's default 212,992 bytes when it cannot be read).
  static func currentBacklogThreshold() -> Int {
    var bytes = 212_992
    let fd = open("/proc/sys/net/core/wmem_default", O_RDONLY | O_CLOEXEC)
    if fd >= 0 {
      defer { close(fd) }
      var buffer = [UInt8](repeating: 0, count: 32)
      let count = read(fd, &buffer, buffer.count)
      let text = String(decoding: buffer[..<max(0, count)], as: UTF8.self)
      if let value = Int(text.filter(\.isNumber)), value > 0 { bytes = value }
    }
    return backlogThreshold(sendBuffer: bytes)
  }

  /// The socket, owned by the reader.
  let fd: Int32
  /// The ATT MTU BlueZ reported with it.
  let mtu: Int
  /// When it was acquired.
  let since: ContinuousClock.Instant
  /// What the configuration asked for (`auto` may move the characteristic to `StartNotify`).
  let method: NotifyMethod
  let tap: Tap
}

extension BlueZCentral {
  /// A socket that ends this soon after `AcquireNotify` without carrying a value moves its
  /// characteristic to `StartNotify` (under ``NotifyMethod/auto``).
  static let acquireProbation: Duration = .seconds(5)

  /// Turns notifications of a characteristic on or off.
  ///
  /// On: with ``NotifyMethod/auto`` or ``NotifyMethod/acquire``, `AcquireNotify` first: BlueZ
  /// hands out a socket that carries one value per datagram, read on the central's reader
  /// thread and delivered as ``CentralEvent/notification(_:_:)`` without a D-Bus message per
  /// value. Under `auto` a refusal (indicate-only characteristics in BlueZ 5.66, another
  /// client already subscribed, a BlueZ without the method) falls back to `StartNotify`; so does
  /// a characteristic whose socket once ended within ``acquireProbation`` without a value.
  /// BlueZ counts `StartNotify` sessions per D-Bus client: starting again is harmless.
  ///
  /// Off: an acquired socket is drained (its values are delivered first) and shut, which ends
  /// BlueZ's session; a `StartNotify` session of ours is ended with `StopNotify`. Stopping when
  /// this central has no subscription, or when the device is not connected, is success. Either
  /// way the change arrives as ``CentralEvent/notifyingChanged(_:_:)``.
  ///
  /// `StopNotify` is never sent for a characteristic this central did not start: BlueZ 5.66
  /// answers it, first, by closing whatever socket is acquired for the characteristic —
  /// another client's, or the leftover of an `AcquireNotify` whose CCC write failed, which it
  /// frees a second time and crashes on (bluez/bluez#1376: such a leftover also makes every
  /// later `AcquireNotify` and `StartNotify` answer `NotPermitted` "Notify acquired").
  ///
  /// - Parameters:
  ///   - characteristic: The characteristic.
  ///   - enabled: Whether they should be on.
  ///   - method: How to turn them on.
  ///   - timeout: The most seconds to wait.
  /// - Throws: ``CentralError`` as for ``read(_:timeout:)``.
  public func setNotify(
    _ characteristic: GATTCharacteristicID, enabled: Bool, method: NotifyMethod, timeout: Double
  ) async throws(CentralError) {
    guard enabled else {
      if let acquired = acquiredNotify.removeValue(forKey: characteristic) {
        notifyReader?.remove(acquired.fd)
        return
      }
      if startingNotify.contains(characteristic) {
        // A start under way: stopped once it has started (see `startNotify`).
        stopAfterStart.insert(characteristic)
        return
      }
      guard startedNotify.contains(characteristic) else { return }
      do {
        _ = try await gattCall(characteristic, "StopNotify", [], timeout: timeout)
      } catch {
        // BlueZ: `Failed` "No notify session started" when we had none.
        let noSession =
          error.bluez == .failed && error.message.lowercased().contains("notify session")
        // Not connected: BlueZ keeps the session and resumes it at the next connection, so it
        // stays ours to stop.
        if error.code == .notConnected { return }
        guard noSession else { throw error }
      }
      startedNotify.remove(characteristic)
      return
    }
    stopAfterStart.remove(characteristic)
    guard acquiredNotify[characteristic] == nil else { return }
    let acquire =
      method == .acquire || (method == .auto && !startNotifyOnly.contains(characteristic))
    if acquire {
      do {
        try await acquireNotify(characteristic, method: method, timeout: timeout)
        return
      } catch {
        guard method == .auto, Self.mayFallBack(error) else { throw error }
        logger.debug(
          "AcquireNotify refused, using StartNotify",
          metadata: ["ble.characteristic": "\(characteristic)", "error": "\(error)"])
      }
    }
    try await startNotify(characteristic, timeout: timeout)
  }

  /// `StartNotify`, noting the session once it started (also when the call timed out: it may
  /// have). A stop asked for while it was under way is carried out after it, and only when it
  /// started: a `StopNotify` for a start BlueZ refused could close another client's socket.
  private func startNotify(_ characteristic: GATTCharacteristicID, timeout: Double)
    async throws(CentralError)
  {
    startingNotify.insert(characteristic)
    defer { startingNotify.remove(characteristic) }
    do {
      _ = try await gattCall(characteristic, "StartNotify", [], timeout: timeout)
    } catch {
      if error.code == .timeout { startedNotify.insert(characteristic) }
      stopAfterStart.remove(characteristic)
      throw error
    }
    startedNotify.insert(characteristic)
    counters.notifyStarted += 1
    if stopAfterStart.remove(characteristic) != nil {
      startingNotify.remove(characteristic)
      try? await setNotify(characteristic, enabled: false, method: .start, timeout: timeout)
    }
  }

  /// Whether `StartNotify` may succeed where `AcquireNotify` failed: not for a link or object
  /// that is gone, nor for a stack that does not answer.
  static func mayFallBack(_ error: CentralError) -> Bool {
    switch error.code {
    case .notConnected, .unknownCharacteristic, .unavailable, .timeout: false
    default: true
    }
  }

  /// `AcquireNotify`: registers the socket with the reader thread.
  private func acquireNotify(
    _ characteristic: GATTCharacteristicID, method: NotifyMethod, timeout: Double
  ) async throws(CentralError) {
    let reply = try await gattCall(
      characteristic, "AcquireNotify", [.properties([:])], timeout: timeout)
    guard reply.count == 2, case .unixFD(let passed) = reply[0].unwrapped,
      let mtu = reply[1].integerValue
    else {
      throw CentralError(
        .bluezError,
        message:
          "AcquireNotify of \(characteristic) replied '\(reply.map(\.signature.rawValue).joined())'"
          + " instead of 'hq'")
    }
    // The reader owns its own copy; the message's copy closes with `passed`.
    let fd = fcntl(passed.rawValue, F_DUPFD_CLOEXEC, 0)
    guard fd >= 0, let reader = try? readerForNotifications() else {
      if fd >= 0 { close(fd) }
      throw CentralError(
        .bluezError, message: "cannot keep the socket of AcquireNotify for \(characteristic)")
    }
    if let previous = acquiredNotify.removeValue(forKey: characteristic) {
      reader.remove(previous.fd)
    }
    let tap = AcquiredNotify.Tap(threshold: AcquiredNotify.currentBacklogThreshold())
    let hub = self.hub
    let backlogs = self.backlogs
    reader.add(
      fd,
      receive: { [weak self] values in
        tap.values.add(values.count, ordering: .relaxed)
        hub.yield(contentsOf: values.map { .notification(characteristic, $0) })
        guard values.count >= tap.threshold else { return }
        backlogs.count.add(1, ordering: .relaxed)
        guard tap.backlogs.add(1, ordering: .relaxed).oldValue == 0 else { return }
        hub.yield(.notificationBacklog(characteristic, waiting: values.count))
        // Logged off the reader thread, which holds the socket's lock here.
        Task { await self?.reportBacklog(characteristic, read: values.count, tap.threshold) }
      },
      closed: { [weak self] in
        Task { await self?.acquiredSocketEnded(characteristic, fd: fd) }
      })
    acquiredNotify[characteristic] = AcquiredNotify(
      fd: fd, mtu: Int(mtu), since: clock.now, method: method, tap: tap)
    counters.notifyAcquired += 1
    logger.debug(
      "notifications through AcquireNotify",
      metadata: ["ble.characteristic": "\(characteristic)", "ble.mtu": "\(mtu)"])
  }

  /// Says once per acquired socket that the reader fell behind (see
  /// ``AcquiredNotify/backlogThreshold(sendBuffer:)``).
  func reportBacklog(_ characteristic: GATTCharacteristicID, read: Int, _ threshold: Int) {
    logger.warning(
      """
      the gateway fell behind the notification socket: \(read) values read at once (the \
      threshold is \(threshold), half of what bluetoothd's end holds); bluetoothd drops \
      values unseen when its end is full. Raise net.core.wmem_default before bluetoothd \
      starts, or set bluetooth.gatt.notify_methods to "start" for this device
      """,
      metadata: ["ble.characteristic": "\(characteristic)"])
  }

  /// The turns of the acquired sockets' reader thread that read values so far (tests).
  var notificationReadingTurns: Int { notifyReader?.readingTurns ?? 0 }

  /// The reader thread of acquired sockets, started at the first one.
  private func readerForNotifications() throws(LoopError) -> DatagramReader {
    if let notifyReader { return notifyReader }
    let reader = try DatagramReader(
      name: "gatt-notify", batchLimit: AcquiredNotify.readLimit,
      gathering: configuration.batchWindow,
      // A read of half the backlog threshold ends gathering for that socket: a gathered read
      // never reports a backlog by itself, and bluetoothd's end keeps room.
      gatheringCeiling: AcquiredNotify.currentBacklogThreshold() / 2)
    notifyReader = reader
    return reader
  }

  /// The peer (bluetoothd) hung up an acquired socket: the link went down, or BlueZ ended the
  /// session. One that ends within ``acquireProbation`` having carried no value, while `auto`
  /// chose it, marks a peripheral that does not work on the socket path (it notifies before
  /// answering the CCCD write, hbldh/bleak#1885): `StartNotify` from now on, at once when the
  /// device is still connected.
  func acquiredSocketEnded(_ characteristic: GATTCharacteristicID, fd: Int32) async {
    guard let acquired = acquiredNotify[characteristic], acquired.fd == fd else { return }
    acquiredNotify[characteristic] = nil
    guard acquired.method == .auto, clock.now - acquired.since < Self.acquireProbation,
      acquired.tap.values.load(ordering: .relaxed) == 0
    else { return }
    startNotifyOnly.insert(characteristic)
    logger.warning(
      """
      the notification socket ended right after AcquireNotify; using StartNotify for this \
      characteristic from now on (set bluetooth.gatt.notify_methods to choose it yourself)
      """,
      metadata: ["ble.characteristic": "\(characteristic)"])
    guard model.device(address: characteristic.address)?.connected == true else { return }
    do {
      try await startNotify(
        characteristic, timeout: configuration.bus.callTimeout.seconds)
    } catch {
      logger.warning(
        "StartNotify after the socket ended failed: \(error)",
        metadata: ["ble.characteristic": "\(characteristic)"])
    }
  }

  /// Before a disconnection (or the loss of the stack) is delivered: every value the device's
  /// sockets still hold is delivered first, then the sockets are shut (`nil`: all devices).
  func releaseAcquired(address: BluetoothAddress?) {
    guard !acquiredNotify.isEmpty else { return }
    for (characteristic, acquired) in acquiredNotify
    where address == nil || characteristic.address == address {
      notifyReader?.remove(acquired.fd)
      acquiredNotify[characteristic] = nil
    }
  }
}
