public import Foundation
import Glibc
public import Synchronization

/// Serialises reading and changing the process environment between tests running in parallel
/// (`setenv` while another thread reads `environ` is undefined behaviour).
public let environmentLock = Mutex(())

/// A failure of the test harness itself (a tool that cannot start, a bus that does not come up).
public struct HarnessError: Error, CustomStringConvertible {
  /// What went wrong.
  public var description: String
  /// Creates the error.
  public init(_ description: String) { self.description = description }
}

/// A child process started with `posix_spawn` (empty signal mask, default handlers, so it obeys
/// SIGTERM although Swift concurrency threads block signals) and reaped with `waitpid`, polled
/// from async code so no cooperative thread ever blocks.
public final class ChildProcess: @unchecked Sendable {
  // Safety: `status` is only touched by `exited()`/`wait(timeout:)`, which the owning test calls
  // from one task at a time.

  /// The child process id.
  public let pid: pid_t
  /// The file holding the child\'s stdout and stderr.
  public let outputPath: String
  private var status: Int32?

  /// Starts `executable` with `arguments`; stdout and stderr go to a fresh temporary file.
  public init(_ executable: String, _ arguments: [String]) throws {
    outputPath = NSTemporaryDirectory() + "dbus-test-\(UUID().uuidString.prefix(8)).log"
    let environment = environmentLock.withLock { _ in ProcessInfo.processInfo.environment }
    pid = try spawnChild(executable, arguments, outputPath: outputPath, environment: environment)
  }

  deinit {
    if exited() == nil {
      kill(pid, SIGKILL)
      var s: Int32 = 0
      waitpid(pid, &s, 0)
    }
    unlink(outputPath)
  }

  /// The raw wait status once the child has exited (reaping it), else nil.
  @discardableResult
  public func exited() -> Int32? {
    if let status { return status }
    var s: Int32 = 0
    if waitpid(pid, &s, WNOHANG) == pid { status = s }
    return status
  }

  /// Waits up to `timeout` for the child to exit, sleeping between checks.
  public func wait(timeout: Duration) async -> Int32? {
    let deadline = ContinuousClock.now + timeout
    while ContinuousClock.now < deadline {
      if let status = exited() { return status }
      try? await Task.sleep(for: .milliseconds(10))
    }
    return exited()
  }

  /// Sends SIGTERM and waits for the exit (SIGKILL after 5 s).
  public func terminate() async {
    guard exited() == nil else { return }
    kill(pid, SIGTERM)
    if await wait(timeout: .seconds(5)) == nil {
      kill(pid, SIGKILL)
      _ = await wait(timeout: .seconds(5))
    }
  }

  /// Everything the child wrote so far.
  public var output: String { (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? "" }

  /// Runs a tool to completion (at most `timeout`) and returns its exit code and output.
  public static func run(
    _ executable: String, _ arguments: [String], timeout: Duration = .seconds(20)
  )
    async throws -> (status: Int32, output: String)
  {
    let child = try ChildProcess(executable, arguments)
    guard let status = await child.wait(timeout: timeout) else {
      await child.terminate()
      throw HarnessError("\(executable) \(arguments) did not finish in \(timeout)")
    }
    let code = (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
    return (code, child.output)
  }
}

/// Starts `executable` with `posix_spawn`: stdin from /dev/null, stdout and stderr appended to
/// `outputPath`, an empty signal mask and default handlers (threads of Swift concurrency block
/// signals; a child inheriting that mask would ignore SIGTERM).
/// - Returns: the child's pid; reap it with `waitpid`.
/// - Throws: ``HarnessError`` when the program cannot be started.
public func spawnChild(
  _ executable: String, _ arguments: [String], outputPath: String, environment: [String: String]
) throws -> pid_t {
  var actions = posix_spawn_file_actions_t()
  posix_spawn_file_actions_init(&actions)
  defer { posix_spawn_file_actions_destroy(&actions) }
  posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_APPEND, 0o644)
  posix_spawn_file_actions_adddup2(&actions, 1, 2)
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
  let argv = ([executable] + arguments).map { strdup($0) } + [nil]
  defer { for pointer in argv { free(pointer) } }
  let env = environment.map { strdup("\($0)=\($1)") } + [nil]
  defer { for pointer in env { free(pointer) } }
  var attributes = posix_spawnattr_t()
  posix_spawnattr_init(&attributes)
  defer { posix_spawnattr_destroy(&attributes) }
  var empty = sigset_t()
  sigemptyset(&empty)
  posix_spawnattr_setsigmask(&attributes, &empty)
  var defaults = sigset_t()
  sigfillset(&defaults)
  sigdelset(&defaults, SIGKILL)
  sigdelset(&defaults, SIGSTOP)
  posix_spawnattr_setsigdefault(&attributes, &defaults)
  posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
  var child: pid_t = 0
  let rc = posix_spawn(&child, executable, &actions, &attributes, argv, env)
  guard rc == 0 else {
    throw HarnessError("cannot start \(executable): \(String(cString: strerror(rc)))")
  }
  return child
}
