/// Standard base64 (RFC 4648 §4, with padding), strict.
enum Base64 {
  private static let alphabet: [UInt8] = Array(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

  private static let values: [UInt8] = {
    var table = [UInt8](repeating: 0xFF, count: 256)
    for (index, byte) in alphabet.enumerated() { table[Int(byte)] = UInt8(index) }
    return table
  }()

  /// The base64 text of `bytes`, padded.
  static func encode(_ bytes: [UInt8]) -> String {
    var out: [UInt8] = []
    out.reserveCapacity((bytes.count + 2) / 3 * 4)
    var index = 0
    while index < bytes.count {
      let remaining = bytes.count - index
      let b0 = UInt32(bytes[index])
      let b1 = remaining > 1 ? UInt32(bytes[index + 1]) : 0
      let b2 = remaining > 2 ? UInt32(bytes[index + 2]) : 0
      let group = b0 << 16 | b1 << 8 | b2
      out.append(alphabet[Int(group >> 18 & 0x3F)])
      out.append(alphabet[Int(group >> 12 & 0x3F)])
      out.append(remaining > 1 ? alphabet[Int(group >> 6 & 0x3F)] : UInt8(ascii: "="))
      out.append(remaining > 2 ? alphabet[Int(group & 0x3F)] : UInt8(ascii: "="))
      index += 3
    }
    return String(decoding: out, as: UTF8.self)
  }

  /// Decodes `bytes[range]` strictly: length a multiple of 4, padding only at the end, unused
  /// bits zero, no whitespace or line breaks inside.
  static func decode(_ bytes: [UInt8], _ range: Range<Int>) throws(PayloadError) -> [UInt8] {
    guard range.count % 4 == 0 else { throw .invalidBase64Length(range.count) }
    var out: [UInt8] = []
    out.reserveCapacity(range.count / 4 * 3)
    var index = range.lowerBound
    while index < range.upperBound {
      let isLast = index + 4 == range.upperBound
      var group: UInt32 = 0
      var padding = 0
      for position in 0..<4 {
        let offset = index + position
        let byte = bytes[offset]
        if byte == UInt8(ascii: "=") {
          guard isLast, position >= 2 else { throw .invalidBase64Character(offset: offset) }
          padding += 1
          group <<= 6
          continue
        }
        let value = values[Int(byte)]
        guard value != 0xFF else { throw .invalidBase64Character(offset: offset) }
        if padding > 0 { throw .invalidBase64Padding(offset: offset - 1) }
        group = group << 6 | UInt32(value)
      }
      switch padding {
      case 0:
        out.append(contentsOf: [UInt8(group >> 16 & 0xFF), UInt8(group >> 8 & 0xFF)])
        out.append(UInt8(group & 0xFF))
      case 1:
        guard group & 0xFF == 0 else { throw .invalidBase64Padding(offset: index + 2) }
        out.append(contentsOf: [UInt8(group >> 16 & 0xFF), UInt8(group >> 8 & 0xFF)])
      default:
        guard group & 0xFFFF == 0 else { throw .invalidBase64Padding(offset: index + 1) }
        out.append(UInt8(group >> 16 & 0xFF))
      }
      index += 4
    }
    return out
  }
}
