import BridgeCore
import Testing

@Suite("TopicSegment")
struct TopicSegmentTests {
  @Test("accepts a single level and refuses separators and wildcards")
  func validatesSingleLevels() throws {
    #expect(try TopicSegment("kitchen").rawValue == "kitchen")
    #expect(throws: TopicError.levelSeparator(offset: 1)) { try TopicSegment("a/b") }
    #expect(throws: TopicError.wildcard(offset: 0)) { try TopicSegment("+") }
    #expect(throws: TopicError.empty) { try TopicSegment("") }
  }

  @Test(
    "sanitises hostile names into one safe level",
    arguments: [
      ("Thermo+Hygro", "Thermo_Hygro"),
      ("a/b/c", "a_b_c"),
      ("#", "_"),
      ("x\u{0}y", "x_y"),
      ("bell\u{7}", "bell_"),
      ("  padded  ", "padded"),
      ("tab\there", "tab here"),
      ("line\nbreak\r\n", "line break"),
      ("many   spaces", "many spaces"),
      ("no\u{A0}break", "no break"),
      ("", "_"),
      ("   ", "_"),
      ("\u{202E}evil", "_evil"),
      ("zero\u{200B}width", "zero_width"),
      ("\u{FEFF}bom", "_bom"),
      ("C1\u{85}", "C1"),
      ("c1\u{9B}x", "c1_x"),
      ("non\u{FFFF}char", "non_char"),
      ("Mi Band 🔋", "Mi Band 🔋"),
      ("👨\u{200D}👩\u{200D}👧", "👨\u{200D}👩\u{200D}👧"),
      ("Küche", "Küche"),
      ("$SYS", "$SYS"),
    ])
  func sanitisesHostileNames(_ raw: String, _ expected: String) throws {
    let sanitised = TopicSegment.sanitize(raw)
    #expect(sanitised == expected)
    #expect(try TopicSegment(sanitised).rawValue == sanitised)
  }

  @Test("sanitises invalid UTF-8 bytes, replacing each bad sequence")
  func sanitisesInvalidUTF8() throws {
    #expect(TopicSegment.sanitize([0x41, 0xFF, 0x42]) == "A_B")
    #expect(TopicSegment.sanitize([0xC3]) == "_")
    #expect(TopicSegment.sanitize([0xED, 0xA0, 0x80, 0x41]).hasSuffix("A"))
    #expect(TopicSegment.sanitize([]) == "_")
    #expect(TopicSegment(sanitizing: [0x2B, 0x80]).rawValue == "__")
    let valid = TopicSegment.sanitize(Array("Küche".utf8))
    #expect(valid == "Küche")
  }

  @Test("caps a 1000-character name at 64 bytes")
  func capsLongNames() throws {
    let sanitised = TopicSegment.sanitize(String(repeating: "x", count: 1000))
    #expect(sanitised == String(repeating: "x", count: 64))
  }

  @Test("never cuts inside a character when capping")
  func capsAtCharacterBoundaries() throws {
    let sanitised = TopicSegment.sanitize(String(repeating: "🔋", count: 100))
    #expect(sanitised == String(repeating: "🔋", count: 16))
    let shifted = TopicSegment.sanitize("a" + String(repeating: "é", count: 100))
    #expect(shifted.utf8.count == 63)
    #expect(shifted == "a" + String(repeating: "é", count: 31))
  }

  @Test("cuts inside an over-long character only between scalars")
  func capsOverlongCharacter() throws {
    let zalgo = "a" + String(repeating: "\u{301}", count: 100)
    let sanitised = TopicSegment.sanitize(zalgo)
    #expect(sanitised.utf8.count == 63)
    #expect(sanitised.unicodeScalars.first == "a")
    #expect(try TopicSegment(sanitised).rawValue == sanitised)
  }

  @Test("drops whitespace left at the end by the cut")
  func trimsAfterCut() {
    let name = String(repeating: "x", count: 63) + " tail"
    #expect(TopicSegment.sanitize(name) == String(repeating: "x", count: 63))
  }

  @Test("the sanitising initializer produces a valid segment")
  func sanitisingInitializer() throws {
    #expect(TopicSegment(sanitizing: "a/b+c").rawValue == "a_b_c")
    #expect(TopicSegment(sanitizing: "a/b") == (try TopicSegment("a_b")))
  }
}
