import LoopSupport
import Synchronization
import Testing

@Suite("Deadline thread: turns at the wait each asks for, at once when woken, none after stop")
struct DeadlineThreadTests {
  /// Counts turns and answers each with `wait`.
  final class Turns: Sendable {
    let count = Atomic<Int>(0)
    let wait: Double?

    init(wait: Double?) { self.wait = wait }

    func turn() -> Double? {
      count.add(1, ordering: .relaxed)
      return wait
    }

    var value: Int { count.load(ordering: .relaxed) }
  }

  /// Waits up to `seconds` for `condition`.
  func eventually(_ seconds: Double = 5, _ condition: () -> Bool) async -> Bool {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while ContinuousClock.now < deadline {
      if condition() { return true }
      try? await Task.sleep(for: .milliseconds(5))
    }
    return condition()
  }

  @Test("a turn runs at once, then again after the wait it asked for")
  func turnsAtTheWait() async throws {
    let turns = Turns(wait: 0.05)
    let thread = try DeadlineThread(name: "test-deadline") { turns.turn() }
    try thread.start()
    #expect(await eventually { turns.value >= 1 })
    let start = ContinuousClock.now
    let first = turns.value
    try await Task.sleep(for: .milliseconds(500))
    let elapsed = ContinuousClock.now - start
    let ran = turns.value - first
    thread.stop()
    await thread.ended()
    // 0.5 s at one turn per 50 ms: about 10 (never more than the time allows).
    let most = Int(elapsed / .milliseconds(50)) + 1
    #expect(ran >= 3 && ran <= most, "\(ran) turns in \(elapsed), at most \(most)")
  }

  @Test("waits below a millisecond are slept out: many turns in a short time")
  func shortWaits() async throws {
    let turns = Turns(wait: 0.0002)
    let thread = try DeadlineThread(name: "test-deadline") { turns.turn() }
    try thread.start()
    #expect(await eventually { turns.value >= 100 })
    thread.stop()
    await thread.ended()
  }

  @Test("a turn that asks for no deadline waits until woken; a wake-up ends a long wait at once")
  func wakeUps() async throws {
    let waitless = Turns(wait: nil)
    let idle = try DeadlineThread(name: "test-deadline") { waitless.turn() }
    try idle.start()
    #expect(await eventually { waitless.value == 1 })
    try await Task.sleep(for: .milliseconds(200))
    #expect(waitless.value == 1)
    idle.wake()
    #expect(await eventually(5) { waitless.value == 2 })
    idle.stop()
    await idle.ended()

    let long = Turns(wait: 3600)
    let sleeper = try DeadlineThread(name: "test-deadline") { long.turn() }
    try sleeper.start()
    #expect(await eventually { long.value == 1 })
    sleeper.wake()
    #expect(await eventually(5) { long.value == 2 })
    sleeper.stop()
    await sleeper.ended()
  }

  @Test(
    "nothing runs before start; a wake-up before start is not lost; stopped before start, it has ended and never runs"
  )
  func startsWhenAsked() async throws {
    let turns = Turns(wait: nil)
    let thread = try DeadlineThread(name: "test-deadline") { turns.turn() }
    try await Task.sleep(for: .milliseconds(100))
    #expect(turns.value == 0)
    thread.wake()
    try thread.start()
    try thread.start()
    // The first turn, then the one the early wake-up asked for.
    #expect(await eventually { turns.value == 2 })
    thread.stop()
    await thread.ended()

    let never = try DeadlineThread(name: "test-deadline") { turns.turn() }
    let waiting = Task { await never.ended() }
    try await Task.sleep(for: .milliseconds(50))
    never.stop()
    await waiting.value
    await never.ended()
    try never.start()
    try await Task.sleep(for: .milliseconds(100))
    #expect(turns.value == 2)
  }

  @Test("stop ends a long wait; no turn runs after the thread has ended; ended() returns again")
  func stops() async throws {
    let turns = Turns(wait: 3600)
    let thread = try DeadlineThread(name: "test-deadline") { turns.turn() }
    try thread.start()
    #expect(await eventually { turns.value == 1 })
    thread.stop()
    await thread.ended()
    thread.wake()
    try await Task.sleep(for: .milliseconds(100))
    #expect(turns.value == 1)
    await thread.ended()
  }
}
