import Backoff
import Testing

/// A deterministic generator (SplitMix64) for jitter tests.
struct SeededGenerator: RandomNumberGenerator {
  var state: UInt64
  mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }
}

@Suite("Reconnect backoff")
struct BackoffTests {
  @Test("doubles per failure up to the ceiling, each delay within [nominal/2, nominal]")
  func exponentialWithJitter() {
    var backoff = Backoff(minimum: 1, maximum: 30)
    var random = SeededGenerator(state: 42)
    let nominals: [Double] = [1, 2, 4, 8, 16, 30, 30, 30]
    for nominal in nominals {
      #expect(backoff.nominalDelay == nominal)
      let delay = backoff.nextDelay(using: &random)
      #expect(delay >= nominal / 2 && delay <= nominal)
    }
  }

  @Test("jitter spreads the delays of a fleet")
  func jitterSpreads() {
    var random = SeededGenerator(state: 7)
    var delays = Set<Double>()
    for _ in 0..<20 {
      var backoff = Backoff(minimum: 8, maximum: 8)
      delays.insert(backoff.nextDelay(using: &random))
    }
    #expect(delays.count > 15)
  }

  @Test("a success resets the delay to the minimum")
  func resetAfterSuccess() {
    var backoff = Backoff(minimum: 0.5, maximum: 60)
    for _ in 0..<5 { _ = backoff.nextDelay() }
    #expect(backoff.nominalDelay == 16)
    backoff.reset()
    #expect(backoff.nominalDelay == 0.5)
    #expect(backoff.failures == 0)
  }

  @Test("a huge failure count never overflows")
  func noOverflow() {
    var backoff = Backoff(minimum: 1, maximum: 60)
    for _ in 0..<200 { _ = backoff.nextDelay() }
    #expect(backoff.nominalDelay == 60)
  }
}
