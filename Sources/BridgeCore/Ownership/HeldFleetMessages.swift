/// The fleet's retained messages (owner claims, gateways' states, device names) that reach a
/// gateway standing by for another run with its `gateway.id`: the last one per topic, in the
/// order their topics first arrived, handed to the central role when the gateway starts acting.
///
/// Each is the broker's retained state of its topic, so a later message replaces an earlier
/// one; at most ``limit`` topics are held (the rest are dropped and counted).
public struct HeldFleetMessages: Sendable {
  /// The most topics held.
  public static let limit = 100_000

  private var order: [String] = []
  private var latest: [String: (message: Topics.FleetMessage, payload: [UInt8])] = [:]
  /// Messages of topics beyond ``limit``, dropped.
  public private(set) var dropped = 0

  /// Holds nothing.
  public init() {}

  /// Holds a message, replacing an earlier one of its topic.
  ///
  /// - Parameters:
  ///   - topic: The message's topic.
  ///   - message: What the topic is about.
  ///   - payload: The payload.
  public mutating func hold(_ topic: String, _ message: Topics.FleetMessage, payload: [UInt8]) {
    if latest[topic] == nil {
      guard order.count < Self.limit else {
        dropped += 1
        return
      }
      order.append(topic)
    }
    latest[topic] = (message, payload)
  }

  /// The messages held, one per topic, in the order their topics first arrived.
  public var messages: [(message: Topics.FleetMessage, payload: [UInt8])] {
    order.compactMap { latest[$0] }
  }
}
