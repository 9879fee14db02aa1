/// A validated MQTT subscription filter.
///
/// A filter is a topic whose levels may be the single-level wildcard `+` or, as the last level,
/// the multi-level wildcard `#`; a wildcard sharing a level with other characters is refused.
/// Otherwise the rules of ``TopicName`` apply (no empty level, no NUL or control character).
public struct TopicFilter: Sendable, Hashable, CustomStringConvertible {
  /// Why a string is not a valid topic filter.
  public typealias Error = TopicError

  /// The filter as a string.
  public let rawValue: String

  /// Validates a subscription filter.
  ///
  /// - Parameter string: The filter, for example `gatt2mqtt/+/gatt/+/+/set`.
  /// - Throws: ``TopicError`` naming the first problem found.
  public init(_ string: String) throws(TopicError) {
    try TopicRules.validate(string, kind: .filter)
    rawValue = string
  }

  /// The filter that matches exactly one topic.
  ///
  /// - Parameter topic: The topic to match.
  public init(_ topic: TopicName) {
    rawValue = topic.rawValue
  }

  /// Wraps a string the caller has built from validated parts.
  init(unchecked string: String) {
    assert((try? TopicRules.validate(string, kind: .filter)) != nil, "invalid filter \(string)")
    rawValue = string
  }

  /// The levels between the `/` separators.
  public var levels: [Substring] { TopicRules.levels(rawValue) }

  /// The filter itself.
  public var description: String { rawValue }

  /// Whether a message published to `topic` reaches a subscription with this filter.
  ///
  /// Follows MQTT: `+` matches one level, `#` matches the parent level and any number below it
  /// (`a/#` matches `a`), levels compare byte by byte, and a filter starting with a wildcard does
  /// not match topics starting with `$` (`$SYS/…`).
  ///
  /// - Parameter topic: A topic name.
  /// - Returns: `true` when the filter matches.
  public func matches(_ topic: TopicName) -> Bool {
    let filterLevels = levels
    let topicLevels = topic.levels
    if topic.rawValue.utf8.first == UInt8(ascii: "$"),
      filterLevels[0] == "+" || filterLevels[0] == "#"
    {
      return false
    }
    for (index, level) in filterLevels.enumerated() {
      if level == "#" { return true }
      guard index < topicLevels.count else { return false }
      if level != "+" && !level.hasSameBytes(as: topicLevels[index]) { return false }
    }
    return filterLevels.count == topicLevels.count
  }

  /// Whether both filters have the same bytes.
  public static func == (lhs: TopicFilter, rhs: TopicFilter) -> Bool {
    lhs.rawValue.hasSameBytes(as: rhs.rawValue)
  }

  /// Hashes the filter's bytes.
  public func hash(into hasher: inout Hasher) {
    for byte in rawValue.utf8 { hasher.combine(byte) }
  }
}
