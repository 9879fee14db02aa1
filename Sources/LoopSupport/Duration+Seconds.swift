extension Duration {
  /// The duration in seconds, as the loops and their settings count time.
  public var seconds: Double { self / .seconds(1) }

  /// The whole milliseconds of the duration (rounded toward zero), as `poll` and D-Bus
  /// timeouts count time.
  public var milliseconds: Int64 {
    let parts = components
    return parts.seconds * 1000 + parts.attoseconds / 1_000_000_000_000_000
  }
}
