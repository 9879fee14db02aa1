extension GatewayConfiguration.MQTT {
  /// The bound on messages held while the broker is unreachable (`mqtt.offline_queue.*`).
  public struct OfflineQueue: Sendable, Equatable {
    /// Which message goes when the queue is full (`mqtt.offline_queue.policy`).
    public enum DropPolicy: String, Sendable, Equatable, CaseIterable {
      /// Drop the oldest queued message to make room (`drop_oldest`).
      case dropOldest = "drop_oldest"
      /// Drop the message being queued (`drop_newest`).
      case dropNewest = "drop_newest"
    }

    /// The most messages held, at least 1 (`mqtt.offline_queue.max_messages`). Default 10 000.
    public var maxMessages: Int
    /// What to drop when full (`mqtt.offline_queue.policy`). Default ``DropPolicy/dropOldest``.
    public var policy: DropPolicy

    /// Creates queue settings.
    ///
    /// - Parameters:
    ///   - maxMessages: The most messages held.
    ///   - policy: What to drop when full.
    public init(maxMessages: Int = 10_000, policy: DropPolicy = .dropOldest) {
      self.maxMessages = maxMessages
      self.policy = policy
    }
  }
}
