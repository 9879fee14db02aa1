/// Where an MQTT 5 request asked for its answer: the Response Topic and the Correlation Data.
public struct ReplyAddress: Sendable, Hashable {
  /// The response topic.
  public var topic: String
  /// The correlation data to send back, if any.
  public var correlationData: [UInt8]?

  /// Makes a reply address.
  ///
  /// - Parameters:
  ///   - topic: The response topic.
  ///   - correlationData: The correlation data to send back.
  public init(topic: String, correlationData: [UInt8]? = nil) {
    self.topic = topic
    self.correlationData = correlationData
  }
}
