import BridgeCore
import Testing

@Suite("TopicName")
struct TopicNameTests {
  @Test(
    "accepts ordinary topics",
    arguments: [
      "a", "gatt2mqtt/bridge/pi/state", "home/küche/🌡️", "$SYS/broker/uptime", "a b/c d",
      "x/y/z/0/1/2",
    ])
  func acceptsOrdinaryTopics(_ string: String) throws {
    let topic = try TopicName(string)
    #expect(topic.rawValue == string)
    #expect(topic.description == string)
  }

  @Test("splits into levels")
  func splitsIntoLevels() throws {
    #expect(
      try TopicName("gatt2mqtt/A4C1381E29DF/gatt").levels == ["gatt2mqtt", "A4C1381E29DF", "gatt"])
    #expect(try TopicName("single").levels == ["single"])
  }

  @Test("splits at a slash even when a combining mark follows it")
  func splitsAtSlashBeforeCombiningMark() throws {
    let topic = try TopicName("a/\u{301}b")
    #expect(topic.levels.count == 2)
    #expect(topic.levels[1].unicodeScalars.first == "\u{301}")
  }

  @Test(
    "refuses wildcards anywhere",
    arguments: [
      ("+", 0), ("#", 0), ("a/+", 2), ("a/#", 2), ("a+b", 1), ("a/b#", 3), ("+/a", 0),
      ("ü+", 2),
    ])
  func refusesWildcards(_ string: String, _ offset: Int) {
    #expect(throws: TopicError.wildcard(offset: offset)) { try TopicName(string) }
  }

  @Test("refuses the empty topic")
  func refusesEmpty() {
    #expect(throws: TopicError.empty) { try TopicName("") }
  }

  @Test(
    "refuses empty levels",
    arguments: [("/", 0), ("/a", 0), ("a/", 1), ("a//b", 1), ("a/b/", 2)])
  func refusesEmptyLevels(_ string: String, _ index: Int) {
    #expect(throws: TopicError.emptyLevel(index: index)) { try TopicName(string) }
  }

  @Test("refuses NUL")
  func refusesNUL() {
    #expect(throws: TopicError.forbiddenCharacter("\u{0}", offset: 1)) { try TopicName("a\u{0}b") }
  }

  @Test(
    "refuses control characters and noncharacters that mosquitto refuses",
    arguments: [
      0x01, 0x0A, 0x1F, 0x7F, 0x85, 0x9F, 0xFDD0, 0xFDEF, 0xFFFE, 0xFFFF, 0x1FFFF, 0x10FFFE,
    ]
      as [UInt32])
  func refusesForbiddenScalars(_ value: UInt32) throws {
    let scalar = try #require(Unicode.Scalar(value))
    #expect(throws: TopicError.forbiddenCharacter(scalar, offset: 2)) {
      try TopicName("ab\(Character(scalar))")
    }
  }

  @Test("accepts exactly 65535 bytes and refuses one more")
  func enforcesMaximumLength() throws {
    let longest = String(repeating: "a", count: 65_535)
    #expect(try TopicName(longest).rawValue.utf8.count == 65_535)
    #expect(throws: TopicError.tooLong(byteCount: 65_536, limit: 65_535)) {
      try TopicName(longest + "a")
    }
  }

  @Test("counts the length in UTF-8 bytes, not characters")
  func countsBytes() {
    let emoji = String(repeating: "🔋", count: 16_384)
    #expect(throws: TopicError.tooLong(byteCount: 65_536, limit: 65_535)) {
      try TopicName(emoji)
    }
  }

  @Test("validates bytes and reports invalid UTF-8 with its offset")
  func validatesBytes() throws {
    #expect(try TopicName(validating: Array("a/b".utf8)).rawValue == "a/b")
    #expect(throws: TopicError.invalidUTF8(offset: 2)) {
      try TopicName(validating: [0x61, 0x2F, 0xFF])
    }
    #expect(throws: TopicError.invalidUTF8(offset: 1)) {
      try TopicName(validating: [0x61, 0xC0, 0xAF])
    }
    #expect(throws: TopicError.invalidUTF8(offset: 0)) {
      try TopicName(validating: [0xED, 0xA0, 0x80])
    }
    #expect(throws: TopicError.invalidUTF8(offset: 1)) {
      try TopicName(validating: [0x61, 0xE2, 0x82])
    }
    #expect(throws: TopicError.invalidUTF8(offset: 0)) {
      try TopicName(validating: [0xF4, 0x90, 0x80, 0x80])
    }
    #expect(throws: TopicError.invalidUTF8(offset: 0)) {
      try TopicName(validating: [0xE0, 0x80, 0xAF])
    }
    #expect(throws: TopicError.invalidUTF8(offset: 0)) {
      try TopicName(validating: [0xF0, 0x80, 0x80, 0xAF])
    }
    #expect(throws: TopicError.invalidUTF8(offset: 1)) {
      try TopicName(validating: [0x61, 0xE2, 0x28, 0xA1])
    }
    #expect(throws: TopicError.invalidUTF8(offset: 0)) { try TopicName(validating: [0xF8]) }
    #expect(try TopicName(validating: [0xF0, 0x9F, 0x94, 0x8B]).rawValue == "🔋")
    #expect(try TopicName(validating: [0xED, 0x9F, 0xBF]).rawValue == "\u{D7FF}")
  }

  @Test("compares bytes, so canonically equivalent spellings are different topics")
  func comparesBytes() throws {
    let precomposed = try TopicName("caf\u{E9}")
    let decomposed = try TopicName("cafe\u{301}")
    #expect(precomposed != decomposed)
    #expect(Set([precomposed, decomposed]).count == 2)
    #expect(try TopicName("a") < TopicName("b"))
  }

  @Test("errors carry stable codes and readable descriptions")
  func errorCodes() {
    #expect(TopicError.tooLong(byteCount: 2, limit: 1).code == "too_long")
    #expect(TopicError.wildcard(offset: 3).code == "invalid_topic")
    #expect(TopicError.wildcard(offset: 3).description.contains("byte 3"))
    #expect(TopicError.forbiddenCharacter("\u{0}", offset: 1).description.contains("U+0000"))
    #expect(TopicError.forbiddenCharacter("\u{7F}", offset: 1).description.contains("U+007F"))
  }
}
