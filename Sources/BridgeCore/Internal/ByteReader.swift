/// Reads little- or big-endian integers from a byte array, front to back, for the
/// advertisement decoders. Every read checks the length first and returns `nil` past the end.
struct ByteReader {
  private let bytes: [UInt8]
  /// The offset of the next byte to read.
  private(set) var offset: Int

  init(_ bytes: [UInt8], offset: Int = 0) {
    self.bytes = bytes
    self.offset = offset
  }

  /// How many bytes are left.
  var remaining: Int { bytes.count - offset }

  /// The next `count` bytes, or `nil` when fewer are left.
  mutating func take(_ count: Int) -> [UInt8]? {
    guard count >= 0, remaining >= count else { return nil }
    defer { offset += count }
    return Array(bytes[offset..<offset + count])
  }

  /// An unsigned integer of `width` bytes (1–4), little-endian unless `bigEndian`.
  mutating func unsigned(_ width: Int, bigEndian: Bool = false) -> UInt32? {
    guard let raw = take(width) else { return nil }
    let ordered = bigEndian ? raw : raw.reversed()
    return ordered.reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
  }

  /// A two's-complement signed integer of `width` bytes (1–4).
  mutating func signed(_ width: Int, bigEndian: Bool = false) -> Int32? {
    guard let raw = unsigned(width, bigEndian: bigEndian) else { return nil }
    let shift = UInt32(32 - 8 * width)
    return Int32(bitPattern: raw << shift) >> Int32(shift)
  }
}
