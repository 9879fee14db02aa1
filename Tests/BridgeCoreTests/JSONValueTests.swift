import BridgeCore
import Testing

@Suite("JSONValue")
struct JSONValueTests {
  @Test("serialises compactly with members in insertion order")
  func serialisesObjects() {
    let value: JSONValue = [
      "state": "online", "b": 1, "a": [true, false, nil], "nested": ["x": -2.5],
    ]
    #expect(
      value.serialized() == #"{"state":"online","b":1,"a":[true,false,null],"nested":{"x":-2.5}}"#)
    #expect(JSONValue.object([:]).serialized() == "{}")
    #expect(JSONValue.array([]).serialized() == "[]")
  }

  @Test(
    "serialises numbers without trailing .0 for whole numbers",
    arguments: [
      (JSONValue.integer(0), "0"), (.integer(-71), "-71"),
      (.integer(Int64.max), "9223372036854775807"), (.number(3.0), "3"), (.number(-0.0), "0"),
      (.number(-63.2), "-63.2"), (.number(0.1), "0.1"), (.number(1e300), "1e+300"),
      (.number(1.5e-7), "1.5e-07"), (.number(.infinity), "null"), (.number(.nan), "null"),
      (.number(9_007_199_254_740_992), "9007199254740992"), (.number(-1e16), "-1e+16"),
      (.number(9_007_199_254_740_991), "9007199254740991"),
    ])
  func serialisesNumbers(_ value: JSONValue, _ expected: String) throws {
    #expect(value.serialized() == expected)
    if case .number(let number) = value, number.isFinite {
      #expect(try JSONValue.parse(expected).doubleValue == number)
    }
  }

  @Test("escapes quotes, backslashes, control characters and line separators")
  func escapesStrings() {
    let value = JSONValue.string(
      "q\"b\\s/n\nr\rt\tb\u{8}f\u{C}z\u{0}u\u{1F}d\u{7F}l\u{2028}p\u{2029}é🔋")
    #expect(
      value.serialized()
        == #""q\"b\\s/n\nr\rt\tb\bf\fz\u0000u\u001fd\u007fl\u2028p\u2029é🔋""#)
  }

  @Test("every escaped string parses back to itself")
  func escapeRoundTrip() throws {
    var scalars = String.UnicodeScalarView()
    for value in 0...0x2FF { scalars.append(Unicode.Scalar(UInt32(value))!) }
    scalars.append(contentsOf: "\u{2028}\u{2029}\u{FFFF}\u{10FFFF}🔋".unicodeScalars)
    let value = JSONValue.string(String(scalars))
    #expect(try JSONValue.parse(value.serializedBytes()) == value)
    let keyed: JSONValue = [String(scalars): "v"]
    #expect(try JSONValue.parse(keyed.serialized()) == keyed)
  }

  @Test("parses every kind of value")
  func parses() throws {
    let parsed = try JSONValue.parse(
      #" {"a":[1,-2,3.5,1e2,true,false,null,"s"],"b":{"c":"\u00e9\ud83d\udd0b\n\/"},"d":-0} "#)
    let expected: JSONValue = [
      "a": [1, -2, 3.5, .number(100), true, false, nil, "s"], "b": ["c": "é🔋\n/"], "d": 0,
    ]
    #expect(parsed == expected)
    #expect(parsed["a"]?.arrayValue?.count == 8)
    #expect(parsed["b"]?["c"]?.stringValue == "é🔋\n/")
    #expect(try JSONValue.parse("42") == .integer(42))
    #expect(try JSONValue.parse("\"x\"") == "x")
    #expect(try JSONValue.parse("9223372036854775808") == .number(9_223_372_036_854_775_808))
  }

  @Test("keeps the member order of parsed objects")
  func keepsOrder() throws {
    let parsed = try JSONValue.parse(#"{"z":1,"a":2,"m":3}"#)
    #expect(parsed.objectValue?.keys == ["z", "a", "m"])
    #expect(parsed.serialized() == #"{"z":1,"a":2,"m":3}"#)
  }

  @Test(
    "refuses malformed JSON with the first problem and its position",
    arguments: [
      ("", JSONValue.Error.unexpectedEnd),
      ("   ", .unexpectedEnd),
      ("{", .unexpectedEnd),
      ("[1,2", .unexpectedEnd),
      (#""abc"#, .unexpectedEnd),
      ("{}x", .unexpectedByte(0x78, offset: 2)),
      ("[1,]", .unexpectedByte(0x5D, offset: 3)),
      (#"{"a":1,}"#, .unexpectedByte(0x7D, offset: 7)),
      (#"{"a" 1}"#, .unexpectedByte(0x31, offset: 5)),
      (#"{'a':1}"#, .unexpectedByte(0x27, offset: 1)),
      ("[1 2]", .unexpectedByte(0x32, offset: 3)),
      ("tru", .unexpectedEnd),
      ("trux", .unexpectedByte(0x78, offset: 3)),
      ("nul", .unexpectedEnd),
      ("// c\n1", .unexpectedByte(0x2F, offset: 0)),
      ("01", .unexpectedByte(0x31, offset: 1)),
      ("-", .unexpectedEnd),
      ("-a", .invalidNumber(offset: 0)),
      ("1.", .invalidNumber(offset: 0)),
      ("1.e3", .invalidNumber(offset: 0)),
      ("1e", .invalidNumber(offset: 0)),
      ("[1e+]", .invalidNumber(offset: 1)),
      (".5", .unexpectedByte(0x2E, offset: 0)),
      ("+1", .unexpectedByte(0x2B, offset: 0)),
      ("1e400", .invalidNumber(offset: 0)),
      ("NaN", .unexpectedByte(0x4E, offset: 0)),
      (#""\x""#, .invalidEscape(offset: 1)),
      (#""\u12G4""#, .invalidEscape(offset: 1)),
      (#""\u12""#, .invalidEscape(offset: 1)),
      (#""\ud83d""#, .unpairedSurrogate(offset: 1)),
      (#""\ud83dx""#, .unpairedSurrogate(offset: 1)),
      (#""\ud83d\u0041""#, .unpairedSurrogate(offset: 1)),
      (#""\udd0b""#, .unpairedSurrogate(offset: 1)),
      ("\"a\u{0}\"", .controlCharacterInString(offset: 2)),
      ("\"a\nb\"", .controlCharacterInString(offset: 2)),
      (#"{"k":1,"k":2}"#, .duplicateKey("k", offset: 7)),
      ("\u{FEFF}{}", .unexpectedByte(0xEF, offset: 0)),
    ])
  func refusesMalformed(_ text: String, _ error: JSONValue.Error) {
    #expect(throws: error) { try JSONValue.parse(text) }
  }

  @Test("refuses invalid UTF-8 with its offset")
  func refusesInvalidUTF8() {
    #expect(throws: JSONValue.Error.invalidUTF8(offset: 2)) {
      try JSONValue.parse([0x22, 0x61, 0xC0, 0x80, 0x22])
    }
  }

  @Test("limits nesting depth")
  func limitsDepth() throws {
    let deepest = String(repeating: "[", count: 64) + String(repeating: "]", count: 64)
    #expect(try JSONValue.parse(deepest).arrayValue != nil)
    let tooDeep = String(repeating: "[", count: 65) + String(repeating: "]", count: 65)
    #expect(throws: JSONValue.Error.tooDeep(offset: 64)) { try JSONValue.parse(tooDeep) }
    let hostile = String(repeating: "{\"a\":", count: 100_000)
    #expect(throws: JSONValue.Error.tooDeep(offset: 320)) { try JSONValue.parse(hostile) }
  }

  @Test("accessors return values of their type only")
  func accessors() {
    let value: JSONValue = ["s": "x", "i": 3, "d": 2.5, "w": 4.0, "b": true, "n": nil]
    #expect(value["s"]?.stringValue == "x")
    #expect(value["i"]?.integerValue == 3)
    #expect(value["w"]?.integerValue == 4)
    #expect(value["d"]?.integerValue == nil)
    #expect(value["d"]?.doubleValue == 2.5)
    #expect(value["i"]?.doubleValue == 3)
    #expect(value["b"]?.boolValue == true)
    #expect(value["s"]?.boolValue == nil)
    #expect(value["n"] == .null)
    #expect(value["missing"] == nil)
    #expect(JSONValue.string("x")["s"] == nil)
    #expect(value["n"]?.isScalar == true)
    #expect(value.isScalar == false)
    #expect(value.typeName == "object")
  }

  @Test("errors describe the problem for people")
  func errorDescriptions() {
    #expect(
      JSONValue.Error.unexpectedByte(0x7D, offset: 7).description
        == "invalid JSON: unexpected '}' at byte 7")
    #expect(
      JSONValue.Error.unexpectedByte(0x0A, offset: 0).description
        == "invalid JSON: unexpected byte 0x0a at byte 0")
    #expect(JSONValue.Error.unexpectedEnd.code == "invalid_payload")
  }
}

@Suite("JSONObject")
struct JSONObjectTests {
  @Test("setting replaces in place, appends new keys and removes with nil")
  func mutation() {
    var object: JSONObject = ["a": 1, "b": 2]
    object["a"] = 3
    object["c"] = 4
    #expect(object.keys == ["a", "b", "c"])
    #expect(object["a"] == 3)
    object["b"] = nil
    #expect(object.keys == ["a", "c"])
    #expect(object.count == 2)
    #expect(object.map(\.key) == ["a", "c"])
    #expect(JSONValue.object(object).serialized() == #"{"a":3,"c":4}"#)
    #expect(JSONObject().isEmpty)
  }

  @Test("equality depends on member order")
  func orderedEquality() {
    let ab: JSONObject = ["a": 1, "b": 2]
    let ba: JSONObject = ["b": 2, "a": 1]
    #expect(ab != ba)
    #expect(ab == JSONObject([("a", 1), ("b", 2)]))
  }

  @Test("a repeated literal key keeps the first position and the last value")
  func repeatedLiteralKey() {
    let object = JSONObject([("a", 1), ("b", 2), ("a", 3)])
    #expect(object.keys == ["a", "b"])
    #expect(object["a"] == 3)
  }
}
