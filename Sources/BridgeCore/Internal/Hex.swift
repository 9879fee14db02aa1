/// Hexadecimal digits: lower-case encoding and lenient digit decoding.
enum Hex {
  /// The lower-case hex digit (ASCII) of a value 0…15.
  @inline(__always)
  static func digit(_ nibble: UInt8) -> UInt8 {
    nibble < 10 ? 0x30 + nibble : 0x57 + nibble
  }

  /// The lower-case hex digits of `bytes`, two per byte, no separators.
  static func encode(_ bytes: some Sequence<UInt8>) -> String {
    String(decoding: ascii(bytes), as: UTF8.self)
  }

  /// The lower-case hex digits of `bytes` as ASCII bytes, two per byte, no separators (a
  /// value's `hex` payload, built without a `String` in between).
  static func ascii(_ bytes: some Sequence<UInt8>) -> [UInt8] {
    var out: [UInt8] = []
    out.reserveCapacity(bytes.underestimatedCount * 2)
    for byte in bytes {
      out.append(digit(byte >> 4))
      out.append(digit(byte & 0x0F))
    }
    return out
  }

  /// The hex digits of `value`, zero-padded to `width` digits, lower case unless `uppercase`
  /// (written straight into the string: up to 15 digits need no allocation at all).
  static func encode(_ value: UInt64, width: Int, uppercase: Bool = false) -> String {
    String(unsafeUninitializedCapacity: width) { buffer in
      var rest = value
      for index in stride(from: width - 1, through: 0, by: -1) {
        let nibble = UInt8(truncatingIfNeeded: rest & 0x0F)
        buffer[index] = uppercase && nibble >= 10 ? 0x37 + nibble : digit(nibble)
        rest >>= 4
      }
      return width
    }
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
