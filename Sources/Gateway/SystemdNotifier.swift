import Foundation
import Glibc

/// The service manager's notification protocol (`sd_notify(3)`): one datagram of `KEY=value`
/// lines to the `AF_UNIX` socket that `$NOTIFY_SOCKET` names (a path, or an abstract name
/// written with a leading `@`). systemd sets it for a `Type=notify` unit; without it every call
/// does nothing, so the gateway behaves the same under any other supervisor or in a terminal.
///
/// The gateway sends `READY=1` once it runs (the MQTT client started, the Bluetooth role up or
/// retrying), `STATUS=` lines a person reads in `systemctl status`, `WATCHDOG=1` while its loops
/// answer (``watchdogInterval``, from `$WATCHDOG_USEC` when `$WATCHDOG_PID` is unset or ours),
/// and `STOPPING=1` when it begins to stop.
public struct SystemdNotifier: Sendable {
  /// The socket's address as given, `nil` when not supervised.
  public let socketPath: String?
  /// How often systemd expects `WATCHDOG=1` at the latest (`WatchdogSec=`), `nil` without a
  /// watchdog.
  public let watchdogInterval: Duration?

  /// Reads `$NOTIFY_SOCKET`, `$WATCHDOG_USEC` and `$WATCHDOG_PID` of this process.
  public init() {
    self.init(environment: ProcessInfo.processInfo.environment)
  }

  /// Reads `$NOTIFY_SOCKET`, `$WATCHDOG_USEC` and `$WATCHDOG_PID`.
  ///
  /// - Parameter environment: An environment.
  public init(environment: [String: String]) {
    let path = environment["NOTIFY_SOCKET"].flatMap { $0.isEmpty ? nil : $0 }
    socketPath = path
    let forUs = environment["WATCHDOG_PID"].map { $0 == String(getpid()) } ?? true
    if path != nil, forUs, let text = environment["WATCHDOG_USEC"], let usec = UInt64(text),
      usec > 0
    {
      watchdogInterval = .microseconds(Int64(min(usec, UInt64(Int64.max))))
    } else {
      watchdogInterval = nil
    }
  }

  /// Whether a service manager listens.
  public var isEnabled: Bool { socketPath != nil }

  /// Sends one notification (lines `KEY=value`).
  ///
  /// - Parameter state: For example `"READY=1\nSTATUS=connected"`.
  /// - Returns: Whether the datagram was sent (`false` also when not supervised).
  @discardableResult
  public func send(_ state: String) -> Bool {
    guard let socketPath else { return false }
    var address = sockaddr_un()
    address.sun_family = sa_family_t(AF_UNIX)
    var path = Array(socketPath.utf8)
    if path.first == UInt8(ascii: "@") { path[0] = 0 }  // abstract namespace
    let capacity = MemoryLayout.size(ofValue: address.sun_path)
    guard !path.isEmpty, path.count < capacity else { return false }
    withUnsafeMutableBytes(of: &address.sun_path) { raw in
      raw.copyBytes(from: path)
    }
    let length = socklen_t(MemoryLayout<sa_family_t>.size + path.count + (path[0] == 0 ? 0 : 1))
    let fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
    guard fd >= 0 else { return false }
    defer { close(fd) }
    let bytes = Array(state.utf8)
    let sent = withUnsafePointer(to: &address) { pointer in
      pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
        bytes.withUnsafeBytes {
          sendto(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL), socketAddress, length)
        }
      }
    }
    return sent == bytes.count
  }

  /// `STATUS=<text>` with control characters replaced (one line in `systemctl status`).
  ///
  /// - Parameter text: What to show.
  /// - Returns: The line.
  public static func status(_ text: String) -> String {
    "STATUS="
      + String(
        String.UnicodeScalarView(
          text.unicodeScalars.map { $0.properties.generalCategory == .control ? " " : $0 }))
  }
}
