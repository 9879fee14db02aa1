/// UTF-8 and Unicode rules shared by topic validation, sanitisation and payload formats.
enum UTF8Rules {
  /// The byte offset of the first byte that does not start a well-formed UTF-8 sequence
  /// (Unicode Table 3-7: no overlong forms, no surrogates, nothing above U+10FFFF), or `nil`.
  static func firstInvalidOffset(_ bytes: [UInt8]) -> Int? {
    var index = 0
    let count = bytes.count
    while index < count {
      let lead = bytes[index]
      if lead < 0x80 {
        index += 1
        continue
      }
      let length: Int
      var low: UInt8 = 0x80
      var high: UInt8 = 0xBF
      switch lead {
      case 0xC2...0xDF: length = 2
      case 0xE0:
        length = 3
        low = 0xA0
      case 0xE1...0xEC, 0xEE...0xEF: length = 3
      case 0xED:
        length = 3
        high = 0x9F
      case 0xF0:
        length = 4
        low = 0x90
      case 0xF1...0xF3: length = 4
      case 0xF4:
        length = 4
        high = 0x8F
      default: return index
      }
      guard index + length <= count, (low...high).contains(bytes[index + 1]) else { return index }
      for next in 2..<length where !(0x80...0xBF).contains(bytes[index + next]) {
        return index
      }
      index += length
    }
    return nil
  }

  /// Whether MQTT brokers refuse this scalar in a topic.
  ///
  /// MQTT forbids U+0000 and discourages control characters and noncharacters; mosquitto's
  /// `mosquitto_validate_utf8` (used by `mosquitto_publish` and `mosquitto_subscribe`) refuses all
  /// of them, so a topic containing one could never be published.
  static func isForbiddenInTopic(_ scalar: Unicode.Scalar) -> Bool {
    let value = scalar.value
    if value <= 0x1F || (0x7F...0x9F).contains(value) { return true }
    if (0xFDD0...0xFDEF).contains(value) { return true }
    return value & 0xFFFE == 0xFFFE
  }

  /// Whether the byte is JSON/ASCII whitespace (space, tab, line feed, carriage return).
  static func isASCIIWhitespace(_ byte: UInt8) -> Bool {
    byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
  }

  /// The range of `bytes` without leading and trailing ASCII whitespace.
  static func trimmedRange(_ bytes: [UInt8]) -> Range<Int> {
    var lower = 0
    var upper = bytes.count
    while lower < upper, isASCIIWhitespace(bytes[lower]) { lower += 1 }
    while upper > lower, isASCIIWhitespace(bytes[upper - 1]) { upper -= 1 }
    return lower..<upper
  }
}
