import Glibc

/// The coarse monotonic clock (`CLOCK_MONOTONIC_COARSE`): the time of the last timer tick,
/// read from memory. Where the precise clock costs a system call and a device access (a clock
/// source without a vDSO read, as in the lab's emulated machine) this one does not; its
/// resolution (a timer tick, 1-10 ms) is enough for a reader's gathering interval.
enum CoarseClock {
  /// Seconds since an arbitrary origin; never goes back.
  static func now() -> Double { clockSeconds(CLOCK_MONOTONIC_COARSE) }

  /// How far it can lag the precise clock, in seconds (a timer tick: `clock_getres`; 10 ms
  /// when the kernel does not say).
  static let resolution: Double = {
    var ts = timespec()
    guard clock_getres(CLOCK_MONOTONIC_COARSE, &ts) == 0 else { return 0.01 }
    return ts.seconds
  }()
}
