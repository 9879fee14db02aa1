/// A recursive-descent JSON parser over bytes already known to be valid UTF-8.
struct JSONParser {
  typealias Error = JSONValue.Error

  private let bytes: [UInt8]
  private var index = 0

  init(bytes: [UInt8]) {
    self.bytes = bytes
  }

  mutating func parseDocument() throws(Error) -> JSONValue {
    skipWhitespace()
    let value = try parseValue(depth: 0)
    skipWhitespace()
    if index < bytes.count { throw .unexpectedByte(bytes[index], offset: index) }
    return value
  }

  private mutating func skipWhitespace() {
    while index < bytes.count, UTF8Rules.isASCIIWhitespace(bytes[index]) { index += 1 }
  }

  private func peek() throws(Error) -> UInt8 {
    guard index < bytes.count else { throw .unexpectedEnd }
    return bytes[index]
  }

  private mutating func expect(_ byte: UInt8) throws(Error) {
    let found = try peek()
    guard found == byte else { throw .unexpectedByte(found, offset: index) }
    index += 1
  }

  private mutating func parseValue(depth: Int) throws(Error) -> JSONValue {
    switch try peek() {
    case UInt8(ascii: "{"): return try parseObject(depth: depth + 1)
    case UInt8(ascii: "["): return try parseArray(depth: depth + 1)
    case UInt8(ascii: "\""): return .string(try parseString())
    case UInt8(ascii: "t"): return try parseLiteral("true", .bool(true))
    case UInt8(ascii: "f"): return try parseLiteral("false", .bool(false))
    case UInt8(ascii: "n"): return try parseLiteral("null", .null)
    case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
    case let byte: throw .unexpectedByte(byte, offset: index)
    }
  }

  private mutating func parseLiteral(_ word: String, _ value: JSONValue) throws(Error) -> JSONValue
  {
    for byte in word.utf8 { try expect(byte) }
    return value
  }

  private mutating func parseObject(depth: Int) throws(Error) -> JSONValue {
    if depth > JSONValue.maximumDepth { throw .tooDeep(offset: index) }
    index += 1
    var object = JSONObject()
    skipWhitespace()
    if try peek() == UInt8(ascii: "}") {
      index += 1
      return .object(object)
    }
    while true {
      skipWhitespace()
      let keyOffset = index
      guard try peek() == UInt8(ascii: "\"") else {
        throw .unexpectedByte(bytes[index], offset: index)
      }
      let key = try parseString()
      if object[key] != nil { throw .duplicateKey(key, offset: keyOffset) }
      skipWhitespace()
      try expect(UInt8(ascii: ":"))
      skipWhitespace()
      object[key] = try parseValue(depth: depth)
      skipWhitespace()
      let next = try peek()
      index += 1
      if next == UInt8(ascii: "}") { return .object(object) }
      guard next == UInt8(ascii: ",") else { throw .unexpectedByte(next, offset: index - 1) }
    }
  }

  private mutating func parseArray(depth: Int) throws(Error) -> JSONValue {
    if depth > JSONValue.maximumDepth { throw .tooDeep(offset: index) }
    index += 1
    var elements: [JSONValue] = []
    skipWhitespace()
    if try peek() == UInt8(ascii: "]") {
      index += 1
      return .array(elements)
    }
    while true {
      skipWhitespace()
      elements.append(try parseValue(depth: depth))
      skipWhitespace()
      let next = try peek()
      index += 1
      if next == UInt8(ascii: "]") { return .array(elements) }
      guard next == UInt8(ascii: ",") else { throw .unexpectedByte(next, offset: index - 1) }
    }
  }

  private mutating func parseString() throws(Error) -> String {
    index += 1
    var out: [UInt8] = []
    var runStart = index
    while true {
      guard index < bytes.count else { throw .unexpectedEnd }
      let byte = bytes[index]
      switch byte {
      case UInt8(ascii: "\""):
        out.append(contentsOf: bytes[runStart..<index])
        index += 1
        return String(decoding: out, as: UTF8.self)
      case UInt8(ascii: "\\"):
        out.append(contentsOf: bytes[runStart..<index])
        try parseEscape(into: &out)
        runStart = index
      case 0x00..<0x20:
        throw .controlCharacterInString(offset: index)
      default:
        index += 1
      }
    }
  }

  private mutating func parseEscape(into out: inout [UInt8]) throws(Error) {
    let start = index
    index += 1
    guard index < bytes.count else { throw .unexpectedEnd }
    let letter = bytes[index]
    index += 1
    let simple: UInt8? =
      switch letter {
      case UInt8(ascii: "\""): UInt8(ascii: "\"")
      case UInt8(ascii: "\\"): UInt8(ascii: "\\")
      case UInt8(ascii: "/"): UInt8(ascii: "/")
      case UInt8(ascii: "b"): 0x08
      case UInt8(ascii: "f"): 0x0C
      case UInt8(ascii: "n"): 0x0A
      case UInt8(ascii: "r"): 0x0D
      case UInt8(ascii: "t"): 0x09
      default: nil
      }
    if let simple {
      out.append(simple)
      return
    }
    guard letter == UInt8(ascii: "u") else { throw .invalidEscape(offset: start) }
    let unit = try parseHex4(escapeStart: start)
    var scalarValue = UInt32(unit)
    if (0xDC00...0xDFFF).contains(unit) { throw .unpairedSurrogate(offset: start) }
    if (0xD800...0xDBFF).contains(unit) {
      guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"),
        bytes[index + 1] == UInt8(ascii: "u")
      else { throw .unpairedSurrogate(offset: start) }
      let lowStart = index
      index += 2
      let low = try parseHex4(escapeStart: lowStart)
      guard (0xDC00...0xDFFF).contains(low) else { throw .unpairedSurrogate(offset: start) }
      scalarValue = 0x10000 + ((UInt32(unit) - 0xD800) << 10) + (UInt32(low) - 0xDC00)
    }
    guard let scalar = Unicode.Scalar(scalarValue) else { throw .invalidEscape(offset: start) }
    out.append(contentsOf: scalar.utf8)
  }

  private mutating func parseHex4(escapeStart: Int) throws(Error) -> UInt16 {
    var unit: UInt16 = 0
    for _ in 0..<4 {
      guard index < bytes.count else { throw .unexpectedEnd }
      guard let digit = Hex.value(of: bytes[index]) else {
        throw .invalidEscape(offset: escapeStart)
      }
      unit = unit << 4 | UInt16(digit)
      index += 1
    }
    return unit
  }

  private mutating func parseNumber() throws(Error) -> JSONValue {
    let start = index
    var isInteger = true
    if bytes[index] == UInt8(ascii: "-") { index += 1 }
    guard index < bytes.count else { throw .unexpectedEnd }
    if bytes[index] == UInt8(ascii: "0") {
      index += 1
    } else if isDigit(bytes[index]) {
      skipDigits()
    } else {
      throw .invalidNumber(offset: start)
    }
    if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
      index += 1
      guard index < bytes.count, isDigit(bytes[index]) else { throw .invalidNumber(offset: start) }
      skipDigits()
      isInteger = false
    }
    if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
      index += 1
      if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-")
      {
        index += 1
      }
      guard index < bytes.count, isDigit(bytes[index]) else { throw .invalidNumber(offset: start) }
      skipDigits()
      isInteger = false
    }
    let text = String(decoding: bytes[start..<index], as: UTF8.self)
    if isInteger, let integer = Int64(text) { return .integer(integer) }
    guard let number = Double(text), number.isFinite else { throw .invalidNumber(offset: start) }
    return .number(number)
  }

  private func isDigit(_ byte: UInt8) -> Bool {
    (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
  }

  private mutating func skipDigits() {
    while index < bytes.count, isDigit(bytes[index]) { index += 1 }
  }
}
