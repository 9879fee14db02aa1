/// One topic level produced by the gateway: non-empty, without `/`, wildcards, NUL or control
/// characters, valid UTF-8.
///
/// Device names come from the air and may be anything. ``sanitize(_:)-(String)`` turns any of them
/// into a safe, readable segment; the raw name belongs in JSON payloads, not in topics.
public struct TopicSegment: Sendable, Hashable, CustomStringConvertible {
  /// Why a string is not a valid topic segment.
  public typealias Error = TopicError

  /// The most UTF-8 bytes ``sanitize(_:)-(String)`` keeps.
  public static let maximumSanitizedByteCount = 64

  /// The segment as a string.
  public let rawValue: String

  /// Validates a single topic level.
  ///
  /// - Parameter string: The level, for example `kitchen`.
  /// - Throws: ``TopicError`` naming the first problem found, ``TopicError/levelSeparator(offset:)``
  ///   for a `/`.
  public init(_ string: String) throws(TopicError) {
    try TopicRules.validate(string, kind: .segment)
    rawValue = string
  }

  /// Makes a segment from any name by sanitising it (see ``sanitize(_:)-(String)``).
  ///
  /// - Parameter raw: Any name, for example a device's advertised name.
  public init(sanitizing raw: String) {
    rawValue = Self.sanitize(raw)
  }

  /// Makes a segment from any bytes by sanitising them (see ``sanitize(_:)-([UInt8])``).
  ///
  /// - Parameter bytes: Any bytes, for example a device's advertised name as received.
  public init(sanitizing bytes: [UInt8]) {
    rawValue = Self.sanitize(bytes)
  }

  /// The segment itself.
  public var description: String { rawValue }

  /// Whether both segments have the same bytes.
  public static func == (lhs: TopicSegment, rhs: TopicSegment) -> Bool {
    lhs.rawValue.hasSameBytes(as: rhs.rawValue)
  }

  /// Hashes the segment's bytes.
  public func hash(into hasher: inout Hasher) {
    for byte in rawValue.utf8 { hasher.combine(byte) }
  }

  /// Turns any name into a safe, non-empty single topic level.
  ///
  /// In order:
  /// 1. Whitespace (including tabs, line breaks and no-break spaces) becomes one space per run,
  ///    and leading and trailing whitespace is dropped.
  /// 2. `/`, `+`, `#`, NUL, other control characters, noncharacters, U+FFFD (what invalid UTF-8
  ///    decodes to) and invisible format characters (bidirectional overrides, zero-width spaces,
  ///    byte order marks; the emoji joiner U+200D and tag characters stay) each become `_`.
  /// 3. The result is cut to ``maximumSanitizedByteCount`` UTF-8 bytes at a character boundary
  ///    (within a character only if a single character is longer), never inside a scalar.
  /// 4. An empty result becomes `_`.
  ///
  /// - Parameter raw: Any name.
  /// - Returns: A string that ``init(_:)`` accepts.
  public static func sanitize(_ raw: String) -> String {
    var mapped = String.UnicodeScalarView()
    var pendingSpace = false
    for scalar in raw.unicodeScalars {
      if scalar.properties.isWhitespace {
        pendingSpace = !mapped.isEmpty
        continue
      }
      if pendingSpace {
        mapped.append(" ")
        pendingSpace = false
      }
      mapped.append(isReplaced(scalar) ? "_" : scalar)
    }
    var result = ""
    var byteCount = 0
    let limit = maximumSanitizedByteCount
    for character in String(mapped) {
      let size = character.utf8.count
      if byteCount + size <= limit {
        result.append(character)
        byteCount += size
        continue
      }
      for scalar in character.unicodeScalars {
        let scalarSize = scalar.utf8.count
        guard byteCount + scalarSize <= limit else { break }
        result.unicodeScalars.append(scalar)
        byteCount += scalarSize
      }
      break
    }
    while result.unicodeScalars.last == " " { result.unicodeScalars.removeLast() }
    return result.isEmpty ? "_" : result
  }

  /// Turns any bytes into a safe, non-empty single topic level.
  ///
  /// Invalid UTF-8 sequences decode to U+FFFD first, which ``sanitize(_:)-(String)`` then turns
  /// into `_`.
  ///
  /// - Parameter bytes: Any bytes.
  /// - Returns: A string that ``init(_:)`` accepts.
  public static func sanitize(_ bytes: [UInt8]) -> String {
    sanitize(String(decoding: bytes, as: UTF8.self))
  }

  private static func isReplaced(_ scalar: Unicode.Scalar) -> Bool {
    switch scalar {
    case "/", "+", "#", "\u{FFFD}": return true
    case "\u{200D}", "\u{E0020}"..."\u{E007F}": return false
    default:
      return UTF8Rules.isForbiddenInTopic(scalar) || scalar.properties.generalCategory == .format
    }
  }
}
