import Testing

@testable import Gateway

@Suite("Loop monitor: one notion of a stalled loop for the watchdog and health")
struct LoopMonitorTests {
  @Test(
    "a loop that answers is not stalled; one that hangs is, once the limit passed; one that says no is"
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
    // A second: the answering check's task must get a thread within it, also while every
    // suite runs at once.
    let stalled = await monitor.probe(within: .seconds(1))
    #expect(ContinuousClock.now - start >= .seconds(1))
    #expect(stalled == ["hangs", "refuses"])
    // The hung question is not asked again while it waits, and stays stalled.
    #expect(await monitor.probe(within: .milliseconds(50)) == ["hangs", "refuses"])
    // Before the limit, a question that waits is not a stall yet.
    #expect(monitor.stalled(limit: .seconds(3600)) == ["refuses"])
  }

  @Test("every loop answering: the round ends as soon as they have, nothing stalled")
  func allAnswer() async {
    let monitor = LoopMonitor([
      LivenessCheck(name: "a") { true },
      LivenessCheck(name: "b") {
        try? await Task.sleep(for: .milliseconds(20))
        return true
      },
    ])
    let start = ContinuousClock.now
    #expect(await monitor.probe(within: .seconds(60)).isEmpty)
    // Well before the limit. (With every suite running at once on two cores the checks' tasks
    // wait for a pool thread: 4-6 s for this suite in CI, which a 5-s bound on a 10-s limit
    // failed once.)
    #expect(ContinuousClock.now - start < .seconds(30))
  }
}
