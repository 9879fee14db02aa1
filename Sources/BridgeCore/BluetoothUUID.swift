/// A Bluetooth UUID, kept as its 128-bit value so every written form of it compares equal.
///
/// 16- and 32-bit UUIDs are short for `0000xxxx-0000-1000-8000-00805F9B34FB` and
/// `xxxxxxxx-0000-1000-8000-00805F9B34FB` (the Bluetooth SIG base UUID).
public struct BluetoothUUID: Sendable, Hashable, Comparable, CustomStringConvertible {
  /// Why a string is not a Bluetooth UUID.
  public enum Error: Swift.Error, Sendable, Hashable, CustomStringConvertible {
    /// The string has `byteCount` bytes (after an optional `0x`); a UUID has 4, 8 or 32 hex
    /// digits, or 36 characters in the dashed 128-bit form.
    case invalidLength(byteCount: Int)
    /// The byte at this offset is not a hex digit, or not a dash where one belongs.
    case invalidCharacter(offset: Int)

    /// The stable machine-readable code, `invalid_payload`.
    public var code: String { "invalid_payload" }

    /// A sentence for people.
    public var description: String {
      switch self {
      case .invalidLength(let byteCount):
        "a Bluetooth UUID has 4, 8 or 32 hex digits or the dashed 36-character form, "
          + "not \(byteCount) characters"
      case .invalidCharacter(let offset):
        "the Bluetooth UUID has an unexpected character at byte \(offset)"
      }
    }
  }

  /// The lower 96 bits of the Bluetooth SIG base UUID `00000000-0000-1000-8000-00805F9B34FB`.
  private static let baseHigh: UInt64 = 0x0000_1000
  private static let baseLow: UInt64 = 0x8000_0080_5F9B_34FB

  /// The first 64 bits (the ones written first).
  public let high: UInt64
  /// The last 64 bits.
  public let low: UInt64

  /// Makes a UUID from its two halves.
  ///
  /// - Parameters:
  ///   - high: The first 64 bits.
  ///   - low: The last 64 bits.
  public init(high: UInt64, low: UInt64) {
    self.high = high
    self.low = low
  }

  /// Makes the SIG-base UUID of a 16-bit UUID, for example `0x180F` (Battery Service).
  ///
  /// - Parameter uuid16: The 16-bit UUID.
  public init(uuid16: UInt16) {
    self.init(uuid32: UInt32(uuid16))
  }

  /// Makes the SIG-base UUID of a 32-bit UUID.
  ///
  /// - Parameter uuid32: The 32-bit UUID.
  public init(uuid32: UInt32) {
    self.init(high: UInt64(uuid32) << 32 | Self.baseHigh, low: Self.baseLow)
  }

  /// Makes a UUID from its 16 bytes in written (big-endian) order.
  ///
  /// - Parameter bytes: Sixteen bytes; any other count gives `nil`.
  public init?(bytes: [UInt8]) {
    guard bytes.count == 16 else { return nil }
    high = bytes[0..<8].reduce(0) { $0 << 8 | UInt64($1) }
    low = bytes[8..<16].reduce(0) { $0 << 8 | UInt64($1) }
  }

  /// Parses a UUID in any common form, hex digits of either case.
  ///
  /// Accepted: 16-bit (`180f`, `0x180F`), 32-bit (`0000180f`, `0x0000180F`), 128-bit with dashes
  /// (`0000180f-0000-1000-8000-00805f9b34fb`) or without (`0000180f00001000800000805f9b34fb`).
  ///
  /// - Parameter string: The UUID.
  /// - Throws: ``Error`` naming the problem; offsets count from the start of `string`.
  public init(_ string: String) throws(Error) {
    let bytes = Array(string.utf8)
    var start = 0
    if bytes.count == 6 || bytes.count == 10, bytes[0] == UInt8(ascii: "0"),
      bytes[1] == UInt8(ascii: "x") || bytes[1] == UInt8(ascii: "X")
    {
      start = 2
    }
    let length = bytes.count - start
    switch length {
    case 4, 8:
      let value = try Self.hexValue(bytes, start..<bytes.count)
      self.init(uuid32: UInt32(value))
    case 32:
      self.init(
        high: try Self.hexValue(bytes, 0..<16), low: try Self.hexValue(bytes, 16..<32))
    case 36:
      for dash in [8, 13, 18, 23] where bytes[dash] != UInt8(ascii: "-") {
        throw .invalidCharacter(offset: dash)
      }
      let high =
        try Self.hexValue(bytes, 0..<8) << 32 | Self.hexValue(bytes, 9..<13) << 16
        | Self.hexValue(bytes, 14..<18)
      let low = try Self.hexValue(bytes, 19..<23) << 48 | Self.hexValue(bytes, 24..<36)
      self.init(high: high, low: low)
    default:
      throw .invalidLength(byteCount: length)
    }
  }

  /// The 16-bit form, when this is a SIG-base UUID whose value fits 16 bits.
  public var uuid16: UInt16? {
    guard let value = uuid32, value <= 0xFFFF else { return nil }
    return UInt16(value)
  }

  /// The 32-bit form, when this is a SIG-base UUID.
  public var uuid32: UInt32? {
    guard high & 0xFFFF_FFFF == Self.baseHigh, low == Self.baseLow else { return nil }
    return UInt32(high >> 32)
  }

  /// The 16 bytes in written (big-endian) order.
  public var bytes: [UInt8] {
    (0..<16).map { index in
      let half = index < 8 ? high : low
      return UInt8(truncatingIfNeeded: half >> (56 - 8 * UInt64(index % 8)))
    }
  }

  /// The full lower-case form with dashes, `0000180f-0000-1000-8000-00805f9b34fb`.
  public var longForm: String {
    let digits = Hex.encode(high, width: 16) + Hex.encode(low, width: 16)
    var out = ""
    for (index, digit) in digits.enumerated() {
      if index == 8 || index == 12 || index == 16 || index == 20 { out.append("-") }
      out.append(digit)
    }
    return out
  }

  /// The form used in topics: four lower-case hex digits for a SIG-base UUID that fits 16 bits
  /// (`180f`), otherwise ``longForm``.
  public var shortForm: String {
    if let uuid16 { return Hex.encode(UInt64(uuid16), width: 4) }
    return longForm
  }

  /// The `<svc>`/`<chr>` topic level of the topic contract, the same as ``shortForm``.
  public var topicSegment: String { shortForm }

  /// The ``shortForm``.
  public var description: String { shortForm }

  /// Orders UUIDs by their 128-bit values.
  public static func < (lhs: BluetoothUUID, rhs: BluetoothUUID) -> Bool {
    (lhs.high, lhs.low) < (rhs.high, rhs.low)
  }

  private static func hexValue(_ bytes: [UInt8], _ range: Range<Int>) throws(Error) -> UInt64 {
    var value: UInt64 = 0
    for offset in range {
      guard let digit = Hex.value(of: bytes[offset]) else {
        throw .invalidCharacter(offset: offset)
      }
      value = value << 4 | UInt64(digit)
    }
    return value
  }
}
