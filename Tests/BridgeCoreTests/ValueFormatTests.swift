import BridgeCore
import Testing

@Suite("ValueFormat")
struct ValueFormatTests {
  static let allBytes: [UInt8] = Array(0...255)
  let gateway = GatewayID("pi")

  private func encode(_ format: ValueFormat, _ bytes: [UInt8]) throws -> [UInt8] {
    try format.encode(bytes, timestamp: 1_700_000_000_123, gateway: gateway)
  }

  private func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

  @Test("lists the formats of the contract")
  func formats() {
    #expect(
      ValueFormat.allCases.map(\.rawValue) == ["hex", "base64", "utf8", "raw", "json", "decoded"])
  }

  @Test(
    "round-trips the empty value and all 256 byte values",
    arguments: [ValueFormat.hex, .base64, .raw, .json, .decoded])
  func roundTrips(_ format: ValueFormat) throws {
    for value in [[], [0], [0xFF], Self.allBytes, [1, 2], [1, 2, 3], [1, 2, 3, 4]] as [[UInt8]] {
      #expect(try format.decode(encode(format, value)) == value, "\(value.count) bytes")
    }
  }

  @Test("round-trips UTF-8 text, including NUL and emoji")
  func utf8RoundTrip() throws {
    for value in ["", "hello", "a\u{0}b", "Küche 🔋", String(repeating: "x", count: 600)] {
      let bytes = Array(value.utf8)
      #expect(try encode(.utf8, bytes) == bytes)
      #expect(try ValueFormat.utf8.decode(bytes) == bytes)
    }
  }

  @Test("encodes hex in lower case and base64 padded")
  func encodings() throws {
    #expect(text(try encode(.hex, [0x0A, 0x1B, 0xFF])) == "0a1bff")
    #expect(text(try encode(.hex, [])) == "")
    #expect(text(try encode(.hex, Self.allBytes)).hasPrefix("000102030405060708090a0b"))
    #expect(text(try encode(.base64, [0x0A, 0x1B])) == "Chs=")
    #expect(text(try encode(.base64, Array("foobar".utf8))) == "Zm9vYmFy")
    #expect(text(try encode(.base64, Array("fooba".utf8))) == "Zm9vYmE=")
    #expect(text(try encode(.base64, Array("foob".utf8))) == "Zm9vYg==")
    #expect(text(try encode(.base64, [])) == "")
    #expect(try encode(.raw, [0xFF, 0x00]) == [0xFF, 0x00])
  }

  @Test("encodes json with hex, timestamp and gateway")
  func jsonEncoding() throws {
    #expect(
      text(try encode(.json, [0x0A, 0x1B])) == #"{"hex":"0a1b","ts":1700000000123,"gw":"pi"}"#)
    #expect(text(try encode(.json, [])) == #"{"hex":"","ts":1700000000123,"gw":"pi"}"#)
  }

  @Test("encodes decoded as typed members of a known characteristic, then json's members")
  func decodedEncoding() throws {
    let battery = BluetoothUUID(uuid16: 0x2A19)
    let payload = try ValueFormat.decoded.encode(
      [0x57], characteristic: battery, timestamp: 1_700_000_000_123, gateway: gateway)
    #expect(text(payload) == #"{"battery_level":87,"hex":"57","ts":1700000000123,"gw":"pi"}"#)
    // A published decoded value is still a valid json payload for its hex.
    #expect(throws: PayloadError.unknownKey("battery_level")) {
      try ValueFormat.decoded.decode(payload)
    }
    #expect(
      try ValueFormat.decoded.decode(Array(#"{"hex":"57","ts":1,"gw":"pi"}"#.utf8)) == [0x57])
  }

  @Test(
    "decoded falls back to json for unknown characteristics, malformed values or no characteristic",
    arguments: [
      ([0x57], "6e400001-b5a3-f393-e0a9-e50e24dcca9e"), ([0x57], "2a1c"), ([], "2a19"),
      ([0x57, 0x00], "2a19"), ([0xFF], "2a00"), ([0x01, 0x48], "2a37"), ([0x57], nil),
    ] as [([UInt8], String?)])
  func decodedFallsBack(_ bytes: [UInt8], _ uuid: String?) throws {
    let characteristic = try uuid.map { try BluetoothUUID($0) }
    let decoded = try ValueFormat.decoded.encode(
      bytes, characteristic: characteristic, timestamp: 1_700_000_000_123, gateway: gateway)
    #expect(decoded == (try encode(.json, bytes)))
    #expect(
      try ValueFormat.json.encode(
        bytes, characteristic: characteristic, timestamp: 1_700_000_000_123, gateway: gateway)
        == decoded)
  }

  @Test("formats other than decoded ignore the characteristic")
  func characteristicIgnored() throws {
    let battery = BluetoothUUID(uuid16: 0x2A19)
    for format in ValueFormat.allCases where format != .decoded {
      #expect(
        try format.encode(
          [0x57], characteristic: battery, timestamp: 1_700_000_000_123, gateway: gateway)
          == (try encode(format, [0x57])))
    }
  }

  @Test("refuses to encode bytes that are not UTF-8 as utf8")
  func utf8EncodingRefusesInvalid() {
    #expect(throws: PayloadError.notEncodable(format: "utf8", .invalidUTF8(offset: 1))) {
      try encode(.utf8, [0x41, 0xFF])
    }
    #expect(throws: PayloadError.notEncodable(format: "utf8", .invalidUTF8(offset: 0))) {
      try encode(.utf8, [0xED, 0xA0, 0x80])
    }
  }

  @Test(
    "decodes hex leniently: either case, 0x, separators between bytes, surrounding whitespace",
    arguments: [
      "0a1bff", "0A1BFF", "0x0a1bff", "0X0A1BFF", "0a 1b ff", "0a:1b:ff", "0a-1b-ff",
      " 0a1bff\n", "\t0a:1B ff\r\n",
    ])
  func decodesHex(_ payload: String) throws {
    #expect(try ValueFormat.hex.decode(Array(payload.utf8)) == [0x0A, 0x1B, 0xFF])
  }

  @Test("decodes an empty or blank hex payload as no bytes")
  func decodesEmptyHex() throws {
    #expect(try ValueFormat.hex.decode([]) == [])
    #expect(try ValueFormat.hex.decode(Array("  \n".utf8)) == [])
  }

  @Test(
    "refuses malformed hex with the offending position",
    arguments: [
      ("0g", PayloadError.invalidHexDigit(offset: 1)),
      ("abc", .oddHexDigitCount(3)),
      ("0", .oddHexDigitCount(1)),
      ("0x", .invalidHexDigit(offset: 1)),
      ("0x0", .oddHexDigitCount(1)),
      (" zz", .invalidHexDigit(offset: 1)),
      ("0a  1b", .misplacedHexSeparator(offset: 3)),
      ("0a::1b", .misplacedHexSeparator(offset: 3)),
      ("0 a1b", .misplacedHexSeparator(offset: 1)),
      (":0a", .misplacedHexSeparator(offset: 0)),
      ("0a:", .misplacedHexSeparator(offset: 2)),
      ("0a\t1b", .invalidHexDigit(offset: 2)),
      ("0a,1b", .invalidHexDigit(offset: 2)),
      ("é0", .invalidHexDigit(offset: 0)),
    ])
  func refusesMalformedHex(_ payload: String, _ error: PayloadError) {
    #expect(throws: error) { try ValueFormat.hex.decode(Array(payload.utf8)) }
  }

  @Test("decodes base64 and tolerates only surrounding whitespace")
  func decodesBase64() throws {
    #expect(try ValueFormat.base64.decode(Array("Chs=".utf8)) == [0x0A, 0x1B])
    #expect(try ValueFormat.base64.decode(Array("Zm9vYmFy\n".utf8)) == Array("foobar".utf8))
    #expect(try ValueFormat.base64.decode(Array("+/+/".utf8)) == [0xFB, 0xFF, 0xBF])
    #expect(try ValueFormat.base64.decode([]) == [])
  }

  @Test(
    "refuses malformed base64 with the offending position",
    arguments: [
      ("Chs", PayloadError.invalidBase64Length(3)),
      ("Chs=C", .invalidBase64Length(5)),
      ("Ch s", .invalidBase64Character(offset: 2)),
      ("Zm9v\nYmFy", .invalidBase64Length(9)),
      ("Zm9v YmE=", .invalidBase64Length(9)),
      ("-_==", .invalidBase64Character(offset: 0)),
      ("Ch=s", .invalidBase64Padding(offset: 2)),
      ("C===", .invalidBase64Character(offset: 1)),
      ("Ch==Chs=", .invalidBase64Character(offset: 2)),
      ("Cht=", .invalidBase64Padding(offset: 2)),
      ("Ci==", .invalidBase64Padding(offset: 1)),
      ("====", .invalidBase64Character(offset: 0)),
    ])
  func refusesMalformedBase64(_ payload: String, _ error: PayloadError) {
    #expect(throws: error) { try ValueFormat.base64.decode(Array(payload.utf8)) }
  }

  @Test("refuses invalid UTF-8 for the utf8 format")
  func refusesInvalidUTF8() {
    #expect(throws: PayloadError.invalidUTF8(offset: 2)) {
      try ValueFormat.utf8.decode([0x61, 0x62, 0xC3])
    }
    #expect(throws: PayloadError.invalidUTF8(offset: 0)) { try ValueFormat.utf8.decode([0x80]) }
  }

  @Test("raw passes anything through")
  func rawIdentity() throws {
    #expect(try ValueFormat.raw.decode(Self.allBytes) == Self.allBytes)
    #expect(try ValueFormat.raw.decode(Array(" {x".utf8)) == Array(" {x".utf8))
  }

  @Test(
    "decodes every json value key",
    arguments: [
      (#"{"hex":"0a1b"}"#, [0x0A, 0x1B]), (#"{"base64":"Chs="}"#, [0x0A, 0x1B]),
      (#"{"utf8":"hi"}"#, [0x68, 0x69]), (#"{"utf8":"\u00e9"}"#, [0xC3, 0xA9]),
      (#"{"hex":""}"#, []), (#" {"hex":"0a1b","ts":5,"gw":"pi"} "#, [0x0A, 0x1B]),
    ] as [(String, [UInt8])])
  func decodesJSON(_ payload: String, _ expected: [UInt8]) throws {
    #expect(try ValueFormat.json.decode(Array(payload.utf8)) == expected)
    #expect(try ValueFormat.decoded.decode(Array(payload.utf8)) == expected)
  }

  @Test(
    "refuses malformed json values with typed errors",
    arguments: [
      (#"{"hex":"0a""#, PayloadError.invalidJSON(.unexpectedEnd)),
      (#"["0a"]"#, .notAnObject(found: "array")),
      (#""0a""#, .notAnObject(found: "string")),
      (#"{}"#, .missingValue),
      (#"{"ts":1}"#, .missingValue),
      (#"{"hex":"0a","base64":"Cg=="}"#, .multipleValues(keys: ["hex", "base64"])),
      (#"{"hex":10}"#, .wrongType(key: "hex", expected: "a string", found: "number")),
      (#"{"utf8":null}"#, .wrongType(key: "utf8", expected: "a string", found: "null")),
      (#"{"hex":"0g"}"#, .invalidField(key: "hex", .invalidHexDigit(offset: 1))),
      (#"{"base64":"Chs"}"#, .invalidField(key: "base64", .invalidBase64Length(3))),
      (#"{"hex":"0a","response":true}"#, .unknownKey("response")),
      (#"{"hex":"0a","extra":1}"#, .unknownKey("extra")),
    ])
  func refusesMalformedJSON(_ payload: String, _ error: PayloadError) {
    #expect(throws: error) { try ValueFormat.json.decode(Array(payload.utf8)) }
    if payload.hasPrefix("{") {
      #expect(throws: error) { try ValueFormat.decoded.decode(Array(payload.utf8)) }
    } else {
      // Not an object: decoded reads it as bare hex, which these are not.
      #expect(throws: PayloadError.self) { try ValueFormat.decoded.decode(Array(payload.utf8)) }
    }
    #expect(error.code == "invalid_payload")
  }

  @Test("decoded takes a bare value as hex")
  func decodedBareHex() throws {
    #expect(try ValueFormat.decoded.decode(Array("0a1b".utf8)) == [0x0A, 0x1B])
    #expect(try ValueFormat.decoded.decode(Array(#"{"hex":"0a"}"#.utf8)) == [0x0A])
  }

  @Test("json refuses invalid UTF-8 bytes before parsing")
  func jsonRefusesInvalidUTF8() {
    #expect(throws: PayloadError.invalidJSON(.invalidUTF8(offset: 9))) {
      try ValueFormat.json.decode(Array(#"{"utf8":""#.utf8) + [0xFF] + Array(#""}"#.utf8))
    }
  }

  @Test("errors describe the problem for people")
  func descriptions() {
    #expect(PayloadError.invalidHexDigit(offset: 4).description == "not a hex digit at byte 4")
    #expect(
      PayloadError.invalidField(key: "hex", .oddHexDigitCount(3)).description
        == #""hex": odd number of hex digits (3)"#)
    #expect(
      PayloadError.multipleValues(keys: ["hex", "utf8"]).description
        == #"only one value key is allowed, found "hex", "utf8""#)
  }
}
