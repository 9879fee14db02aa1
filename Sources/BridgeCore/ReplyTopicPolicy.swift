/// Which MQTT 5 Response Topics the gateway answers on.
///
/// A requester chooses the Response Topic, so without a rule it could make the gateway publish
/// anywhere its own credentials cannot: on another gateway's `request/…`, on a Home Assistant
/// command topic, on this gateway's `state` or `peripheral/text/set`. A Response Topic is
/// honoured only when it
/// - is a valid topic name of at most ``maximumByteCount`` bytes,
/// - lies under ``prefix`` (by default the base topic),
/// - has a `response` level after the prefix, and
/// - has none of the levels a gateway takes requests on (`request`, `set`, `get`, `notify`).
///
/// The answer always goes to the gateway's own response topic as well.
public struct ReplyTopicPolicy: Sendable, Hashable {
  /// The longest Response Topic honoured, in bytes.
  public static let maximumByteCount = 512
  /// Levels of the topics gateways take requests on.
  static let inboundLevels: Set<String> = ["request", "set", "get", "notify"]

  /// The topic prefix Response Topics must lie under (no trailing `/`).
  public let prefix: String

  /// Creates the policy.
  /// - Parameter prefix: The prefix Response Topics must lie under, such as the base topic.
  public init(prefix: String) {
    self.prefix = prefix
  }

  /// Why `topic` is not honoured as a Response Topic, or `nil` when it is.
  ///
  /// - Parameter topic: The Response Topic a request carried.
  /// - Returns: A short reason for the log, or `nil`.
  public func refusal(_ topic: String) -> String? {
    if topic.utf8.count > Self.maximumByteCount {
      return "longer than \(Self.maximumByteCount) bytes"
    }
    guard let name = try? TopicName(topic) else { return "not a valid topic name" }
    let levels = name.levels
    let prefixLevels = TopicRules.levels(prefix)
    guard levels.count > prefixLevels.count,
      zip(prefixLevels, levels).allSatisfy({ $0.hasSameBytes(as: $1) })
    else { return "not under \(prefix)/" }
    let rest = levels[prefixLevels.count...]
    if let level = rest.first(where: { Self.inboundLevels.contains(String($0)) }) {
      return "has a '\(level)' level: a topic requests are taken on"
    }
    guard rest.contains(where: { $0.hasSameBytes(as: "response") }) else {
      return "has no 'response' level"
    }
    return nil
  }
}
