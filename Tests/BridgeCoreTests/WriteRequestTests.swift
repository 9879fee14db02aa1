import BridgeCore
import Testing

@Suite("WriteRequest")
struct WriteRequestTests {
  private func parse(_ payload: String, _ format: ValueFormat = .hex) throws -> WriteRequest {
    try WriteRequest(parsing: Array(payload.utf8), format: format)
  }

  @Test("a bare payload is decoded in the characteristic's format")
  func bareValues() throws {
    #expect(try parse("0a1b") == WriteRequest(value: [0x0A, 0x1B]))
    #expect(try parse("Chs=", .base64).value == [0x0A, 0x1B])
    #expect(try parse("hello", .utf8).value == Array("hello".utf8))
    #expect(try parse("", .hex).value == [])
    #expect(try WriteRequest(parsing: [0xFF, 0x00], format: .raw).value == [0xFF, 0x00])
    #expect(try parse("0a").withResponse == nil)
    #expect(try parse("0a").transaction == nil)
  }

  @Test("the JSON form overrides the format and carries options")
  func jsonForm() throws {
    #expect(try parse(#"{"hex":"0a1b"}"#, .utf8) == WriteRequest(value: [0x0A, 0x1B]))
    #expect(try parse(#"{"base64":"Chs="}"#).value == [0x0A, 0x1B])
    #expect(try parse(#"{"utf8":"{x}"}"#, .raw).value == Array("{x}".utf8))
    #expect(
      try parse(#" {"hex":"01","response":false,"transaction":"abc"}"#)
        == WriteRequest(value: [1], withResponse: false, transaction: "abc"))
    #expect(try parse(#"{"hex":"01","response":true}"#).withResponse == true)
    #expect(try parse(#"{"hex":"01","transaction":42}"#).transaction == .integer(42))
    #expect(try parse(#"{"hex":"01","transaction":1.5}"#).transaction == .number(1.5))
    #expect(try parse(#"{"hex":"01","transaction":null}"#).transaction == .null)
    #expect(try parse(#"{"hex":"01","transaction":true}"#).transaction == .bool(true))
  }

  @Test("a value published in the json format can be written back")
  func jsonFormatRoundTrip() throws {
    let payload = try ValueFormat.json.encode([7, 8], timestamp: 1, gateway: GatewayID("pi"))
    #expect(try WriteRequest(parsing: payload, format: .json).value == [7, 8])
    #expect(try WriteRequest(parsing: payload, format: .hex).value == [7, 8])
  }

  @Test(
    "refuses malformed requests with typed errors",
    arguments: [
      ("0g", ValueFormat.hex, PayloadError.invalidHexDigit(offset: 1)),
      (#"{"hex":"01""#, .hex, .invalidJSON(.unexpectedEnd)),
      (#"{hex:"01"}"#, .utf8, .invalidJSON(.unexpectedByte(0x68, offset: 1))),
      (#"{"hex":"01",}"#, .hex, .invalidJSON(.unexpectedByte(0x7D, offset: 12))),
      (#"{"hex":"01","hex":"02"}"#, .hex, .invalidJSON(.duplicateKey("hex", offset: 12))),
      (#"{}"#, .hex, .missingValue),
      (#"{"response":true}"#, .hex, .missingValue),
      (#"{"hex":"01","utf8":"a"}"#, .hex, .multipleValues(keys: ["hex", "utf8"])),
      (
        #"{"hex":"01","base64":"AQ==","utf8":"a"}"#, .hex,
        .multipleValues(keys: ["hex", "base64", "utf8"])
      ),
      (#"{"hex":1}"#, .hex, .wrongType(key: "hex", expected: "a string", found: "number")),
      (
        #"{"hex":"01","response":"yes"}"#, .hex,
        .wrongType(key: "response", expected: "a boolean", found: "string")
      ),
      (
        #"{"hex":"01","transaction":[1]}"#, .hex,
        .wrongType(
          key: "transaction", expected: "a string, number, boolean or null", found: "array")
      ),
      (
        #"{"hex":"01","transaction":{}}"#, .hex,
        .wrongType(
          key: "transaction", expected: "a string, number, boolean or null", found: "object")
      ),
      (#"{"hex":"01","respone":true}"#, .hex, .unknownKey("respone")),
      (#"{"hex":"0"}"#, .hex, .invalidField(key: "hex", .oddHexDigitCount(1))),
      (#"{"base64":"A"}"#, .hex, .invalidField(key: "base64", .invalidBase64Length(1))),
    ])
  func refusesMalformed(_ payload: String, _ format: ValueFormat, _ error: PayloadError) {
    #expect(throws: error) { try WriteRequest(parsing: Array(payload.utf8), format: format) }
  }

  @Test("a bare utf8 value that is not UTF-8 is refused")
  func bareInvalidUTF8() {
    #expect(throws: PayloadError.invalidUTF8(offset: 0)) {
      try WriteRequest(parsing: [0xFE], format: .utf8)
    }
  }
}

@Suite("ReadRequest")
struct ReadRequestTests {
  @Test("an empty payload or a transaction asks for a read")
  func parses() throws {
    #expect(try ReadRequest(parsing: []) == ReadRequest())
    #expect(try ReadRequest(parsing: Array(" \n".utf8)).transaction == nil)
    #expect(try ReadRequest(parsing: Array("{}".utf8)).transaction == nil)
    #expect(
      try ReadRequest(parsing: Array(#"{"transaction":"t1"}"#.utf8)).transaction == "t1")
  }

  @Test("anything else is refused")
  func refuses() {
    #expect(throws: PayloadError.unknownKey("hex")) {
      try ReadRequest(parsing: Array(#"{"hex":"01"}"#.utf8))
    }
    #expect(throws: PayloadError.invalidJSON(.unexpectedByte(0x78, offset: 0))) {
      try ReadRequest(parsing: Array("x".utf8))
    }
    #expect(throws: PayloadError.notAnObject(found: "number")) {
      try ReadRequest(parsing: Array("1".utf8))
    }
  }
}

@Suite("NotifyRequest")
struct NotifyRequestTests {
  @Test(
    "on and off in any case; empty means off",
    arguments: [
      ("on", true), ("ON", true), (" On\n", true), ("off", false), ("OFF", false),
      ("", false),
    ])
  func parses(_ payload: String, _ enabled: Bool) throws {
    #expect(try NotifyRequest(parsing: Array(payload.utf8)) == NotifyRequest(enabled: enabled))
  }

  @Test("anything else is refused", arguments: ["true", "1", "o n", #"{"state":"on"}"#, "onn"])
  func refuses(_ payload: String) {
    #expect(throws: PayloadError.unsupportedValue(key: nil, allowed: ["on", "off"])) {
      try NotifyRequest(parsing: Array(payload.utf8))
    }
  }
}

@Suite("ConnectionRequest")
struct ConnectionRequestTests {
  @Test("parses both states with an optional transaction")
  func parses() throws {
    #expect(
      try ConnectionRequest(parsing: Array(#"{"state":"connected"}"#.utf8))
        == ConnectionRequest(state: .connected))
    #expect(
      try ConnectionRequest(parsing: Array(#"{"state":"disconnected","transaction":7}"#.utf8))
        == ConnectionRequest(state: .disconnected, transaction: 7))
  }

  @Test(
    "refuses malformed requests",
    arguments: [
      (#"{}"#, PayloadError.missingKey("state")),
      (#"{"state":1}"#, .wrongType(key: "state", expected: "a string", found: "number")),
      (
        #"{"state":"on"}"#, .unsupportedValue(key: "state", allowed: ["connected", "disconnected"])
      ),
      (#"{"state":"connected","force":true}"#, .unknownKey("force")),
      ("connected", .invalidJSON(.unexpectedByte(0x63, offset: 0))),
      ("", .invalidJSON(.unexpectedEnd)),
    ])
  func refuses(_ payload: String, _ error: PayloadError) {
    #expect(throws: error) { try ConnectionRequest(parsing: Array(payload.utf8)) }
  }
}
