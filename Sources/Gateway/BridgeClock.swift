import Foundation
import LoopSupport
import Synchronization

/// The time the bridges run on.
///
/// Timers (offline and forget times, presence, retries, timeouts, rate limits) must not jump
/// when the wall clock does: a Raspberry Pi has no real-time clock and boots in 1970 or at the
/// last saved time until NTP sets the clock, which would mark every device offline and fire
/// every retry at once. So the bridges are given ``now()``, **monotonic** seconds anchored at
/// the wall-clock time the gateway started, and each tick refreshes their `wallClockOffset`
/// with ``wallClockOffset()`` so that the timestamps in payloads (`ts`, `last_seen`, `since`)
/// are wall time.
public struct BridgeClock: Sendable {
  private let monotonic: @Sendable () -> Double
  private let wall: @Sendable () -> Double
  private let anchor: Double

  /// Makes a clock from two time sources (tests pass fakes).
  ///
  /// - Parameters:
  ///   - monotonic: Seconds from a clock that never jumps (any origin).
  ///   - wall: Seconds since the Unix epoch.
  public init(
    monotonic: @escaping @Sendable () -> Double, wall: @escaping @Sendable () -> Double
  ) {
    self.monotonic = monotonic
    self.wall = wall
    anchor = wall() - monotonic()
  }

  /// The system's clocks: `ContinuousClock` and `Date`.
  public static var system: BridgeClock {
    let origin = ContinuousClock.now
    return BridgeClock(
      monotonic: { origin.duration(to: .now).seconds },
      wall: { Date().timeIntervalSince1970 })
  }

  /// The bridges' `now`: the wall-clock time at start plus the monotonic time since.
  public func now() -> Double { anchor + monotonic() }

  /// What to add to ``now()`` to get wall-clock time (0 until the wall clock jumps).
  public func wallClockOffset() -> Double { wall() - now() }
}
