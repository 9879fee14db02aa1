public import DBus
import Foundation
import Glibc

/// A private `dbus-daemon` on a Unix socket in a temporary folder, started and stopped by a test.
public final class PrivateBus: Sendable {
  /// Where Debian installs dbus-daemon.
  public static let daemonPath = "/usr/bin/dbus-daemon"
  /// systemd's busctl, for introspection tests.
  public static let busctlPath = "/usr/bin/busctl"
  /// GLib's gdbus, for introspection tests.
  public static let gdbusPath = "/usr/bin/gdbus"

  /// Whether `dbus-daemon` is installed (the D-Bus suites are disabled otherwise).
  public static let isAvailable = access(daemonPath, X_OK) == 0

  /// The bus address, `unix:path=…`.
  public let address: String
  /// The folder holding the socket and the configuration.
  public let folder: String
  private let daemon: ChildProcess

  private init(address: String, folder: String, daemon: ChildProcess) {
    self.address = address
    self.folder = folder
    self.daemon = daemon
  }

  /// Starts a daemon with a permissive session-type configuration and waits until it listens.
  ///
  /// - Parameters:
  ///   - existing: a folder to listen in again (the same address as an earlier bus there, for
  ///     reconnection tests); nil for a fresh temporary folder.
  ///   - policy: more `<policy>` elements, after the permissive default (a `deny` there wins).
  /// - Returns: the running bus.
  /// - Throws: ``HarnessError`` when the daemon does not start.
  public static func start(in existing: String? = nil, policy: String = "") async throws
    -> PrivateBus
  {
    let folder: String
    if let existing {
      mkdir(existing, 0o700)
      folder = existing
    } else {
      var template = Array("/tmp/dbus-test-XXXXXX".utf8CString)
      guard let created = mkdtemp(&template) else { throw HarnessError("mkdtemp failed") }
      folder = String(cString: created)
    }
    let socket = folder + "/bus"
    try configuration(socket: socket, policy: policy)
      .write(toFile: folder + "/bus.conf", atomically: true, encoding: .utf8)
    let daemon = try ChildProcess(
      daemonPath,
      ["--config-file=\(folder)/bus.conf", "--nofork", "--nopidfile", "--print-address=1"])
    let deadline = ContinuousClock.now + .seconds(10)
    while !daemon.output.contains("unix:") {
      if daemon.exited() != nil || ContinuousClock.now > deadline {
        let output = daemon.output
        await daemon.terminate()
        throw HarnessError("dbus-daemon did not start: \(output)")
      }
      try await Task.sleep(for: .milliseconds(5))
    }
    return PrivateBus(address: "unix:path=\(socket)", folder: folder, daemon: daemon)
  }

  /// Changes the bus's extra policy and has the daemon reload its configuration (SIGHUP), as
  /// installing or removing a file in `system.d` and reloading does on a system bus.
  /// - Parameter policy: the new `<policy>` elements.
  /// - Throws: when the configuration cannot be written.
  public func reload(policy: String) async throws {
    try Self.configuration(socket: folder + "/bus", policy: policy)
      .write(toFile: folder + "/bus.conf", atomically: true, encoding: .utf8)
    kill(daemon.pid, SIGHUP)
    try await Task.sleep(for: .milliseconds(200))
  }

  private static func configuration(socket: String, policy: String) -> String {
    """
    <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
     "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
    <busconfig>
      <type>session</type>
      <listen>unix:path=\(socket)</listen>
      <auth>EXTERNAL</auth>
      <policy context="default">
        <allow send_destination="*" eavesdrop="true"/>
        <allow eavesdrop="true"/>
        <allow own="*"/>
      </policy>
      \(policy)
    </busconfig>
    """
  }

  /// Starts a bus, runs `body` with it and stops the bus whatever happens.
  public static func with<T>(_ body: (PrivateBus) async throws -> T) async throws -> T {
    let bus = try await start()
    do {
      let result = try await body(bus)
      await bus.stop()
      return result
    } catch {
      await bus.stop()
      throw error
    }
  }

  /// A new connection to this bus.
  public func connect() async throws -> DBusConnection {
    try await DBusConnection(address: address)
  }

  /// Stops the daemon (SIGTERM) and removes its folder.
  public func stop() async {
    await daemon.terminate()
    unlink(folder + "/bus")
    unlink(folder + "/bus.conf")
    rmdir(folder)
  }
}
