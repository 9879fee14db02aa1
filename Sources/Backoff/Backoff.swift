/// Exponential backoff with "equal jitter": the one retry policy of the gateway (MQTT
/// reconnects, BlueZ bus reconnects and snapshots, discovery restarts, device connections).
///
/// The n-th consecutive failure waits a random time in `[d/2, d]` where
/// `d = min(max, min · 2ⁿ)`, so a fleet of gateways that lost the same broker does not
/// reconnect in lockstep, and no delay is ever shorter than half the nominal one. Callers that
/// must be deterministic (the pure bridges) use ``nominalDelay(afterFailures:)``.
public struct Backoff: Sendable, Hashable {
  /// Delay of the first retry, in seconds.
  public let minimum: Double
  /// Ceiling, in seconds.
  public let maximum: Double
  /// Consecutive failures so far.
  public private(set) var failures: Int = 0

  /// Creates a backoff between `minimum` and `maximum` seconds.
  public init(minimum: Double, maximum: Double) {
    self.minimum = max(0.001, minimum)
    self.maximum = max(self.minimum, maximum)
  }

  /// The nominal (un-jittered) delay for the next failure.
  public var nominalDelay: Double { nominalDelay(afterFailures: failures) }

  /// The nominal (un-jittered) delay after `count` earlier failures: `minimum` for none,
  /// doubling with each, never above `maximum`.
  ///
  /// - Parameter count: Failures before this one (negative counts as 0).
  /// - Returns: Seconds.
  public func nominalDelay(afterFailures count: Int) -> Double {
    let exponent = min(max(count, 0), 62)
    return min(maximum, minimum * Double(1 << UInt64(exponent)))
  }

  /// The delay for the next failure as a `Duration`, recording the failure.
  ///
  /// - Returns: How long to wait.
  public mutating func nextDuration() -> Duration { .seconds(nextDelay()) }

  /// Records a failure and returns how long to wait, in seconds.
  public mutating func nextDelay<R: RandomNumberGenerator>(using random: inout R) -> Double {
    let nominal = nominalDelay
    failures += 1
    return nominal / 2 + Double.random(in: 0...(nominal / 2), using: &random)
  }

  /// Records a failure and returns how long to wait, in seconds, using the system generator.
  public mutating func nextDelay() -> Double {
    var random = SystemRandomNumberGenerator()
    return nextDelay(using: &random)
  }

  /// Forgets past failures (after a successful connection).
  public mutating func reset() { failures = 0 }
}
