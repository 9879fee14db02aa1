extension JSONValue {
  /// The compact JSON text of this value.
  ///
  /// Deterministic: no whitespace, object members in their order, integers and whole numbers
  /// up to 2^53 without fraction (`3`, not `3.0`), other numbers in the shortest form that reads
  /// back to the same `Double`, non-finite numbers as `null`. Strings escape `"`, `\`, all control
  /// characters (`\n`, `\t`, … or `\u00XX`) and U+2028/U+2029; other characters stay as UTF-8.
  ///
  /// - Returns: The JSON text.
  public func serialized() -> String {
    String(decoding: serializedBytes(), as: UTF8.self)
  }

  /// The compact JSON text of this value as UTF-8 bytes, ready to publish.
  ///
  /// - Returns: The same text as ``serialized()``.
  public func serializedBytes() -> [UInt8] {
    var out: [UInt8] = []
    Self.write(self, to: &out)
    return out
  }

  /// Appends the compact JSON text of `value` to `out` (``serializedBytes()`` in place).
  static func write(_ value: JSONValue, to out: inout [UInt8]) {
    switch value {
    case .null: out.append(contentsOf: "null".utf8)
    case .bool(let flag): out.append(contentsOf: (flag ? "true" : "false").utf8)
    case .integer(let integer): out.append(contentsOf: String(integer).utf8)
    case .number(let number): writeNumber(number, to: &out)
    case .string(let string): appendString(string, to: &out)
    case .array(let elements):
      out.append(UInt8(ascii: "["))
      for (index, element) in elements.enumerated() {
        if index > 0 { out.append(UInt8(ascii: ",")) }
        write(element, to: &out)
      }
      out.append(UInt8(ascii: "]"))
    case .object(let object):
      out.append(UInt8(ascii: "{"))
      for (index, member) in object.enumerated() {
        if index > 0 { out.append(UInt8(ascii: ",")) }
        appendString(member.key, to: &out)
        out.append(UInt8(ascii: ":"))
        write(member.value, to: &out)
      }
      out.append(UInt8(ascii: "}"))
    }
  }

  private static func writeNumber(_ number: Double, to out: inout [UInt8]) {
    guard number.isFinite else {
      out.append(contentsOf: "null".utf8)
      return
    }
    if number.rounded() == number, abs(number) <= 9_007_199_254_740_992 {
      out.append(contentsOf: String(Int64(number)).utf8)
      return
    }
    var text = number.description
    if text.hasSuffix(".0") { text.removeLast(2) }
    out.append(contentsOf: text.utf8)
  }

  /// Whether a byte of UTF-8 text is copied as it is: not a control character, quote,
  /// backslash or DEL, nor the lead byte 0xE2 of U+2028 and U+2029 (escaped, with the
  /// other characters it leads, by the slower path).
  @inline(__always)
  static func needsNoEscape(_ byte: UInt8) -> Bool {
    byte >= 0x20 && byte != 0x22 && byte != 0x5C && byte != 0x7F && byte != 0xE2
  }

  /// Appends `string` as a JSON string literal, escaped as ``serialized()`` says.
  static func appendString(_ string: String, to out: inout [UInt8]) {
    out.append(UInt8(ascii: "\""))
    // Most strings need no escape: copy their UTF-8 at once.
    if string.utf8.allSatisfy(needsNoEscape) {
      out.append(contentsOf: string.utf8)
      out.append(UInt8(ascii: "\""))
      return
    }
    for scalar in string.unicodeScalars {
      switch scalar {
      case "\"": out.append(contentsOf: #"\""#.utf8)
      case "\\": out.append(contentsOf: #"\\"#.utf8)
      case "\n": out.append(contentsOf: #"\n"#.utf8)
      case "\r": out.append(contentsOf: #"\r"#.utf8)
      case "\t": out.append(contentsOf: #"\t"#.utf8)
      case "\u{08}": out.append(contentsOf: #"\b"#.utf8)
      case "\u{0C}": out.append(contentsOf: #"\f"#.utf8)
      case "\u{00}"..."\u{1F}", "\u{7F}", "\u{2028}", "\u{2029}":
        out.append(contentsOf: "\\u\(Hex.encode(UInt64(scalar.value), width: 4))".utf8)
      default: out.append(contentsOf: scalar.utf8)
      }
    }
    out.append(UInt8(ascii: "\""))
  }
}
