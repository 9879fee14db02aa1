import Synchronization
import Testing

@testable import Gateway

@Suite("Loop monitor: one notion of a stalled loop for the watchdog and health")
struct LoopMonitorTests {
  @Test("a loop that answered is not stalled; one that hangs is, once the limit passed; a no is")
  func stalled() async {
    let monitor = LoopMonitor([
      LivenessCheck(name: "answers") { true },
      LivenessCheck(name: "hangs") {
        try? await Task.sleep(for: .seconds(3600))
        return true
      },
      LivenessCheck(name: "refuses") { false },
    ])
    monitor.ask()
    let asked = ContinuousClock.now
    // Until the two loops that answer have (each question's task needs a pool thread: seconds
    // while every suite runs at once).
    await Self.until { monitor.waiting == ["hangs"] }
    #expect(monitor.waiting == ["hangs"])
    // Before the limit, a question that waits is not a stall yet.
    #expect(monitor.stalled(limit: .seconds(3600)) == ["refuses"])
    try? await Task.sleep(until: asked + .milliseconds(1100))
    // ("answers" too if its task waited a second for a thread: a late answer.)
    #expect(Set(monitor.stalled(limit: .seconds(1))).isSuperset(of: ["hangs", "refuses"]))
    // The hung question is not asked again while it waits (asked anew, it would not be a stall
    // at this limit), and stays stalled.
    monitor.ask()
    #expect(monitor.stalled(limit: .seconds(1)).contains("hangs"))
  }

  @Test("an answer later than the limit stays a stall after it came, until one is in time")
  func lateAnswer() async {
    let late = Flag()
    late.value.store(true, ordering: .relaxed)
    let monitor = LoopMonitor([
      LivenessCheck(name: "slow") {
        if late.value.load(ordering: .relaxed) { try? await Task.sleep(for: .seconds(5)) }
        return true
      }
    ])
    monitor.ask()
    await Self.until { monitor.waiting.isEmpty }
    // Answered, yes, but after 5 s: a stall at a 4-s limit, not at a longer one. (Without the
    // answer's time kept, a loop answering within one to two periods would be well at every
    // other round.)
    #expect(monitor.stalled(limit: .seconds(4)) == ["slow"])
    #expect(monitor.stalled(limit: .seconds(3600)).isEmpty)
    late.value.store(false, ordering: .relaxed)
    monitor.ask()
    await Self.until { monitor.waiting.isEmpty }
    #expect(monitor.stalled(limit: .seconds(4)).isEmpty)
  }

  @Test("a loop that said no is asked again, and is not stalled once it answers")
  func recovers() async {
    let answers = Flag()
    let monitor = LoopMonitor([
      LivenessCheck(name: "bus") { answers.value.load(ordering: .relaxed) }
    ])
    monitor.ask()
    await Self.until { monitor.waiting.isEmpty }
    #expect(monitor.stalled(limit: .seconds(3600)) == ["bus"])
    answers.value.store(true, ordering: .relaxed)
    monitor.ask()
    await Self.until { monitor.waiting.isEmpty }
    #expect(monitor.stalled(limit: .seconds(3600)).isEmpty)
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
