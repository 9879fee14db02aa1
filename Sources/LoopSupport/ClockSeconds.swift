public import Glibc

/// Reads a clock (`clock_gettime`) in seconds: `CLOCK_MONOTONIC` for a loop's own time,
/// `CLOCK_MONOTONIC_COARSE` for a reader's gathering (``GatheringPace``).
///
/// - Parameter clock: The clock.
/// - Returns: Seconds since the clock's origin.
public func clockSeconds(_ clock: clockid_t = CLOCK_MONOTONIC) -> Double {
  var ts = timespec()
  clock_gettime(clock, &ts)
  return ts.seconds
}

extension timespec {
  /// The time in seconds.
  var seconds: Double { Double(tv_sec) + Double(tv_nsec) / 1e9 }
}
