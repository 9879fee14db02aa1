/// A concrete MQTT topic name that every broker accepts and that can be published to.
///
/// Valid topic names are non-empty, at most 65,535 UTF-8 bytes, contain no wildcard (`+`, `#`),
/// no NUL, control character or noncharacter (mosquitto refuses those), and no empty level:
/// the topic contract never produces `a//b`, `/a` or `a/`, so a received topic with an empty level
/// cannot be one of ours and is refused here too.
///
/// Equality, hashing and ordering compare UTF-8 bytes, as MQTT does, so `é` written precomposed
/// and decomposed are two different topics.
public struct TopicName: Sendable, Hashable, Comparable, CustomStringConvertible {
  /// Why a string is not a valid topic name.
  public typealias Error = TopicError

  /// The largest topic in UTF-8 bytes that MQTT can carry.
  public static let maximumByteCount = 65_535

  /// The topic as a string.
  public let rawValue: String

  /// Validates a topic name.
  ///
  /// - Parameter string: The topic, for example `gatt2mqtt/bridge/pi/state`.
  /// - Throws: ``TopicError`` naming the first problem found.
  public init(_ string: String) throws(TopicError) {
    try TopicRules.validate(string, kind: .name)
    rawValue = string
  }

  /// Validates a topic name received as bytes, which may not be UTF-8.
  ///
  /// - Parameter bytes: The topic's bytes as they came off the wire.
  /// - Throws: ``TopicError/invalidUTF8(offset:)`` for malformed UTF-8, otherwise as ``init(_:)``.
  public init(validating bytes: [UInt8]) throws(TopicError) {
    if let offset = UTF8Rules.firstInvalidOffset(bytes) { throw .invalidUTF8(offset: offset) }
    try self.init(String(decoding: bytes, as: UTF8.self))
  }

  /// Wraps a string the caller has built from validated parts.
  init(unchecked string: String) {
    assert((try? TopicRules.validate(string, kind: .name)) != nil, "invalid topic \(string)")
    rawValue = string
  }

  /// The levels between the `/` separators, never empty.
  public var levels: [Substring] { TopicRules.levels(rawValue) }

  /// The topic itself.
  public var description: String { rawValue }

  /// Whether both topics have the same bytes.
  public static func == (lhs: TopicName, rhs: TopicName) -> Bool {
    lhs.rawValue.hasSameBytes(as: rhs.rawValue)
  }

  /// Hashes the topic's bytes.
  public func hash(into hasher: inout Hasher) {
    for byte in rawValue.utf8 { hasher.combine(byte) }
  }

  /// Orders topics by their bytes.
  public static func < (lhs: TopicName, rhs: TopicName) -> Bool {
    lhs.rawValue.utf8.lexicographicallyPrecedes(rhs.rawValue.utf8)
  }
}
