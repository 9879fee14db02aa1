import BusTestSupport
public import Foundation
import Glibc
import Synchronization

/// A child process started with `posix_spawn` and reaped with `waitpid`.
///
/// Foundation's `Process.waitUntilExit()` spins a run loop and was seen to hang when called
/// from Swift concurrency's threads; this type never needs a run loop.
public final class ChildProcess: @unchecked Sendable {
  // Safety: `exitStatus` is only set by `wait()`, which the owning test calls serially.

  /// The child's process id.
  public let pid: pid_t
  private var exitStatus: Int32?

  /// Starts `executable` with `arguments`; stdout and stderr go to `outputPath` (or /dev/null).
  public init(
    _ executable: String, _ arguments: [String], outputPath: String? = nil,
    environment: [String: String]? = nil
  ) throws {
    let target = outputPath ?? "/dev/null"
    do {
      pid = try spawnChild(
        executable, arguments, outputPath: target,
        environment: environment ?? ProcessInfo.processInfo.environment)
    } catch {
      throw TestFailure("\(error)")
    }
  }

  /// Whether the child has not exited yet (reaps it if it has).
  public var isRunning: Bool {
    if exitStatus != nil { return false }
    var status: Int32 = 0
    let rc = waitpid(pid, &status, WNOHANG)
    if rc == pid {
      exitStatus = status
      return false
    }
    return rc == 0
  }

  /// Sends `signal` to the child.
  public func signal(_ signal: Int32) {
    if isRunning { kill(pid, signal) }
  }

  /// Waits for the child to exit and returns its raw wait status.
  @discardableResult
  public func wait() -> Int32 {
    if let exitStatus { return exitStatus }
    var status: Int32 = 0
    while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    exitStatus = status
    return status
  }

  /// Waits up to `timeout` seconds, sleeping between checks (no cooperative thread blocks);
  /// returns the raw wait status or nil if still running.
  public func wait(timeout: Double) async -> Int32? {
    let deadline = ContinuousClock.now + .milliseconds(Int(timeout * 1000))
    while ContinuousClock.now < deadline {
      if !isRunning { return exitStatus }
      do { try await Task.sleep(for: .milliseconds(10)) } catch { break }  // cancelled
    }
    return isRunning ? nil : exitStatus
  }

  /// Waits up to `timeout` seconds for the child to exit, reaping it on a thread of its own so
  /// that the time it exited is taken there: the test's own task runs late when the whole
  /// suite shares two cores, and a bound timed in it failed at 3.1 s for a process that had
  /// ended within 2.
  ///
  /// - Parameter timeout: How long to wait, in seconds.
  /// - Returns: The raw wait status and when `waitpid` returned, or nil if still running (or
  ///   reaped before this call, when the time is unknown).
  public func waitTimed(timeout: Double) async -> (status: Int32, exited: ContinuousClock.Instant)?
  {
    guard exitStatus == nil else { return nil }
    let reaped = Reaped()
    let pid = self.pid
    Thread {
      var status: Int32 = 0
      while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
      reaped.value.withLock { $0 = (status, .now) }
    }.start()
    let deadline = ContinuousClock.now + .milliseconds(Int(timeout * 1000))
    while true {
      if let found = reaped.value.withLock({ $0 }) {
        exitStatus = found.status
        return found
      }
      guard ContinuousClock.now < deadline else { return nil }
      do { try await Task.sleep(for: .milliseconds(10)) } catch { return nil }  // cancelled
    }
  }

  /// What the reaping thread of ``waitTimed(timeout:)`` found.
  private final class Reaped: Sendable {
    let value = Mutex<(status: Int32, exited: ContinuousClock.Instant)?>(nil)
  }

  /// The exit code if the child exited normally, else nil.
  public static func exitCode(_ status: Int32) -> Int32? {
    (status & 0x7f) == 0 ? (status >> 8) & 0xff : nil
  }

  /// The terminating signal if the child was killed by one, else nil.
  public static func terminatingSignal(_ status: Int32) -> Int32? {
    let signal = status & 0x7f
    return signal != 0 && signal != 0x7f ? signal : nil
  }
}

/// Runs a program to completion (waiting with `Task.sleep`, at most 120 s) and returns its exit
/// code and combined output.
@discardableResult
public func runProcess(
  _ executable: String, _ arguments: [String], environment: [String: String]? = nil
) async throws -> (status: Int32, output: String) {
  let log = FileManager.default.temporaryDirectory
    .appendingPathComponent("gatt2mqtt-run-\(UUID().uuidString.prefix(8)).log").path
  defer { unlink(log) }
  let child = try ChildProcess(executable, arguments, outputPath: log, environment: environment)
  guard let status = await child.wait(timeout: 120) else {
    child.signal(SIGKILL)
    child.wait()
    throw TestFailure("\(executable) \(arguments) did not finish within 120 s")
  }
  let output = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
  return (
    ChildProcess.exitCode(status) ?? 128 + (ChildProcess.terminatingSignal(status) ?? 0), output
  )
}
