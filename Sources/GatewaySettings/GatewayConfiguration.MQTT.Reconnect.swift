extension GatewayConfiguration.MQTT {
  /// The back-off between reconnection attempts (`mqtt.reconnect.*`), in seconds.
  ///
  /// The delay starts at ``minDelay`` and grows up to ``maxDelay``; the loader rejects a
  /// ``minDelay`` above ``maxDelay``.
  public struct Reconnect: Sendable, Equatable {
    /// The first delay in seconds, greater than 0 (`mqtt.reconnect.min_delay`). Default 1.
    public var minDelay: Double
    /// The longest delay in seconds, greater than 0 (`mqtt.reconnect.max_delay`). Default 60.
    public var maxDelay: Double

    /// Creates back-off settings.
    ///
    /// - Parameters:
    ///   - minDelay: The first delay in seconds.
    ///   - maxDelay: The longest delay in seconds.
    public init(minDelay: Double = 1, maxDelay: Double = 60) {
      self.minDelay = minDelay
      self.maxDelay = maxDelay
    }
  }
}
