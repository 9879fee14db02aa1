/// Writes compact JSON straight into bytes, for payloads built on a hot path without a
/// ``JSONValue`` tree (no dictionary, no boxed values, one buffer). The output is byte for
/// byte what ``JSONValue/serializedBytes()`` makes of the same members in the same order.
///
/// The caller writes a well-formed document: `key` only inside an object, one value after
/// each key.
struct JSONWriter {
  private(set) var bytes: [UInt8] = []
  private var needsComma = false

  init(capacity: Int = 256) {
    bytes.reserveCapacity(capacity)
  }

  mutating func beginObject() { open(UInt8(ascii: "{")) }
  mutating func endObject() { close(UInt8(ascii: "}")) }
  mutating func beginArray() { open(UInt8(ascii: "[")) }
  mutating func endArray() { close(UInt8(ascii: "]")) }

  /// A member name.
  mutating func key(_ name: String) {
    separate()
    JSONValue.appendString(name, to: &bytes)
    bytes.append(UInt8(ascii: ":"))
    needsComma = false
  }

  /// A member name of four lower-case hex digits (a company id).
  mutating func hexKey(_ value: UInt16) {
    separate()
    bytes.append(UInt8(ascii: "\""))
    for shift in stride(from: 12, through: 0, by: -4) {
      bytes.append(Hex.digit(UInt8((value >> UInt16(shift)) & 0x0F)))
    }
    bytes.append(contentsOf: [UInt8(ascii: "\""), UInt8(ascii: ":")])
    needsComma = false
  }

  mutating func string(_ value: String) {
    separate()
    JSONValue.appendString(value, to: &bytes)
    needsComma = true
  }

  /// A string of the lower-case hex digits of `value`.
  mutating func hexString(_ value: [UInt8]) {
    separate()
    bytes.reserveCapacity(bytes.count + value.count * 2 + 2)
    bytes.append(UInt8(ascii: "\""))
    for byte in value {
      bytes.append(Hex.digit(byte >> 4))
      bytes.append(Hex.digit(byte & 0x0F))
    }
    bytes.append(UInt8(ascii: "\""))
    needsComma = true
  }

  mutating func integer(_ value: Int64) {
    separate()
    // (a String of at most 20 ASCII characters is stored inline: no allocation)
    bytes.append(contentsOf: String(value).utf8)
    needsComma = true
  }

  /// Any value, as ``JSONValue/serializedBytes()`` writes it.
  mutating func value(_ value: JSONValue) {
    separate()
    JSONValue.write(value, to: &bytes)
    needsComma = true
  }

  private mutating func open(_ bracket: UInt8) {
    separate()
    bytes.append(bracket)
    needsComma = false
  }

  private mutating func close(_ bracket: UInt8) {
    bytes.append(bracket)
    needsComma = true
  }

  private mutating func separate() {
    if needsComma { bytes.append(UInt8(ascii: ",")) }
  }
}
