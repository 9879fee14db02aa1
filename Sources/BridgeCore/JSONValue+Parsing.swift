extension JSONValue {
  /// Why bytes are not a JSON text. Offsets are byte offsets into the input.
  public enum Error: Swift.Error, Sendable, Hashable, CustomStringConvertible {
    /// The input is not well-formed UTF-8 from this offset on.
    case invalidUTF8(offset: Int)
    /// The input ends inside a value (or is empty).
    case unexpectedEnd
    /// This byte cannot appear here.
    case unexpectedByte(UInt8, offset: Int)
    /// The number starting here is malformed or out of the range of a `Double`.
    case invalidNumber(offset: Int)
    /// The escape sequence starting here is not one of JSON's.
    case invalidEscape(offset: Int)
    /// The `\u` escape starting here is an unpaired UTF-16 surrogate.
    case unpairedSurrogate(offset: Int)
    /// A string contains an unescaped control character here.
    case controlCharacterInString(offset: Int)
    /// An object repeats a key; the member starts here.
    case duplicateKey(String, offset: Int)
    /// Arrays and objects are nested deeper than ``JSONValue/maximumDepth`` here.
    case tooDeep(offset: Int)

    /// The stable machine-readable code, `invalid_payload`.
    public var code: String { "invalid_payload" }

    /// A sentence for people.
    public var description: String {
      switch self {
      case .invalidUTF8(let offset): "invalid JSON: not UTF-8 at byte \(offset)"
      case .unexpectedEnd: "invalid JSON: unexpected end of input"
      case .unexpectedByte(let byte, let offset):
        "invalid JSON: unexpected \(Self.describe(byte)) at byte \(offset)"
      case .invalidNumber(let offset): "invalid JSON: malformed number at byte \(offset)"
      case .invalidEscape(let offset): "invalid JSON: invalid escape at byte \(offset)"
      case .unpairedSurrogate(let offset):
        "invalid JSON: unpaired UTF-16 surrogate escape at byte \(offset)"
      case .controlCharacterInString(let offset):
        "invalid JSON: unescaped control character in a string at byte \(offset)"
      case .duplicateKey(let key, let offset):
        "invalid JSON: duplicate key \"\(key)\" at byte \(offset)"
      case .tooDeep(let offset):
        "invalid JSON: nested deeper than \(JSONValue.maximumDepth) levels at byte \(offset)"
      }
    }

    private static func describe(_ byte: UInt8) -> String {
      (0x21...0x7E).contains(byte)
        ? "'\(Character(Unicode.Scalar(byte)))'" : "byte 0x\(Hex.encode([byte]))"
    }
  }

  /// How deeply arrays and objects may nest in ``parse(_:)``.
  public static let maximumDepth = 64

  /// Parses a JSON text (RFC 8259), strictly.
  ///
  /// Any value may be at the top level; whitespace around it is allowed, anything else after it
  /// is not. Refused: invalid UTF-8, a byte order mark, comments, trailing commas, single quotes,
  /// leading zeros, unescaped control characters, unpaired surrogate escapes, duplicate keys,
  /// numbers a `Double` cannot hold, and nesting deeper than ``maximumDepth``. Numbers without
  /// fraction or exponent that fit 64 bits become ``integer(_:)``, other numbers ``number(_:)``.
  ///
  /// - Parameter bytes: The JSON text.
  /// - Returns: The value.
  /// - Throws: ``Error`` describing the first problem.
  public static func parse(_ bytes: [UInt8]) throws(Error) -> JSONValue {
    if let offset = UTF8Rules.firstInvalidOffset(bytes) { throw .invalidUTF8(offset: offset) }
    var parser = JSONParser(bytes: bytes)
    return try parser.parseDocument()
  }

  /// Parses a JSON text given as a string.
  ///
  /// - Parameter text: The JSON text.
  /// - Returns: The value.
  /// - Throws: ``Error`` describing the first problem.
  public static func parse(_ text: String) throws(Error) -> JSONValue {
    try parse(Array(text.utf8))
  }
}
