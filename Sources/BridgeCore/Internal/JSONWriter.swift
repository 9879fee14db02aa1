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

  /// A member name written in the code: copied as it is (such names need no escape).
  mutating func key(_ name: StaticString) {
    separate()
    bytes.append(UInt8(ascii: "\""))
    name.withUTF8Buffer { bytes.append(contentsOf: $0) }
    bytes.append(contentsOf: [UInt8(ascii: "\""), UInt8(ascii: ":")])
    needsComma = false
  }

  /// A member name made at run time (escaped as needed).
  mutating func dynamicKey(_ name: String) {
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

  /// A string of valid UTF-8 bytes (``UTF8Rules/firstInvalidOffset(_:)`` is nil for them),
  /// escaped as ``JSONValue/appendString(_:to:)`` escapes the same text.
  mutating func utf8String(_ value: [UInt8]) {
    separate()
    if value.allSatisfy(JSONValue.needsNoEscape) {
      bytes.append(UInt8(ascii: "\""))
      bytes.append(contentsOf: value)
      bytes.append(UInt8(ascii: "\""))
    } else {
      JSONValue.appendString(String(decoding: value, as: UTF8.self), to: &bytes)
    }
    needsComma = true
  }

  /// A Bluetooth address in its canonical form (``BluetoothAddress/description``).
  mutating func address(_ address: BluetoothAddress) {
    separate()
    bytes.append(UInt8(ascii: "\""))
    address.appendCanonical(to: &bytes)
    bytes.append(UInt8(ascii: "\""))
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
    if value < 0 { bytes.append(UInt8(ascii: "-")) }
    // The digits, least significant first, then turned around in place.
    var rest = value.magnitude
    let start = bytes.count
    repeat {
      bytes.append(UInt8(ascii: "0") + UInt8(rest % 10))
      rest /= 10
    } while rest > 0
    bytes[start...].reverse()
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
