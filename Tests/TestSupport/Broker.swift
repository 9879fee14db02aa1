public import Foundation
import Glibc

/// A real `mosquitto` broker on a free loopback port, started and stopped by a test.
public final class Broker: @unchecked Sendable {
  // Safety: `process` is only touched by the test that owns the broker, one call at a time.

  /// Where Debian installs the broker.
  public static let executable = "/usr/sbin/mosquitto"
  /// Whether the broker binary is installed (tests that need it are disabled, with this
  /// reason, when it is not).
  public static var isAvailable: Bool { FileManager.default.isExecutableFile(atPath: executable) }

  /// TCP port the broker listens on (127.0.0.1); chosen again when another process took it
  /// between ``init(configuration:persistence:)`` and the first ``start()``.
  public private(set) var port: Int
  private var everStarted = false
  /// Folder holding the broker's configuration, logs and persistence.
  public let directory: URL
  private var extraConfiguration: String
  private var process: ChildProcess?

  /// Prepares a broker; call ``start()``.
  /// - Parameters:
  ///   - configuration: extra `mosquitto.conf` lines for the listener (TLS, passwords, …).
  ///   - persistence: keep messages and sessions across restarts.
  /// - Throws: ``TestFailure`` when no free port or folder can be had.
  public init(configuration: String = "allow_anonymous true", persistence: Bool = false) throws {
    port = try freeLoopbackPort()
    directory = try makeTemporaryDirectory(prefix: "broker")
    var lines = configuration
    if persistence {
      lines += "\npersistence true\npersistence_location \(directory.path)/\nautosave_interval 1\n"
    }
    extraConfiguration = lines
  }

  deinit { stop() }

  /// Writes the configuration and starts the broker; returns when it accepts connections
  /// (waiting with `Task.sleep`: no cooperative thread blocks while it starts).
  public func start() async throws {
    // The free port was free when chosen; with tests running in parallel another process may
    // take it before the broker binds it. Only the first start may move (restarts keep the
    // port the clients know).
    for attempt in 1...5 {
      do {
        try await startOnce()
        everStarted = true
        return
      } catch let failure as TestFailure
        where !everStarted && attempt < 5 && log.contains("Address already in use")
      {
        _ = failure
        try? FileManager.default.removeItem(atPath: directory.path + "/broker.log")
        port = try freeLoopbackPort()
      }
    }
  }

  private func startOnce() async throws {
    let conf = directory.appendingPathComponent("mosquitto.conf")
    var text = "per_listener_settings false\n"
    if getuid() == 0 { text += "user root\n" }
    text += "log_dest file \(directory.path)/broker.log\nlog_type all\n"
    text += "listener \(port) 127.0.0.1\n"
    text += extraConfiguration + "\n"
    try text.write(to: conf, atomically: true, encoding: .utf8)
    let process = try ChildProcess(
      Broker.executable, ["-c", conf.path], outputPath: directory.path + "/broker.out")
    self.process = process
    let deadline = Date().addingTimeInterval(10)
    while Date() < deadline {
      if canConnect(port: port) { return }
      if !process.isRunning {
        throw TestFailure("mosquitto exited at start; see \(directory.path)/broker.log")
      }
      try await Task.sleep(for: .milliseconds(20))
    }
    throw TestFailure("mosquitto did not listen on \(port) within 10 s")
  }

  /// Stops the broker with `signal` (SIGTERM: clean, saves persistence; SIGKILL: crash).
  public func stop(signal: Int32 = SIGTERM) {
    guard let process else { return }
    process.signal(signal)
    process.wait()
    self.process = nil
  }

  /// Freezes (`SIGSTOP`) or thaws (`SIGCONT`) the broker: connections stay open, nothing is
  /// answered meanwhile.
  public func freeze(_ frozen: Bool) {
    process?.signal(frozen ? SIGSTOP : SIGCONT)
  }

  /// Replaces the listener configuration (takes effect at the next ``start()``).
  public func reconfigure(_ configuration: String) {
    extraConfiguration = configuration
  }

  /// The broker's log so far (for failure messages).
  public var log: String {
    (try? String(contentsOfFile: directory.path + "/broker.log", encoding: .utf8)) ?? ""
  }

  /// Writes a mosquitto password file with one user and returns its path.
  public func passwordFile(user: String, password: String) async throws -> String {
    let path = directory.path + "/passwd"
    _ = FileManager.default.createFile(atPath: path, contents: nil)
    let result = try await runProcess("/usr/bin/mosquitto_passwd", ["-b", path, user, password])
    guard result.status == 0 else { throw TestFailure("mosquitto_passwd failed: \(result.output)") }
    return path
  }
}

/// An error thrown by test helpers.
public struct TestFailure: Error, CustomStringConvertible {
  /// What went wrong.
  public let description: String
  /// Creates the error.
  public init(_ description: String) { self.description = description }
}

/// Finds a TCP port that is free on 127.0.0.1 right now.
public func freeLoopbackPort() throws -> Int {
  let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
  guard fd >= 0 else { throw TestFailure("socket() failed") }
  defer { close(fd) }
  var address = sockaddr_in()
  address.sin_family = sa_family_t(AF_INET)
  address.sin_port = 0
  address.sin_addr.s_addr = inet_addr("127.0.0.1")
  var length = socklen_t(MemoryLayout<sockaddr_in>.size)
  let bound = withUnsafeMutablePointer(to: &address) {
    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
      bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
    }
  }
  guard bound else { throw TestFailure("bind() failed") }
  return Int(UInt16(bigEndian: address.sin_port))
}

/// Whether something accepts TCP connections on 127.0.0.1:`port`.
public func canConnect(port: Int) -> Bool {
  let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
  guard fd >= 0 else { return false }
  defer { close(fd) }
  var address = sockaddr_in()
  address.sin_family = sa_family_t(AF_INET)
  address.sin_port = in_port_t(UInt16(port).bigEndian)
  address.sin_addr.s_addr = inet_addr("127.0.0.1")
  return withUnsafePointer(to: &address) {
    $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
      connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
    }
  }
}

/// Creates a fresh folder under the system's temporary folder.
public func makeTemporaryDirectory(prefix: String) throws -> URL {
  let url = FileManager.default.temporaryDirectory
    .appendingPathComponent("gatt2mqtt-\(prefix)-\(UUID().uuidString.prefix(8))")
  try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
  return url
}

/// Polls `condition` every 20 ms until it holds or `timeout` seconds pass.
public func eventually(
  timeout: Double = 10, _ condition: @Sendable () async throws -> Bool
) async rethrows -> Bool {
  let deadline = Date().addingTimeInterval(timeout)
  while Date() < deadline {
    if try await condition() { return true }
    try? await Task.sleep(for: .milliseconds(20))
  }
  return try await condition()
}
