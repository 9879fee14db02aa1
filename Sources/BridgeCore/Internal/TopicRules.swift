/// The one scanner behind topic names, filters, segments, base topics and friendly names.
enum TopicRules {
  /// What is being validated.
  enum Kind {
    /// A topic name: no wildcards.
    case name
    /// A subscription filter: `+` as a whole level, `#` as the whole last level.
    case filter
    /// One level: no `/`, no wildcards.
    case segment
  }

  /// Throws the first problem of `string` as a `kind`, or returns.
  static func validate(
    _ string: String, kind: Kind, limit: Int = TopicName.maximumByteCount
  ) throws(TopicError) {
    let byteCount = string.utf8.count
    if byteCount == 0 { throw .empty }
    if byteCount > limit { throw .tooLong(byteCount: byteCount, limit: limit) }
    var offset = 0
    var levelIndex = 0
    var levelLength = 0
    var wildcardOffset: Int?
    var levelIsMultiLevelWildcard = false

    func closeLevel() throws(TopicError) {
      if levelLength == 0 { throw .emptyLevel(index: levelIndex) }
      if let wildcardOffset, levelLength != 1 { throw .misplacedWildcard(offset: wildcardOffset) }
    }

    for scalar in string.unicodeScalars {
      switch scalar {
      case "/":
        if kind == .segment { throw .levelSeparator(offset: offset) }
        try closeLevel()
        if levelIsMultiLevelWildcard, let wildcardOffset {
          throw .misplacedWildcard(offset: wildcardOffset)
        }
        levelIndex += 1
        levelLength = 0
        wildcardOffset = nil
        levelIsMultiLevelWildcard = false
      case "+", "#":
        guard kind == .filter else { throw .wildcard(offset: offset) }
        if wildcardOffset == nil { wildcardOffset = offset }
        levelIsMultiLevelWildcard = scalar == "#"
        levelLength += 1
      default:
        if UTF8Rules.isForbiddenInTopic(scalar) {
          throw .forbiddenCharacter(scalar, offset: offset)
        }
        levelLength += scalar.utf8.count
      }
      offset += scalar.utf8.count
    }
    try closeLevel()
  }

  /// The levels of a validated topic, name or filter, split at every `/` byte.
  static func levels(_ string: String) -> [Substring] {
    string.utf8.split(separator: 0x2F, omittingEmptySubsequences: false).map { Substring($0) }
  }
}

extension StringProtocol {
  /// Whether both strings have the same UTF-8 bytes.
  ///
  /// MQTT compares topics byte by byte, while `==` on strings treats canonically equivalent
  /// strings (`é` precomposed and decomposed) as equal.
  func hasSameBytes(as other: some StringProtocol) -> Bool {
    utf8.elementsEqual(other.utf8)
  }
}
