import Synchronization
import Testing

@testable import Gateway

@Suite("Loop monitor: one notion of a stalled loop for the watchdog and health")
struct LoopMonitorTests {
  @Test(
    "asking returns at once; a loop that answered is not stalled, one that hangs is once the limit passed, one that said no is"
  )
  func stalled() async {
    let monitor = LoopMonitor([
      LivenessCheck(name: "answers") { true },
      LivenessCheck(name: "hangs") {
        try? await Task.sleep(for: .seconds(3600))
        return true
      },
      LivenessCheck(name: "refuses") { false },
    ])
    let start = ContinuousClock.now
    monitor.ask()
    // Nothing waits for the answers, the hung loop's least of all.
    #expect(ContinuousClock.now - start < .seconds(1))
    // Until the two loops that answer have (each question's task needs a pool thread: seconds
    // while every suite runs at once). With no limit every waiting question counts.
    await Self.until { monitor.stalled(limit: .zero) == ["hangs", "refuses"] }
    // Before the limit, a question that waits is not a stall yet.
    #expect(monitor.stalled(limit: .seconds(3600)) == ["refuses"])
    try? await Task.sleep(until: start + .seconds(1))
    #expect(monitor.stalled(limit: .seconds(1)) == ["hangs", "refuses"])
    // The hung question is not asked again while it waits (asked anew, it would not be a stall
    // at this limit), and stays stalled.
    monitor.ask()
    #expect(monitor.stalled(limit: .seconds(1)) == ["hangs", "refuses"])
  }

  @Test("a loop that said no is asked again, and is not stalled once it answers")
  func recovers() async {
    let answers = Flag()
    let monitor = LoopMonitor([
      LivenessCheck(name: "bus") { answers.value.load(ordering: .relaxed) }
    ])
    monitor.ask()
    await Self.until { monitor.stalled(limit: .seconds(3600)) == ["bus"] }
    #expect(monitor.stalled(limit: .seconds(3600)) == ["bus"])
    answers.value.store(true, ordering: .relaxed)
    monitor.ask()
    await Self.until { monitor.stalled(limit: .zero).isEmpty }
    #expect(monitor.stalled(limit: .zero).isEmpty)
  }

  private final class Flag: Sendable {
    let value = Atomic<Bool>(false)
  }

  /// Waits until `condition` holds, 30 s at most (the expectation after it then fails).
  private static func until(_ condition: () -> Bool) async {
    let deadline = ContinuousClock.now + .seconds(30)
    while !condition(), ContinuousClock.now < deadline {
      try? await Task.sleep(for: .milliseconds(10))
    }
  }
}
