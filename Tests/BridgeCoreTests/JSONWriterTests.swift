import Testing

@testable import BridgeCore

/// ``JSONWriter`` writes what ``JSONValue/serializedBytes()`` writes for the same values.
@Suite("JSONWriter")
struct JSONWriterTests {
  /// One value alone in an array, as text.
  static func written(_ write: (inout JSONWriter) -> Void) -> String {
    var writer = JSONWriter()
    writer.beginArray()
    write(&writer)
    writer.endArray()
    return String(decoding: writer.bytes, as: UTF8.self)
  }

  @Test(
    "integers as JSONValue writes them",
    arguments: [0, 7, -1, 10, -10, 1_700_000_000_123, Int64.max, Int64.min])
  func integers(value: Int64) {
    #expect(Self.written { $0.integer(value) } == JSONValue.array([.integer(value)]).serialized())
  }

  @Test("an address in its canonical form, as its description")
  func address() throws {
    for text in ["00:00:00:00:00:00", "A4:C1:38:0F:29:DF", "FF:FF:FF:FF:FF:FF"] {
      let address = try BluetoothAddress(text)
      #expect(Self.written { $0.address(address) } == "[\"\(text)\"]")
    }
  }

  @Test(
    "UTF-8 bytes escaped as the same text is",
    arguments: ["plain", "", "é😀", "quote\" back\\slash", "tab\tnul\u{0}", "a\u{2028}b\u{7F}"])
  func utf8(text: String) {
    #expect(
      Self.written { $0.utf8String(Array(text.utf8)) }
        == JSONValue.array([.string(text)]).serialized())
  }

  @Test("written and run-time member names, separated by commas")
  func keys() {
    var writer = JSONWriter()
    writer.beginObject()
    writer.key("a")
    writer.integer(1)
    writer.dynamicKey("b\"c")
    writer.string("d")
    writer.endObject()
    #expect(String(decoding: writer.bytes, as: UTF8.self) == #"{"a":1,"b\"c":"d"}"#)
  }
}
