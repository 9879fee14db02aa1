/// Why an MQTT payload cannot be used: a value in the wrong format or a malformed request.
///
/// Offsets are byte offsets into the payload, or into the JSON string inside
/// ``invalidField(key:_:)``. Every case has the code `invalid_payload`.
public indirect enum PayloadError: Error, Sendable, Hashable, CustomStringConvertible {
  /// A byte that is neither a hex digit nor an allowed separator.
  case invalidHexDigit(offset: Int)
  /// A separator (space, `:` or `-`) not between two complete bytes.
  case misplacedHexSeparator(offset: Int)
  /// An odd number of hex digits.
  case oddHexDigitCount(Int)
  /// A byte outside the base64 alphabet, or `=` before the end.
  case invalidBase64Character(offset: Int)
  /// Base64 text whose length (without surrounding whitespace) is not a multiple of 4.
  case invalidBase64Length(Int)
  /// Base64 padding that is misplaced or leaves non-zero bits (a non-canonical encoding).
  case invalidBase64Padding(offset: Int)
  /// Bytes that are not well-formed UTF-8 from this offset on.
  case invalidUTF8(offset: Int)
  /// A payload that should be JSON and is not.
  case invalidJSON(JSONValue.Error)
  /// A JSON payload that is not an object; `found` names its type.
  case notAnObject(found: String)
  /// A JSON object without any of the value keys `hex`, `base64`, `utf8`.
  case missingValue
  /// A JSON object with more than one value key.
  case multipleValues(keys: [String])
  /// A JSON object without a required member.
  case missingKey(String)
  /// A member of the wrong JSON type.
  case wrongType(key: String, expected: String, found: String)
  /// A member this request does not know (a typo would otherwise be ignored).
  case unknownKey(String)
  /// A value not among the allowed ones; `key` is `nil` for a bare payload.
  case unsupportedValue(key: String?, allowed: [String])
  /// The value of a member is itself malformed, for example `{"hex":"0g"}`.
  case invalidField(key: String, PayloadError)
  /// A value that cannot be encoded in the format, for example bytes that are not UTF-8 for the
  /// `utf8` format.
  case notEncodable(format: String, PayloadError)

  /// The stable machine-readable code, `invalid_payload`.
  public var code: String { "invalid_payload" }

  /// A sentence for people.
  public var description: String {
    switch self {
    case .invalidHexDigit(let offset): "not a hex digit at byte \(offset)"
    case .misplacedHexSeparator(let offset):
      "hex separator at byte \(offset) is not between two bytes"
    case .oddHexDigitCount(let count): "odd number of hex digits (\(count))"
    case .invalidBase64Character(let offset): "not a base64 character at byte \(offset)"
    case .invalidBase64Length(let length): "base64 length \(length) is not a multiple of 4"
    case .invalidBase64Padding(let offset): "invalid base64 padding at byte \(offset)"
    case .invalidUTF8(let offset): "not valid UTF-8 at byte \(offset)"
    case .invalidJSON(let error): error.description
    case .notAnObject(let found): "expected a JSON object, found \(found)"
    case .missingValue: "expected one of the keys \"hex\", \"base64\", \"utf8\""
    case .multipleValues(let keys):
      "only one value key is allowed, found " + keys.map { "\"\($0)\"" }.joined(separator: ", ")
    case .missingKey(let key): "missing key \"\(key)\""
    case .wrongType(let key, let expected, let found):
      "\"\(key)\" must be \(expected), not \(found)"
    case .unknownKey(let key): "unknown key \"\(key)\""
    case .unsupportedValue(let key, let allowed):
      (key.map { "\"\($0)\" must be" } ?? "the payload must be") + " one of "
        + allowed.map { "\"\($0)\"" }.joined(separator: ", ")
    case .invalidField(let key, let error): "\"\(key)\": \(error.description)"
    case .notEncodable(let format, let error): "cannot encode as \(format): \(error.description)"
    }
  }
}
