import Foundation
import Glibc

/// The service manager's side of `sd_notify(3)` for tests: an `AF_UNIX` datagram socket bound
/// to a fresh path (or an abstract name), collecting what a process sends to `$NOTIFY_SOCKET`.
public final class NotifyListener: @unchecked Sendable {
  // Safety: `fd` is set once; `received` is only touched by the test's task.
  private let fd: Int32
  /// The value for `$NOTIFY_SOCKET`.
  public let address: String
  private let path: String?
  /// Every datagram received so far, in order.
  public private(set) var received: [String] = []

  /// Binds a socket in the temporary directory, or in the abstract namespace.
  ///
  /// - Parameter abstract: Whether to use an abstract name (`@…`).
  /// - Throws: `POSIXError` when the socket cannot be made or bound.
  public init(abstract: Bool = false) throws {
    fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { throw POSIXError(.EIO) }
    let name = "gatt2mqtt-notify-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
    var bytes: [UInt8]
    if abstract {
      address = "@" + name
      path = nil
      bytes = [0] + Array(name.utf8)
    } else {
      let file = NSTemporaryDirectory() + name + ".sock"
      address = file
      path = file
      bytes = Array(file.utf8)
    }
    var socketAddress = sockaddr_un()
    socketAddress.sun_family = sa_family_t(AF_UNIX)
    withUnsafeMutableBytes(of: &socketAddress.sun_path) { $0.copyBytes(from: bytes) }
    let length = socklen_t(MemoryLayout<sa_family_t>.size + bytes.count + (abstract ? 0 : 1))
    let bound = withUnsafePointer(to: &socketAddress) {
      $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
    }
    guard bound == 0 else {
      close(fd)
      throw POSIXError(.EADDRINUSE)
    }
  }

  deinit {
    close(fd)
    if let path { unlink(path) }
  }

  /// Reads every datagram waiting now.
  public func drain() {
    var buffer = [UInt8](repeating: 0, count: 4096)
    while true {
      var probe = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
      guard poll(&probe, 1, 0) == 1 else { return }
      let count = recv(fd, &buffer, buffer.count, Int32(MSG_DONTWAIT))
      guard count >= 0 else { return }
      received.append(String(decoding: buffer[..<count], as: UTF8.self))
    }
  }

  /// Waits up to `seconds` for a datagram with a line that `match` accepts.
  ///
  /// - Returns: That datagram, or `nil`.
  public func next(
    within seconds: Double, after index: Int = 0, where match: (String) -> Bool
  ) async -> String? {
    let deadline = Date().addingTimeInterval(seconds)
    while true {
      drain()
      if let found = received.dropFirst(index).first(where: {
        $0.split(separator: "\n").contains { match(String($0)) }
      }) {
        return found
      }
      guard Date() < deadline else { return nil }
      try? await Task.sleep(for: .milliseconds(20))
    }
  }
}
