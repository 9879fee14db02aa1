import Glibc
import Synchronization

/// Runs a turn on a thread of its own, again when the wait the turn asked for has passed or as
/// soon as ``wake()`` is called, until ``stop()``.
///
/// It is the timer of the simulated radio: a radio that produces events on a schedule hands
/// them to the bridge on this thread, as BlueZ's sockets do on their reader thread. A turn costs
/// one system call to sleep (`poll` on the wake-up pipe), where a `Task.sleep` loop costs a
/// timer armed on libdispatch's manager thread, its wake-up and a hand-off to a worker thread
/// (issue 14's profile of the simulated world).
public final class DeadlineThread: Sendable {
  private enum Command: Sendable { case wake }

  private let mailbox: LoopMailbox<Command>
  private let stopped = Atomic<Bool>(false)
  /// Whether the thread has ended, and who waits for it.
  private let ending = Mutex<(ended: Bool, waiters: [CheckedContinuation<Void, Never>])>(
    (false, []))

  private let name: String
  private let turn: @Sendable () -> Double?
  private let started = Atomic<Bool>(false)

  /// Makes the thread; ``start()`` starts it.
  ///
  /// - Parameters:
  ///   - name: The thread's name (in `top -H`, `perf`).
  ///   - turn: One turn of work; returns the seconds to wait before the next one, `nil` to
  ///     wait until ``wake()``. It runs on the thread, never twice at once.
  /// - Throws: ``LoopError`` when the wake-up pipe cannot be made.
  public init(name: String, turn: @escaping @Sendable () -> Double?) throws(LoopError) {
    mailbox = try LoopMailbox()
    self.name = name
    self.turn = turn
  }

  /// Starts the thread (once); it runs a turn at once. A ``wake()`` that came before is not
  /// lost: the first turn runs after it.
  ///
  /// - Throws: ``LoopError`` when the system refuses the thread; it has ended then (its turns
  ///   never run, ``ended()`` returns at once).
  public func start() throws(LoopError) {
    guard !started.exchange(true, ordering: .sequentiallyConsistent) else { return }
    // Stopped before it started: it never runs.
    guard !stopped.load(ordering: .sequentiallyConsistent) else { return markEnded() }
    do {
      try startThread(named: name) { [self] in run(turn) }
    } catch {
      _ = mailbox.close()
      markEnded()
      throw error
    }
  }

  /// Ends the wait the thread is in (its next turn runs at once).
  public func wake() {
    _ = mailbox.post(.wake)
  }

  /// Stops the thread after the turn it is in, if any.
  public func stop() {
    stopped.store(true, ordering: .sequentiallyConsistent)
    _ = mailbox.post(.wake)
    // Never started: nothing will end it (`start` now refuses to).
    if !started.load(ordering: .sequentiallyConsistent) { markEnded() }
  }

  /// Returns once the thread has ended (after ``stop()``; a thread stopped before it started
  /// has ended then).
  public func ended() async {
    await withCheckedContinuation { continuation in
      let done = ending.withLock { ending in
        if !ending.ended { ending.waiters.append(continuation) }
        return ending.ended
      }
      if done { continuation.resume() }
    }
  }

  // MARK: the thread

  private func run(_ turn: @Sendable () -> Double?) {
    var fds = [mailbox.wakePollFD]
    while !stopped.load(ordering: .sequentiallyConsistent) {
      _ = mailbox.take()
      // A wait that is not a number of seconds (a bug in the turn) waits for a wake-up.
      let wait = turn().flatMap { $0.isFinite ? $0 : nil }
      if stopped.load(ordering: .sequentiallyConsistent) { break }
      fds[0].revents = 0
      if let wait, wait < 0.001 {
        // Below poll's millisecond: sleep it out (a wake-up meanwhile is seen right after).
        var pause = timespec(tv_sec: 0, tv_nsec: Int(max(0, wait) * 1e9))
        _ = nanosleep(&pause, nil)
      } else {
        let milliseconds = wait.map { Int32(min($0 * 1000, 3_600_000).rounded(.up)) } ?? -1
        // A failure waits a while (``pollDescriptors(_:timeout:)``), then the next turn runs.
        _ = try? pollDescriptors(&fds, timeout: milliseconds)
      }
      // An interruption or a failure of `poll` or `nanosleep` only ends the wait early: the
      // next turn says how long to wait again.
      if fds[0].revents != 0 { mailbox.drainWakeUps() }
    }
    _ = mailbox.close()
    markEnded()
  }

  /// Notes the end and answers whoever waits for it (more than once is harmless).
  private func markEnded() {
    let waiters = ending.withLock { ending in
      ending.ended = true
      defer { ending.waiters.removeAll() }
      return ending.waiters
    }
    for waiter in waiters { waiter.resume() }
  }
}
