extension Duration {
  /// The duration in seconds, as the loops and their settings count time.
  public var seconds: Double {
    let parts = components
    return Double(parts.seconds) + Double(parts.attoseconds) * 1e-18
  }
}
