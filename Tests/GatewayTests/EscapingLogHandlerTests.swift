import Gateway
import Logging
import Synchronization
import Testing

@Suite("EscapingLogHandler: text from outside never forges a log line")
struct EscapingLogHandlerTests {
  @Test(
    "control characters are escaped; ordinary text is untouched",
    arguments: [
      ("plain text, ünïcödé ✓", "plain text, ünïcödé ✓"),
      ("a\nforged line", "a\\nforged line"),
      ("cr\rtab\t", "cr\\rtab\\t"),
      ("esc\u{1B}[31mred", "esc\\u{1B}[31mred"),
      ("nul\u{0}", "nul\\u{0}"),
      ("del\u{7F} c1\u{85}", "del\\u{7F} c1\\u{85}"),
      ("ls\u{2028}ps\u{2029}", "ls\\u{2028}ps\\u{2029}"),
      ("fake \\n escape", "fake \\\\n escape"),
    ])
  func escape(input: String, expected: String) {
    #expect(EscapingLogHandler.escape(input) == expected)
  }

  @Test("message and metadata values are escaped before the wrapped handler sees them")
  func wrapsHandler() {
    let sink = CapturingHandler()
    var logger = Logger(label: "t") { _ in EscapingLogHandler(sink) }
    logger.logLevel = .debug
    logger.warning(
      "bad key \("k\nINJECTED")",
      metadata: [
        "mqtt.topic": "a\nb", "list": ["x\u{1B}"], "nested": ["k": "\r"],
      ])
    let events = sink.box.events.withLock { $0 }
    #expect(events.count == 1)
    #expect(events.first?.message == "bad key k\\nINJECTED")
    #expect(events.first?.metadata?["mqtt.topic"] == "a\\nb")
    #expect(events.first?.metadata?["list"] == ["x\\u{1B}"])
    #expect(events.first?.metadata?["nested"] == ["k": "\\r"])
  }
}

/// Records what reaches it.
struct CapturingHandler: LogHandler {
  final class Box: Sendable {
    let events = Mutex<[LogEvent]>([])
  }
  let box = Box()
  var logLevel: Logger.Level = .trace
  var metadata: Logger.Metadata = [:]
  subscript(metadataKey key: String) -> Logger.Metadata.Value? {
    get { metadata[key] }
    set { metadata[key] = newValue }
  }
  func log(event: LogEvent) { box.events.withLock { $0.append(event) } }
}
