import Foundation

/// Starts a thread that runs `body`, named `name` where the system shows it (`top -H`, `perf`,
/// `/proc/<pid>/task/*/comm`; the system refuses names longer than 15 bytes, which then stay
/// unnamed there).
///
/// - Parameters:
///   - name: The thread's name.
///   - body: What the thread runs; the thread ends when it returns.
public func startThread(named name: String, _ body: @escaping @Sendable () -> Void) {
  let thread = Thread {
    // Set from the thread itself: only then does the system see it (set before `start`, the
    // thread keeps the name of the thread that made it).
    Thread.current.name = name
    body()
  }
  thread.name = name
  thread.start()
}
