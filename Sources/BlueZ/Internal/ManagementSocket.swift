import BridgeCore
import Glibc

/// One query on the kernel's Bluetooth management interface: a raw HCI socket bound to the
/// control channel, the command written, replies read (other events skipped) until ours comes
/// or the deadline passes, the socket closed. Blocking: run it off the cooperative pool.
enum ManagementSocket {
  private static let addressFamily: Int32 = 31  // AF_BLUETOOTH
  private static let hciProtocol: Int32 = 1  // BTPROTO_HCI
  private static let noDevice: UInt16 = 0xFFFF  // HCI_DEV_NONE
  private static let controlChannel: UInt16 = 3  // HCI_CHANNEL_CONTROL

  /// Sends `command` to controller `index` and returns the first reply about it.
  ///
  /// - Parameters:
  ///   - command: The command packet.
  ///   - index: The controller it is for.
  ///   - timeout: Seconds to wait for the reply.
  /// - Returns: The reply.
  /// - Throws: ``CentralError``: `unavailable` when the kernel has no Bluetooth management
  ///   interface, `timeout`, `bluez_error` for a failing system call.
  static func query(_ command: [UInt8], index: UInt16, timeout: Double) throws(CentralError)
    -> ManagementPacket.Reply
  {
    let fd = try open(purpose: "reading a link's RSSI")
    defer { close(fd) }
    // The kernel answers every command with a Command Status or Complete event; for a command
    // it refuses outright (an unprivileged socket) `write` returns 0, not the length (seen in
    // the lab): only a negative count is a failure.
    let written = command.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
    guard written >= 0 else { throw failure("write", errno) }
    var buffer = [UInt8](repeating: 0, count: 1024)
    var remaining = Int32(max(1, timeout * 1000))
    while remaining > 0 {
      var pollfd = Glibc.pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
      let started = Monotonic.milliseconds()
      let ready = poll(&pollfd, 1, remaining)
      let code = errno
      remaining -= Int32(clamping: Monotonic.milliseconds() - started)
      if ready < 0 {
        if code == EINTR { continue }
        throw failure("poll", code)
      }
      guard ready > 0 else { break }
      let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
      if count < 0 {
        if errno == EINTR || errno == EAGAIN { continue }
        throw failure("read", errno)
      }
      let reply = ManagementPacket.reply(Array(buffer[0..<count]), index: index)
      if reply != .unrelated { return reply }
    }
    throw CentralError(
      .timeout, message: "the kernel did not answer Get Connection Information within \(timeout) s")
  }

  /// Opens a control-channel socket (close it when done).
  ///
  /// - Parameter purpose: What it is for, in the error for a refusal ("reading a link's RSSI").
  /// - Returns: The socket, bound to the control channel.
  /// - Throws: ``CentralError``: `not_permitted` when the process may not open it, `unavailable`
  ///   when the kernel has no Bluetooth management interface, `bluez_error` for another failing
  ///   system call.
  static func open(purpose: String) throws(CentralError) -> Int32 {
    let fd = socket(
      addressFamily, Int32(SOCK_RAW.rawValue) | Int32(SOCK_CLOEXEC.rawValue), hciProtocol)
    guard fd >= 0 else {
      let code = errno
      if code == EPERM || code == EACCES {
        throw CentralError(
          .notPermitted,
          message:
            "opening a Bluetooth management socket was refused (\(String(cString: strerror(code)))); \(purpose) needs CAP_NET_ADMIN"
        )
      }
      guard code == EAFNOSUPPORT || code == EPROTONOSUPPORT else {
        // Out of descriptors or buffers: try again at the next reading.
        throw failure("socket", code)
      }
      throw CentralError(
        .unavailable,
        message:
          "cannot open a Bluetooth management socket (\(String(cString: strerror(code)))): the kernel has no Bluetooth, or the process may not use AF_BLUETOOTH sockets (systemd's RestrictAddressFamilies)"
      )
    }
    // struct sockaddr_hci { sa_family_t family; unsigned short dev, channel; }
    var address: [UInt8] = [
      UInt8(addressFamily), 0, UInt8(noDevice & 0xFF), UInt8(noDevice >> 8),
      UInt8(controlChannel), 0,
    ]
    let bound = address.withUnsafeMutableBytes { raw in
      raw.withMemoryRebound(to: sockaddr.self) { bind(fd, $0.baseAddress, socklen_t(raw.count)) }
    }
    guard bound == 0 else {
      let code = errno
      close(fd)
      throw failure("bind", code)
    }
    return fd
  }

  static func failure(_ call: String, _ code: Int32) -> CentralError {
    CentralError(
      .bluezError,
      message: "Bluetooth management socket: \(call): \(String(cString: strerror(code)))")
  }
}

/// Milliseconds of a monotonic clock.
private enum Monotonic {
  static func milliseconds() -> Int64 {
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
  }
}
