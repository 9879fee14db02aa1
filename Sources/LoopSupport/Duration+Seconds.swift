extension Duration {
  /// The duration in seconds, as the loops and their settings count time.
  public var seconds: Double { self / .seconds(1) }

  /// The whole milliseconds of the duration (rounded toward zero), as `poll` and D-Bus
  /// timeouts count time; beyond `Int64`'s range, its bound.
  public var milliseconds: Int64 {
    let parts = components
    let (whole, overflow) = parts.seconds.multipliedReportingOverflow(by: 1000)
    guard !overflow else { return parts.seconds < 0 ? .min : .max }
    return whole + parts.attoseconds / 1_000_000_000_000_000
  }
}
