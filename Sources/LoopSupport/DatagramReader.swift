import Foundation
import Glibc
import Synchronization

/// Reads datagrams (`SOCK_SEQPACKET`/`SOCK_DGRAM` sockets, one value per datagram) on a thread of
/// its own and hands each socket's values to its handler in batches, in order, on that thread:
/// the sockets BlueZ's `AcquireNotify` hands out carry one notification per datagram.
///
/// A socket stays registered until its peer hangs up (then its `closed` handler runs once) or
/// ``remove(_:)`` takes it back. ``drain(_:)`` and ``remove(_:)`` read what is waiting on the
/// caller's thread, in order with the reader thread, so that a caller can deliver every value
/// that arrived before something it is about to report (a disconnection).
///
/// A zero-length datagram is a value (an empty notification), not the end: the end is the
/// peer's hang-up, which `poll` reports.
///
/// - Important: Handlers run with the socket's lock held and must not block or call back into
///   the reader for the same socket.
public final class DatagramReader: Sendable {
  private final class Entry: Sendable {
    struct State {
      var fd: Int32
      /// Set by ``remove(_:)``: the reader thread closes the descriptor and forgets it.
      var removed = false
      var ended = false
    }

    let state: Mutex<State>
    let receive: @Sendable ([[UInt8]]) -> Void
    let closed: @Sendable () -> Void

    init(
      fd: Int32, receive: @escaping @Sendable ([[UInt8]]) -> Void,
      closed: @escaping @Sendable () -> Void
    ) {
      state = Mutex(State(fd: fd))
      self.receive = receive
      self.closed = closed
    }
  }

  private enum Command: Sendable { case changed }

  private let entries = Mutex<[Int32: Entry]>([:])
  private let mailbox: LoopMailbox<Command>
  private let maxDatagram: Int
  private let batchLimit: Int
  private let stopped = Mutex(false)
  private let receives = Atomic<Int>(0)

  /// Seconds over which datagrams are gathered while they come fast (0: each read at once).
  private let gathering: Double
  /// Datagrams in one read from which a socket is read at once again, gathering or not.
  private let gatheringCeiling: Int
  private let turns = Atomic<Int>(0)

  /// Starts the reader thread.
  ///
  /// With a `gathering` interval, the thread reads at once what comes slowly, but while a socket's
  /// datagrams arrive more than once per interval it lets them gather and reads that socket once
  /// per interval (``GatheringPace``): one wake-up for several datagrams, each held back at most
  /// that long. Each socket is paced on its own: a lone datagram on one socket is read at once
  /// while another's gather. A socket whose read took `gatheringCeiling` datagrams or more is read
  /// at once again (its sender's end must not fill while it gathers).
  ///
  /// - Parameters:
  ///   - name: The thread's name (in `top -H`, `perf`).
  ///   - maxDatagram: The longest datagram read whole (longer ones are cut); BlueZ's values
  ///     are at most 512 bytes.
  ///   - batchLimit: The most datagrams of one socket handed over in one batch.
  ///   - gathering: The interval over which fast datagrams gather (`.zero`: none).
  ///   - gatheringCeiling: The datagrams in one read from which a socket no longer gathers
  ///     (`nil`: a quarter of `batchLimit`).
  /// - Throws: ``LoopError`` when the wake-up pipe or the thread cannot be made.
  public init(
    name: String, maxDatagram: Int = 1024, batchLimit: Int = 256, gathering: Duration = .zero,
    gatheringCeiling: Int? = nil
  ) throws(LoopError) {
    mailbox = try LoopMailbox()
    self.maxDatagram = max(1, maxDatagram)
    self.batchLimit = max(1, batchLimit)
    self.gathering = max(0, gathering.seconds)
    self.gatheringCeiling = max(2, gatheringCeiling ?? self.batchLimit / 4)
    try startThread(named: name) { [self] in run() }
  }

  /// Registers a socket; from now on its datagrams reach `receive` on the reader thread.
  ///
  /// - Parameters:
  ///   - fd: The socket; the reader owns it from now on (it is made non-blocking, and closed
  ///     when the peer hangs up or at ``remove(_:)``).
  ///   - receive: Called with each batch of values, in order.
  ///   - closed: Called once when the peer hangs up (not after ``remove(_:)``).
  /// - Returns: `false` when the reader has stopped (the socket is closed at once).
  @discardableResult
  public func add(
    _ fd: Int32, receive: @escaping @Sendable ([[UInt8]]) -> Void,
    closed: @escaping @Sendable () -> Void
  ) -> Bool {
    _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
    _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
    let entry = Entry(fd: fd, receive: receive, closed: closed)
    let accepted = stopped.withLock { stopped in
      guard !stopped else { return false }
      entries.withLock { $0[fd] = entry }
      return true
    }
    guard accepted else {
      Glibc.close(fd)
      return false
    }
    _ = mailbox.post(.changed)
    return true
  }

  /// Reads what is waiting on a socket now, on the caller's thread, and hands it to the
  /// socket's handler before returning.
  ///
  /// - Parameter fd: The socket, as registered.
  public func drain(_ fd: Int32) {
    guard let entry = entries.withLock({ $0[fd] }) else { return }
    entry.state.withLock { state in
      guard !state.removed, !state.ended else { return }
      if read(entry, &state, into: makeVector()).ended { state.ended = true }
    }
  }

  /// Takes a socket back: reads what is waiting (handed to its handler before this returns),
  /// then shuts it down (the peer sees a hang-up); the reader thread closes it. Its `closed`
  /// handler is not called.
  ///
  /// - Parameter fd: The socket, as registered.
  public func remove(_ fd: Int32) {
    guard let entry = entries.withLock({ $0[fd] }) else { return }
    entry.state.withLock { state in
      guard !state.removed else { return }
      state.removed = true
      // An ended socket may be closed by the reader thread already, and its number reused.
      guard !state.ended else { return }
      _ = read(entry, &state, into: makeVector())
      _ = shutdown(state.fd, Int32(SHUT_RDWR))
    }
    _ = mailbox.post(.changed)
  }

  /// The sockets registered now.
  public var count: Int { entries.withLock { $0.count } }

  /// The system calls that read datagrams so far (`recvmmsg`, each up to
  /// ``ReceiveVector/capacity`` datagrams; tests).
  var receiveCalls: Int { receives.load(ordering: .relaxed) }

  /// The reader thread's turns that read datagrams so far (tests, benchmarks).
  public var readingTurns: Int { turns.load(ordering: .relaxed) }

  private func makeVector() -> ReceiveVector {
    ReceiveVector(capacity: min(batchLimit, ReceiveVector.defaultCapacity), size: maxDatagram)
  }

  /// Stops the thread; every socket still registered is closed without a `closed` call.
  public func stop() {
    stopped.withLock { $0 = true }
    _ = mailbox.post(.changed)
  }

  // MARK: reader thread

  private func run() {
    // The thread's own buffers; ``drain(_:)`` and ``remove(_:)`` make theirs.
    let vector = makeVector()
    var fds: [pollfd] = []
    var order: [Entry] = []
    // Gathering is per socket: a socket whose values come fast is left out of `poll` until
    // its interval ends, while the others are read at once. `more`: a socket still held
    // datagrams when its batch limit was reached (read again at once, gathering or not).
    var paces: [ObjectIdentifier: GatheringPace] = [:]
    var more = false
    while true {
      _ = mailbox.take()
      if stopped.withLock({ $0 }) { break }
      // Forget removed sockets (closing them here, where no `poll` is using them).
      let current = entries.withLock { entries in
        for (fd, entry) in entries where entry.state.withLock({ $0.removed || $0.ended }) {
          entries[fd] = nil
          Glibc.close(fd)
        }
        return Array(entries.values)
      }
      if paces.count > current.count {
        let kept = Set(current.map(ObjectIdentifier.init))
        paces = paces.filter { kept.contains($0.key) }
      }
      fds.removeAll(keepingCapacity: true)
      order.removeAll(keepingCapacity: true)
      fds.append(mailbox.wakePollFD)
      var wait = Double.infinity
      let start = paces.isEmpty ? 0 : CoarseClock.now()
      for entry in current {
        let id = ObjectIdentifier(entry)
        if let pace = paces[id], pace.gathers(at: start) {
          wait = min(wait, pace.gatherUntil - start)
          continue
        }
        // Its interval (if any) has ended: what this `poll` finds was waiting however late it
        // woke.
        paces[id]?.looking(at: start)
        let fd = entry.state.withLock { $0.fd }
        fds.append(pollfd(fd: fd, events: Int16(POLLIN) | Self.peerClosed, revents: 0))
        order.append(entry)
      }
      let timeout: Int32 =
        more ? 0 : wait.isFinite ? Int32(min(60_000, (wait * 1000).rounded(.up))) : -1
      guard (try? pollDescriptors(&fds, timeout: timeout)) != nil else { continue }
      if fds[0].revents != 0 { mailbox.drainWakeUps() }
      var ended: [Entry] = []
      var readAny = false
      var now: Double?
      more = false
      for (index, entry) in order.enumerated() where fds[index + 1].revents != 0 {
        let hungUp =
          fds[index + 1].revents & (Int16(POLLHUP | POLLERR | POLLNVAL) | Self.peerClosed) != 0
        var delivered = 0
        var full = false
        let finished = entry.state.withLock { state -> Bool in
          guard !state.removed, !state.ended else { return false }
          // After a hang-up the datagrams still queued are read first; `read` says when the
          // queue is empty.
          var outcome = read(entry, &state, into: vector)
          delivered += outcome.values
          var rounds = 0
          while hungUp && !outcome.ended && rounds < 1024 {
            outcome = read(entry, &state, into: vector)
            delivered += outcome.values
            rounds += 1
          }
          full = outcome.full && !hungUp
          if outcome.ended || hungUp { state.ended = true }
          return state.ended
        }
        if finished { ended.append(entry) }
        if full { more = true }
        guard delivered > 0 else { continue }
        readAny = true
        if gathering > 0 {
          let t = now ?? CoarseClock.now()
          now = t
          let id = ObjectIdentifier(entry)
          var pace =
            paces[id]
            ?? GatheringPace(
              interval: gathering, ceiling: gatheringCeiling,
              clockResolution: CoarseClock.resolution)
          // Not when the batch limit left some waiting, nor past the ceiling: read at once.
          pace.record(delivered, at: t, moreWaiting: full)
          paces[id] = pace
        }
      }
      for entry in ended { entry.closed() }
      if !ended.isEmpty { _ = mailbox.post(.changed) }
      if readAny { turns.add(1, ordering: .relaxed) }
    }
    _ = mailbox.close()
    let remaining = entries.withLock { entries in
      defer { entries.removeAll() }
      return Array(entries.keys)
    }
    for fd in remaining { Glibc.close(fd) }
  }

  /// What one ``read(_:_:into:)`` did.
  private struct ReadOutcome {
    /// The socket has ended (hang-up or error).
    var ended = false
    /// Values handed over.
    var values = 0
    /// The batch limit was reached (more may wait).
    var full = false
  }

  /// Reads up to the batch limit of datagrams and hands them over: as many as wait in one
  /// `recvmmsg` per ``ReceiveVector/capacity``, so a lone value costs one system call (two with
  /// `recv`, whose second call only learns that the socket is empty).
  ///
  /// After a hang-up every slot past the queued datagrams reads empty. So empty slots before the
  /// last non-empty one of a call are values; empty slots after it are values unless the peer
  /// has hung up (then they are the end: an empty value sent just before the hang-up cannot be
  /// told from it).
  private func read(_ entry: Entry, _ state: inout Entry.State, into vector: ReceiveVector)
    -> ReadOutcome
  {
    var values: [[UInt8]] = []
    var ended = false
    reading: while values.count < batchLimit {
      let want = min(vector.capacity, batchLimit - values.count)
      let calls = vector.systemCalls
      let result = vector.receive(from: state.fd, upTo: want)
      receives.add(vector.systemCalls - calls, ordering: .relaxed)
      switch result {
      case .failed(let code):
        if code == EINTR { continue }
        if code != EAGAIN && code != EWOULDBLOCK { ended = true }
        break reading
      case .received(let count):
        var kept = count
        let trailing = ((0..<count).last { vector.length(at: $0) > 0 } ?? -1) + 1
        if trailing < count && Self.hungUp(state.fd) {
          kept = trailing
          ended = true
        }
        for index in 0..<kept { values.append(vector.value(at: index)) }
        // Fewer than asked for: the socket is empty now.
        if ended || count < want { break reading }
      }
    }
    if !values.isEmpty { entry.receive(values) }
    return ReadOutcome(
      ended: ended, values: values.count, full: !ended && values.count >= batchLimit)
  }

  /// `POLLRDHUP` (Linux; glibc declares it only for `_GNU_SOURCE`): the peer shut its end.
  private static let peerClosed: Int16 = 0x2000

  private static func hungUp(_ fd: Int32) -> Bool {
    var probe = pollfd(fd: fd, events: Int16(POLLIN) | peerClosed, revents: 0)
    return poll(&probe, 1, 0) > 0
      && probe.revents & (Int16(POLLHUP | POLLERR) | peerClosed) != 0
  }
}
