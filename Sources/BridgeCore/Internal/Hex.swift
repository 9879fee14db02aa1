/// Hexadecimal digits: lower-case encoding and lenient digit decoding.
enum Hex {
  private static let digits: [UInt8] = Array("0123456789abcdef".utf8)

  /// The lower-case hex digit (ASCII) of a value 0…15.
  @inline(__always)
  static func digit(_ nibble: UInt8) -> UInt8 {
    nibble < 10 ? 0x30 + nibble : 0x57 + nibble
  }

  /// The lower-case hex digits of `bytes`, two per byte, no separators.
  static func encode(_ bytes: some Sequence<UInt8>) -> String {
    var out: [UInt8] = []
    out.reserveCapacity(bytes.underestimatedCount * 2)
    for byte in bytes {
      out.append(digits[Int(byte >> 4)])
      out.append(digits[Int(byte & 0x0F)])
    }
    return String(decoding: out, as: UTF8.self)
  }

  /// The lower-case hex digits of `value`, zero-padded to `width` digits.
  static func encode(_ value: UInt64, width: Int) -> String {
    var out = [UInt8](repeating: 0x30, count: width)
    var rest = value
    for index in stride(from: width - 1, through: 0, by: -1) {
      out[index] = digits[Int(rest & 0x0F)]
      rest >>= 4
    }
    return String(decoding: out, as: UTF8.self)
  }

  /// The value 0…15 of an ASCII hex digit of either case, or `nil`.
  static func value(of byte: UInt8) -> UInt8? {
    switch byte {
    case 0x30...0x39: byte - 0x30
    case 0x41...0x46: byte - 0x41 + 10
    case 0x61...0x66: byte - 0x61 + 10
    default: nil
    }
  }
}
