/// Why a string is not a valid topic name, topic filter, topic segment or topic-building name.
///
/// Offsets are UTF-8 byte offsets into the rejected string; level indexes count from 0.
public enum TopicError: Error, Sendable, Hashable, CustomStringConvertible {
  /// The string is empty.
  case empty
  /// The string is longer than `limit` UTF-8 bytes.
  case tooLong(byteCount: Int, limit: Int)
  /// The bytes are not well-formed UTF-8 from this offset on.
  case invalidUTF8(offset: Int)
  /// A wildcard (`+` or `#`) appears in a topic name, segment or name where none is allowed.
  case wildcard(offset: Int)
  /// A wildcard in a filter does not stand alone as a whole level (`#` also only as the last one).
  case misplacedWildcard(offset: Int)
  /// A scalar MQTT brokers refuse in topics: NUL, a control character or a noncharacter.
  case forbiddenCharacter(Unicode.Scalar, offset: Int)
  /// A level is empty (leading, trailing or doubled `/`).
  case emptyLevel(index: Int)
  /// A `/` appears in something that must be a single level.
  case levelSeparator(offset: Int)
  /// The name is reserved by the topic contract (a base topic starting with `$`, a device
  /// friendly name whose first level is `bridge`).
  case reservedName(String)

  /// The stable machine-readable code: `too_long` for over-long input, otherwise `invalid_topic`.
  public var code: String {
    switch self {
    case .tooLong: "too_long"
    default: "invalid_topic"
    }
  }

  /// A sentence for people.
  public var description: String {
    switch self {
    case .empty:
      "the topic is empty"
    case .tooLong(let byteCount, let limit):
      "the topic is \(byteCount) bytes long, more than the \(limit) allowed"
    case .invalidUTF8(let offset):
      "the topic is not valid UTF-8 at byte \(offset)"
    case .wildcard(let offset):
      "the wildcard at byte \(offset) is not allowed here"
    case .misplacedWildcard(let offset):
      "the wildcard at byte \(offset) must be a whole level ('#' only the last one)"
    case .forbiddenCharacter(let scalar, let offset):
      "the character U+\(Hex.encode(UInt64(scalar.value), width: 4, uppercase: true)) at byte "
        + "\(offset) is not allowed in topics"
    case .emptyLevel(let index):
      "level \(index) of the topic is empty"
    case .levelSeparator(let offset):
      "the '/' at byte \(offset) is not allowed in a single topic level"
    case .reservedName(let name):
      "'\(name)' is reserved by the topic contract"
    }
  }
}
