import BusTestSupport
import DBus
import Testing

@Suite("D-Bus names, signatures and value validation")
struct DBusValueValidationTests {
  @Test("valid signatures are accepted and split into complete types")
  func validSignatures() throws {
    #expect(try signature("").completeTypes.isEmpty)
    #expect(try signature("sa{sv}as").completeTypes.map(\.rawValue) == ["s", "a{sv}", "as"])
    #expect(try signature("(i(yv)a(ss))h").completeTypes.count == 2)
    #expect(try signature("a{oa{sa{sv}}}").isSingleCompleteType)
  }

  @Test(
    "invalid signatures are refused",
    arguments: ["a", "{sv}", "a{vs}", "a{s}", "a{svv}", "()", "(i", "i)", "z", "aa{sv", "a{(i)s}"])
  func invalidSignatures(text: String) {
    #expect(throws: DBusError.self) { try DBusSignature(text) }
  }

  @Test("signatures nesting more than 32 arrays are refused")
  func deepSignature() {
    #expect(throws: DBusError.self) { try DBusSignature(String(repeating: "a", count: 33) + "y") }
    #expect((try? DBusSignature(String(repeating: "a", count: 32) + "y")) != nil)
  }

  @Test("object paths follow the D-Bus grammar")
  func objectPaths() throws {
    #expect(try path("/").rawValue == "/")
    #expect(try path("/org/bluez/hci0/dev_AA_BB").rawValue == "/org/bluez/hci0/dev_AA_BB")
    for bad in ["", "org", "/org/", "//", "/a//b", "/a-b", "/ä"] {
      #expect(throws: DBusError.self, "\(bad)") { try DBusObjectPath(bad) }
    }
    #expect(try path("/a/b").isDescendant(of: "/a"))
    #expect(try path("/a/b").isDescendant(of: .root))
    #expect(try !path("/ab").isDescendant(of: "/a"))
    #expect(try DBusObjectPath("/").appending("x").rawValue == "/x")
  }

  @Test("values compute their signatures")
  func valueSignatures() {
    let value = DBusValue.structure([
      .int32(1), .properties(["a": .bool(true)]), .array("(yv)", []), .variant(.double(1)),
    ])
    #expect(value.signature.rawValue == "(ia{sv}a(yv)v)")
    #expect(DBusValue.bytes([1, 2]).signature.rawValue == "ay")
  }

  @Test(
    "bytesValue: the bytes of an ay (through variants); nil for other arrays and for a non-byte element"
  )
  func bytesValue() {
    #expect(DBusValue.bytes([1, 2]).bytesValue == [1, 2])
    #expect(DBusValue.variant(.bytes([])).bytesValue == [])
    #expect(DBusValue.array("q", [.uint16(1)]).bytesValue == nil)
    #expect(DBusValue.array("y", [.byte(1), .string("x")]).bytesValue == nil)
  }

  @Test("inconsistent values are refused before sending")
  func invalidValues() {
    let bad: [DBusValue] = [
      .array("s", [.int32(1)]),
      .dictionary(key: "v", value: "s", []),
      .dictionary(key: "s", value: "v", [(.string("a"), .string("not a variant"))]),
      .structure([]),
      .string("nul\0inside"),
      .variant(.array("i", [.string("x")])),
      .array("ss", []),
    ]
    for value in bad {
      #expect(throws: DBusError.self, "\(value)") { try value.validate() }
    }
    #expect((try? DBusValue.properties(["x": .strings(["a"])]).validate()) != nil)
  }

  @Test("error names map to stable codes")
  func errorCodes() {
    #expect(DBusError(name: "org.freedesktop.DBus.Error.NoReply", message: "").code == .noReply)
    #expect(
      DBusError(name: "org.freedesktop.DBus.Error.ServiceUnknown", message: "").code
        == .serviceUnknown)
    #expect(DBusError(name: "org.bluez.Error.InProgress", message: "x").code == .remote)
    #expect(DBusError(.unknownMethod, "x").name == "org.freedesktop.DBus.Error.UnknownMethod")
  }

  @Test("match rules render in bus syntax with quotes escaped")
  func matchRuleText() {
    let rule = DBusMatchRule(
      sender: "org.bluez", interface: "org.freedesktop.DBus.Properties",
      member: "PropertiesChanged", pathNamespace: "/org/bluez", arguments: [0: "it's"])
    #expect(
      rule.description
        == "type='signal',sender='org.bluez',interface='org.freedesktop.DBus.Properties',"
        + "member='PropertiesChanged',path_namespace='/org/bluez',arg0='it'\\''s'")
  }

  /// The throwing parsers with a `String`: a literal argument would pick the literal
  /// initialiser (checked by a precondition) instead of the parser under test.
  func signature(_ text: String) throws -> DBusSignature { try DBusSignature(text) }

  func path(_ text: String) throws -> DBusObjectPath { try DBusObjectPath(text) }
}
