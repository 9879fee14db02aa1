import BridgeCore
import Testing

@Suite("TopicFilter")
struct TopicFilterTests {
  @Test(
    "accepts wildcards as whole levels",
    arguments: ["#", "+", "a/+", "a/#", "+/+/+", "a/+/b/#", "+/#", "a/b"])
  func acceptsWholeLevelWildcards(_ string: String) throws {
    #expect(try TopicFilter(string).rawValue == string)
  }

  @Test(
    "refuses wildcards sharing a level or '#' before the end",
    arguments: [("a+", 1), ("+a", 0), ("a/b#", 3), ("#/a", 0), ("a/#/b", 2), ("++", 0), ("#+", 0)])
  func refusesMisplacedWildcards(_ string: String, _ offset: Int) {
    #expect(throws: TopicError.misplacedWildcard(offset: offset)) { try TopicFilter(string) }
  }

  @Test("refuses empty filters, empty levels and NUL")
  func refusesMalformedFilters() {
    #expect(throws: TopicError.empty) { try TopicFilter("") }
    #expect(throws: TopicError.emptyLevel(index: 1)) { try TopicFilter("a//#") }
    #expect(throws: TopicError.forbiddenCharacter("\u{0}", offset: 2)) {
      try TopicFilter("a/\u{0}")
    }
  }

  @Test(
    "matches like MQTT",
    arguments: [
      ("a/b", "a/b", true), ("a/b", "a/c", false), ("a/+", "a/b", true), ("a/+", "a/b/c", false),
      ("a/+", "a", false), ("a/#", "a", true), ("a/#", "a/b/c", true), ("a/#", "b/a", false),
      ("#", "a/b", true), ("+/+", "a/b", true), ("+/+", "a", false), ("a/+/c", "a/b/c", true),
      ("a/+/c", "a/b/d", false), ("a/b", "a/b/c", false), ("a/b/c", "a/b", false),
      ("#", "$SYS/uptime", false), ("+/uptime", "$SYS/uptime", false),
      ("$SYS/#", "$SYS/uptime", true), ("caf\u{E9}", "cafe\u{301}", false),
    ])
  func matchesLikeMQTT(_ filter: String, _ topic: String, _ expected: Bool) throws {
    #expect(try TopicFilter(filter).matches(TopicName(topic)) == expected)
  }

  @Test("a filter made from a topic matches exactly that topic")
  func filterFromTopic() throws {
    let topic = try TopicName("a/b")
    let filter = TopicFilter(topic)
    #expect(filter.matches(topic))
    #expect(!filter.matches(try TopicName("a/b/c")))
    #expect(filter == (try TopicFilter("a/b")))
  }
}
