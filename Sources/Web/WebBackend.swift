public import BridgeCore

/// What the web server needs of the gateway: its health, a way to hand it a request as if it
/// had come over MQTT (the same validation, routing and answers), and where its topics are.
public protocol WebBackend: Sendable {
  /// The gateway's topic map.
  var topics: Topics { get }
  /// The `health_check` report as JSON, with its `healthy` member.
  func webHealth() -> JSONValue
  /// Handles a message on a request topic exactly as one received from the broker; the
  /// answer is published (and so reaches ``WebHub``).
  ///
  /// - Parameters:
  ///   - topic: The request topic.
  ///   - payload: The payload.
  func webInject(topic: TopicName, payload: [UInt8])
}
