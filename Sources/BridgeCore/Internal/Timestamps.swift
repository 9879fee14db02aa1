/// Time as the bridge logic sees it: seconds since the Unix epoch as a `Double`, supplied by the
/// caller (the core never reads a clock).
enum Timestamps {
  /// Milliseconds since the Unix epoch, rounded, as published in `ts`/`last_seen` fields.
  static func milliseconds(_ seconds: Double) -> Int64 {
    guard seconds.isFinite else { return 0 }
    return Int64(exactly: (seconds * 1000).rounded()) ?? 0
  }
}
