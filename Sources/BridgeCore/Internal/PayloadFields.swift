/// Member checks shared by the request payload parsers.
enum PayloadFields {
  /// Throws ``PayloadError/unknownKey(_:)`` for the first key of `object` not in `allowed`.
  static func refuseUnknownKeys(_ object: JSONObject, allowed: Set<String>) throws(PayloadError) {
    for key in object.keys where !allowed.contains(key) { throw .unknownKey(key) }
  }

  /// The `"transaction"` member: any JSON scalar, echoed back in the result.
  static func transaction(in object: JSONObject) throws(PayloadError) -> JSONValue? {
    guard let value = object["transaction"] else { return nil }
    guard value.isScalar else {
      throw .wrongType(
        key: "transaction", expected: "a string, number, boolean or null", found: value.typeName)
    }
    return value
  }

  /// An optional boolean member.
  static func bool(_ key: String, in object: JSONObject) throws(PayloadError) -> Bool? {
    guard let value = object[key] else { return nil }
    guard case .bool(let flag) = value else {
      throw .wrongType(key: key, expected: "a boolean", found: value.typeName)
    }
    return flag
  }

  /// Whether the first byte that is not whitespace is `{`.
  static func looksLikeJSONObject(_ payload: [UInt8]) -> Bool {
    let range = UTF8Rules.trimmedRange(payload)
    return !range.isEmpty && payload[range.lowerBound] == UInt8(ascii: "{")
  }
}
