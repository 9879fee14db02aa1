import Foundation
import Synchronization
import Testing

@testable import LoopSupport

/// Holds the test's threads until it has read their names.
private final class Gate: Sendable {
  let release = Mutex(false)
  let running = Atomic<Int>(0)
}

@Suite("startThread: named threads, a refusal thrown")
struct StartThreadTests {
  @Test("20 threads started at once from the task pool all carry their names in /proc")
  func named() async throws {
    let gate = Gate()
    await withTaskGroup(of: Void.self) { group in
      for index in 0..<20 {
        group.addTask {
          do {
            try startThread(named: "naming-\(index)") {
              gate.running.add(1, ordering: .relaxed)
              while !gate.release.withLock({ $0 }) { usleep(1000) }
            }
          } catch {
            Issue.record("thread naming-\(index) refused: \(error)")
          }
        }
      }
    }
    for _ in 0..<500 where gate.running.load(ordering: .relaxed) < 20 {
      try await Task.sleep(for: .milliseconds(10))
    }
    defer { gate.release.withLock { $0 = true } }
    let tasks = try FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")
    let names = Set(
      tasks.compactMap { task in
        (try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8))?
          .trimmingCharacters(in: .whitespacesAndNewlines)
      })
    let missing = (0..<20).map { "naming-\($0)" }.filter { !names.contains($0) }
    #expect(missing.isEmpty, "unnamed: \(missing)")
  }

  @Test("a thread the system refuses (a stack it cannot map) is thrown, and its body never runs")
  func refused() async throws {
    let gate = Gate()
    #expect(throws: LoopError.self) {
      try startThread(named: "refused", stackSize: 1 << 60) {
        gate.running.add(1, ordering: .relaxed)
      }
    }
    try await Task.sleep(for: .milliseconds(100))
    #expect(gate.running.load(ordering: .relaxed) == 0)
  }

  // The stack size asked for is shown by BoundedYAMLTests: its deep chains overflow the
  // default 8 MiB (signal 11) and are freed on a thread started here with a larger one.
}
