/// A 48-bit Bluetooth device address, written `AA:BB:CC:DD:EE:FF`.
public struct BluetoothAddress: Sendable, Hashable, Comparable, CustomStringConvertible {
  /// Why a string is not a Bluetooth address.
  public enum Error: Swift.Error, Sendable, Hashable, CustomStringConvertible {
    /// The string has `byteCount` bytes; an address has 12 hex digits, or 17 characters with
    /// separators.
    case invalidLength(byteCount: Int)
    /// The byte at this offset is neither a hex digit nor a separator in its place.
    case invalidCharacter(offset: Int)

    /// The stable machine-readable code, `invalid_payload`.
    public var code: String { "invalid_payload" }

    /// A sentence for people.
    public var description: String {
      switch self {
      case .invalidLength(let byteCount):
        "a Bluetooth address has 12 hex digits (optionally separated by ':' or '-'), "
          + "not \(byteCount) characters"
      case .invalidCharacter(let offset):
        "the Bluetooth address has an unexpected character at byte \(offset)"
      }
    }
  }

  /// The address as a number, the first written byte most significant.
  public let value: UInt64

  /// Parses an address.
  ///
  /// Accepts hex digits of either case, as `aa:bb:cc:dd:ee:ff`, `aa-bb-cc-dd-ee-ff` (one
  /// separator used throughout) or `aabbccddeeff`.
  ///
  /// - Parameter string: The address.
  /// - Throws: ``Error`` naming the problem.
  public init(_ string: String) throws(Error) {
    let bytes = Array(string.utf8)
    let separator: UInt8?
    switch bytes.count {
    case 12: separator = nil
    case 17: separator = bytes[2]
    default: throw .invalidLength(byteCount: bytes.count)
    }
    if let separator, separator != UInt8(ascii: ":") && separator != UInt8(ascii: "-") {
      throw .invalidCharacter(offset: 2)
    }
    var value: UInt64 = 0
    var offset = 0
    for index in 0..<6 {
      if index > 0, let separator {
        guard bytes[offset] == separator else { throw .invalidCharacter(offset: offset) }
        offset += 1
      }
      for _ in 0..<2 {
        guard let digit = Hex.value(of: bytes[offset]) else {
          throw .invalidCharacter(offset: offset)
        }
        value = value << 4 | UInt64(digit)
        offset += 1
      }
    }
    self.value = value
  }

  /// Reads the compact form of ``DeviceID/init(address:)`` exactly: 12 upper-case hex digits.
  ///
  /// - Parameter compact: The bytes of a topic level.
  init?(compact: some Collection<UInt8>) {
    guard compact.count == 12 else { return nil }
    var value: UInt64 = 0
    for byte in compact {
      guard let digit = Hex.value(of: byte), !(UInt8(ascii: "a")...UInt8(ascii: "f")).contains(byte)
      else { return nil }
      value = value << 4 | UInt64(digit)
    }
    self.value = value
  }

  /// Makes an address from its six bytes in written order.
  ///
  /// - Parameter bytes: Six bytes, `bytes[0]` written first; any other count gives `nil`.
  public init?(bytes: [UInt8]) {
    guard bytes.count == 6 else { return nil }
    value = bytes.reduce(0) { $0 << 8 | UInt64($1) }
  }

  /// The six bytes in written order (`AA` first).
  public var bytes: [UInt8] {
    (0..<6).map { UInt8(truncatingIfNeeded: value >> (40 - 8 * UInt64($0))) }
  }

  /// Whether a random address of this value is a **private** one (resolvable or
  /// non-resolvable: the two top bits are not both set), which the device replaces every few
  /// minutes and never uses again; a random **static** address (`11` in the top bits) stays
  /// until the device power-cycles (Core spec Vol 6 Part B 1.3.2).
  ///
  /// Only meaningful for an address of type ``Advertisement/AddressType/random``.
  public var isPrivateRandom: Bool { value >> 46 != 0b11 }

  /// The canonical form, `AA:BB:CC:DD:EE:FF`.
  public var description: String {
    // Written straight into the string (in every advertisement's payload): no array between.
    String(unsafeUninitializedCapacity: 17) { text in
      var offset = 0
      forEachCanonicalByte { byte in
        text[offset] = byte
        offset += 1
      }
      return 17
    }
  }

  /// Appends the canonical form's 17 bytes (``description`` without making a string).
  func appendCanonical(to bytes: inout [UInt8]) {
    forEachCanonicalByte { bytes.append($0) }
  }

  /// The canonical form's 17 bytes in order, `AA:BB:CC:DD:EE:FF`.
  private func forEachCanonicalByte(_ body: (UInt8) -> Void) {
    for index in 0..<6 {
      let byte = UInt8(truncatingIfNeeded: value >> UInt64(40 - 8 * index))
      if index > 0 { body(UInt8(ascii: ":")) }
      body(Self.upperDigit(byte >> 4))
      body(Self.upperDigit(byte & 0x0F))
    }
  }

  private static func upperDigit(_ nibble: UInt8) -> UInt8 {
    nibble < 10 ? 0x30 + nibble : 0x37 + nibble
  }

  /// The twelve upper-case hex digits without separators, `AABBCCDDEEFF`.
  public var compactForm: String { Hex.encode(value, width: 12, uppercase: true) }

  /// Orders addresses numerically.
  public static func < (lhs: BluetoothAddress, rhs: BluetoothAddress) -> Bool {
    lhs.value < rhs.value
  }
}
