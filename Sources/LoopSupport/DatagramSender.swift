import Dispatch
import Glibc
import Synchronization

/// The sending end of a `SOCK_SEQPACKET` socket pair whose other end is handed to another
/// process (BlueZ's `AcquireNotify` of a local characteristic: bluetoothd reads one
/// notification per datagram from it).
///
/// Sends never block: a full socket answers ``SendResult/full`` and ``waitWritable(timeout:)``
/// waits (off the caller's thread) until it drains, which is the back-pressure of the reader.
/// ``unsent`` tells how many bytes the reader has not taken yet, so that a caller can wait for
/// them before it hangs up (datagrams still queued are lost when the socket is closed).
public final class DatagramSender: Sendable {
  /// What a send did.
  public enum SendResult: Sendable, Hashable {
    /// The datagram is queued for the reader.
    case sent
    /// The socket's buffer is full; nothing was queued.
    case full
    /// The reader hung up (or the socket was shut down); nothing was queued.
    case closed
    /// The system refused the datagram (too long for the socket, out of memory, …); nothing
    /// was queued, the socket stays usable.
    case refused(errno: Int32)
  }

  /// The descriptor; -1 once closed.
  private let fd: Mutex<Int32>

  private init(fd: Int32) {
    self.fd = Mutex(fd)
  }

  deinit {
    fd.withLock { fd in
      if fd >= 0 { Glibc.close(fd) }
    }
  }

  /// A descriptor of the same socket (close-on-exec) for a watcher such as
  /// ``DatagramReader``, which sees the reader's hang-up; `nil` once closed or when `dup`
  /// fails. Shutting the duplicate down (``DatagramReader/remove(_:)``) hangs up this sender
  /// too.
  public func duplicate() -> Int32? {
    fd.withLock { fd in
      guard fd >= 0 else { return nil }
      let copy = fcntl(fd, F_DUPFD_CLOEXEC, 0)
      return copy >= 0 ? copy : nil
    }
  }

  /// Makes a connected pair: the sender, and the other end for the reader (close-on-exec; the
  /// caller owns it and usually hands it over, e.g. as a D-Bus `h` argument).
  ///
  /// - Parameter sendBuffer: The send buffer asked for, in bytes (`SO_SNDBUF`; the kernel
  ///   doubles it and caps it at `net.core.wmem_max`); `nil` keeps the default.
  /// - Returns: The sender and the reader's descriptor.
  /// - Throws: ``LoopError`` when the pair cannot be made.
  public static func makePair(sendBuffer: Int? = nil) throws(LoopError) -> (
    sender: DatagramSender, peer: Int32
  ) {
    var fds: [Int32] = [-1, -1]
    let kind = Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue)
    guard socketpair(AF_UNIX, kind, 0, &fds) == 0 else {
      throw LoopError("socketpair failed", errno: errno)
    }
    _ = fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK)
    if let sendBuffer {
      var size = Int32(clamping: sendBuffer)
      _ = setsockopt(
        fds[0], SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
    }
    return (DatagramSender(fd: fds[0]), fds[1])
  }

  /// Queues one datagram without blocking.
  ///
  /// - Parameter bytes: The datagram.
  /// - Returns: What happened.
  public func send(_ bytes: [UInt8]) -> SendResult {
    fd.withLock { fd in
      guard fd >= 0 else { return .closed }
      while true {
        let sent = bytes.withUnsafeBytes { buffer in
          Glibc.send(fd, buffer.baseAddress, buffer.count, Int32(MSG_DONTWAIT | MSG_NOSIGNAL))
        }
        if sent >= 0 { return .sent }
        switch errno {
        case EINTR: continue
        case EAGAIN, EWOULDBLOCK, ENOBUFS: return .full
        case EPIPE, ECONNRESET, ENOTCONN, EBADF: return .closed
        case let code: return .refused(errno: code)
        }
      }
    }
  }

  /// Waits until the socket can take a datagram, it is closed, or `timeout` passes; `poll`
  /// runs on a dispatch worker, not on the caller's thread.
  ///
  /// - Parameter timeout: The longest wait.
  /// - Returns: Whether a datagram fits now (`false` after the timeout or once closed).
  public func waitWritable(timeout: Duration) async -> Bool {
    let millis = Int32(clamping: timeout.milliseconds)
    return await withCheckedContinuation { (done: CheckedContinuation<Bool, Never>) in
      DispatchQueue.global().async {
        // The lock is not held while polling: `close()` may run meanwhile, and then the poll
        // sees a shut-down socket (POLLHUP) and returns.
        let current = self.fd.withLock { $0 }
        guard current >= 0 else { return done.resume(returning: false) }
        var probe = pollfd(fd: current, events: Int16(POLLOUT), revents: 0)
        let ready = poll(&probe, 1, max(0, millis))
        done.resume(
          returning: ready > 0 && probe.revents & Int16(POLLOUT) != 0
            && probe.revents & Int16(POLLHUP | POLLERR | POLLNVAL) == 0)
      }
    }
  }

  /// Bytes queued that the reader has not taken yet (`SIOCOUTQ`); 0 once closed.
  public var unsent: Int {
    fd.withLock { fd in
      guard fd >= 0 else { return 0 }
      var count: Int32 = 0
      // SIOCOUTQ is TIOCOUTQ on Linux.
      return ioctl(fd, UInt(TIOCOUTQ), &count) == 0 ? Int(count) : 0
    }
  }

  /// Hangs up: the reader sees the end (after the datagrams it has not read yet, which it may
  /// drop). Further sends answer ``SendResult/closed``.
  public func close() {
    fd.withLock { fd in
      guard fd >= 0 else { return }
      _ = shutdown(fd, Int32(SHUT_RDWR))
    }
  }
}
