public import Glibc
public import Synchronization

/// The mailbox of a loop thread (the MQTT client's and each D-Bus connection's): other threads
/// post commands and wake the thread through a pipe, which the thread polls together with its
/// own sockets.
///
/// The thread must call ``take()`` after every wake-up and before every `poll` (the loops do:
/// take, work, poll, drain the pipe, take …): a command posted while others wait writes no
/// wake-up byte.
///
/// Once ``close()`` has been called, ``post(_:)`` refuses every command, so that the caller
/// answers it itself and nothing waits for a thread that has ended.
public final class LoopMailbox<Command: Sendable>: Sendable {
  // `post(contentsOf:)` and `take()` run for every batch a thread hands over: inlinable, so
  // that they are specialised for the command type instead of looking its metadata up.
  @usableFromInline let inbox = Mutex<(commands: [Command], closed: Bool)>(([], false))
  /// The read end of the wake-up pipe: poll it for `POLLIN`.
  public let wakeFD: Int32
  @usableFromInline let wakeWriteFD: Int32

  /// Makes a mailbox with a non-blocking, close-on-exec wake-up pipe.
  ///
  /// - Throws: ``LoopError`` when the pipe cannot be made.
  public init() throws(LoopError) {
    var fds: [Int32] = [-1, -1]
    guard pipe(&fds) == 0 else { throw LoopError("pipe failed", errno: errno) }
    for fd in fds {
      let flags = fcntl(fd, F_GETFL)
      guard flags >= 0, fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0,
        fcntl(fd, F_SETFD, FD_CLOEXEC) == 0
      else {
        let code = errno
        for fd in fds { Glibc.close(fd) }
        throw LoopError("fcntl on the wake-up pipe failed", errno: code)
      }
    }
    wakeFD = fds[0]
    wakeWriteFD = fds[1]
  }

  deinit {
    Glibc.close(wakeFD)
    Glibc.close(wakeWriteFD)
  }

  /// Posts a command and wakes the thread.
  ///
  /// - Parameter command: The command.
  /// - Returns: `false` when the mailbox is closed: the caller must answer the command.
  public func post(_ command: Command) -> Bool {
    post(contentsOf: CollectionOfOne(command))
  }

  /// Posts commands in order and wakes the thread once.
  ///
  /// - Parameter commands: The commands.
  /// - Returns: `false` when the mailbox is closed: the caller must answer every command.
  @inlinable
  public func post(contentsOf commands: some Collection<Command>) -> Bool {
    guard !commands.isEmpty else { return true }
    let (accepted, first) = inbox.withLock { inbox in
      guard !inbox.closed else { return (false, false) }
      let wasEmpty = inbox.commands.isEmpty
      inbox.commands.append(contentsOf: commands)
      return (true, wasEmpty)
    }
    guard accepted else { return false }
    // Only the first command of a batch writes to the pipe: the thread takes every waiting
    // command at once, and takes them again before it polls, so later ones need no wake-up
    // of their own (one system call per batch, not per command).
    if first {
      var one: UInt8 = 1
      _ = write(wakeWriteFD, &one, 1)  // a full pipe already means "wake up"
    }
    return true
  }

  /// Wakes the thread without a command (another thread did work for it and it should poll
  /// again: its socket now has data to write, its next deadline moved).
  public func wake() {
    var one: UInt8 = 1
    _ = write(wakeWriteFD, &one, 1)  // a full pipe already means "wake up"
  }

  /// The commands posted since the last call, oldest first (loop thread, or a thread that holds
  /// what the loop thread holds while it works).
  @inlinable
  public func take() -> [Command] {
    inbox.withLock { inbox in
      var taken: [Command] = []
      swap(&taken, &inbox.commands)
      return taken
    }
  }

  /// Closes the mailbox (loop thread, when it ends).
  ///
  /// - Returns: The commands still waiting, for the thread to answer.
  public func close() -> [Command] {
    inbox.withLock { inbox in
      inbox.closed = true
      defer { inbox.commands.removeAll() }
      return inbox.commands
    }
  }

  /// Empties the wake-up pipe after `poll` reported it readable: one `read` unless the pipe
  /// held a full buffer's worth (a read that returns less has emptied it; another read would
  /// only learn that).
  public func drainWakeUps() {
    withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 256) { buffer in
      while read(wakeFD, buffer.baseAddress, buffer.count) == buffer.count {}
    }
  }

  /// The `pollfd` of the wake-up pipe.
  public var wakePollFD: pollfd { pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0) }
}

/// Waits with `poll(2)`; an interruption by a signal counts as "nothing ready".
///
/// - Parameters:
///   - fds: The descriptors; their `revents` are set.
///   - timeout: Milliseconds, `-1` for no limit.
/// - Returns: How many descriptors are ready.
/// - Throws: ``LoopError`` for any other failure of `poll`, after waiting out `timeout` (at
///   most ``pollFailurePause`` milliseconds, and that much when `timeout` is `0` or `-1`):
///   such a failure (`EINVAL`, `ENOMEM`) comes again at once, and a loop that polls again
///   after it must not spin.
public func pollDescriptors(_ fds: inout [pollfd], timeout: Int32) throws(LoopError) -> Int {
  let ready = poll(&fds, nfds_t(fds.count), timeout)
  if ready >= 0 { return Int(ready) }
  let code = errno
  if code == EINTR { return 0 }
  let milliseconds = timeout <= 0 ? pollFailurePause : min(timeout, pollFailurePause)
  var pause = timespec(tv_sec: 0, tv_nsec: Int(milliseconds) * 1_000_000)
  _ = nanosleep(&pause, nil)
  throw LoopError("poll failed", errno: code)
}

/// The longest wait, in milliseconds, after a failed `poll` (see ``pollDescriptors(_:timeout:)``).
public let pollFailurePause: Int32 = 100

/// A system call of a loop thread failed.
public struct LoopError: Error, Sendable, CustomStringConvertible {
  /// What failed, with the system's reason.
  public var description: String

  /// An error saying that `what` failed, and why (`strerror` of `code`).
  ///
  /// - Parameters:
  ///   - what: The call that failed.
  ///   - code: The `errno` it left.
  public init(_ what: String, errno code: Int32) {
    description = "\(what): \(String(cString: strerror(code)))"
  }
}
