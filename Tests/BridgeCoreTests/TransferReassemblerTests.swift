import BridgeCore
import Testing

@Suite("TransferReassembler")
struct TransferReassemblerTests {
  static let eom: [UInt8] = Array("EOM".utf8)
  static let texts: [String] = [
    "Hello, world", "a", "Küche 🔋 — 温度 22 °C", String(repeating: "0123456789", count: 100),
    "line\nbreak\u{0}nul",
  ]

  /// Feeds the chunks then `EOM`; returns every outcome in order.
  private func feed(_ reassembler: inout TransferReassembler, _ chunks: [[UInt8]])
    -> [TransferReassembler.Outcome]
  {
    (chunks + [Self.eom]).compactMap { reassembler.append($0) }
  }

  @Test("a text sent in one chunk completes at EOM", arguments: texts)
  func whole(_ text: String) {
    var reassembler = TransferReassembler(maxBytes: 4096)
    #expect(reassembler.append(Array(text.utf8)) == nil)
    #expect(reassembler.pendingBytes == text.utf8.count)
    #expect(reassembler.append(Self.eom) == .complete(Array(text.utf8)))
    #expect(reassembler.pendingBytes == 0)
  }

  @Test("a text sent byte by byte completes at EOM", arguments: texts)
  func byteByByte(_ text: String) {
    var reassembler = TransferReassembler(maxBytes: 4096)
    let bytes = Array(text.utf8)
    for (index, byte) in bytes.enumerated() {
      #expect(reassembler.append([byte]) == nil)
      #expect(reassembler.pendingBytes == index + 1)
    }
    #expect(reassembler.append(Self.eom) == .complete(bytes))
  }

  @Test("texts split at random points reassemble exactly")
  func randomSplits() {
    var generator = SplitMix64(seed: 0x5EED_2024)
    var reassembler = TransferReassembler(maxBytes: 4096)
    for iteration in 0..<2000 {
      let text = Self.texts[iteration % Self.texts.count]
      let bytes = Array(text.utf8)
      var chunks: [[UInt8]] = []
      var start = 0
      while start < bytes.count {
        // Chunk lengths 0…20, as notifications of any MTU (empty ones included).
        let length = min(Int(generator.next() % 21), bytes.count - start)
        chunks.append(Array(bytes[start..<start + length]))
        start += length
      }
      #expect(chunks.joined().elementsEqual(bytes))
      let outcomes = feed(&reassembler, chunks)
      #expect(outcomes == [.complete(bytes)], "iteration \(iteration)")
    }
  }

  @Test("a multi-byte UTF-8 character split between chunks arrives whole")
  func splitCharacter() {
    var reassembler = TransferReassembler(maxBytes: 64)
    let battery = Array("🔋".utf8)  // F0 9F 94 8B
    let umlaut = Array("ü".utf8)  // C3 BC
    let chunks: [[UInt8]] = [
      [UInt8(ascii: "a"), battery[0]], [battery[1]], [battery[2], battery[3], umlaut[0]],
      [umlaut[1], UInt8(ascii: "z")],
    ]
    let outcomes = feed(&reassembler, chunks)
    #expect(outcomes == [.complete(Array("a🔋üz".utf8))])
    guard case .complete(let text) = outcomes.first else {
      Issue.record("expected a complete text, got \(outcomes)")
      return
    }
    #expect(String(validating: text, as: UTF8.self) == "a🔋üz")
  }

  @Test("consecutive texts come out one by one")
  func consecutive() {
    var reassembler = TransferReassembler(maxBytes: 64)
    var outcomes: [TransferReassembler.Outcome] = []
    for text in ["first", "second", "", "third"] {
      outcomes += feed(&reassembler, [Array(text.utf8)])
    }
    #expect(
      outcomes == [
        .complete(Array("first".utf8)), .complete(Array("second".utf8)), .complete([]),
        .complete(Array("third".utf8)),
      ])
  }

  @Test("EOM with nothing pending is an empty text")
  func emptyText() {
    var reassembler = TransferReassembler(maxBytes: 0)
    #expect(reassembler.append(Self.eom) == .complete([]))
    #expect(reassembler.append(Self.eom) == .complete([]))
    #expect(reassembler.append([]) == nil)
    #expect(reassembler.append(Self.eom) == .complete([]))
  }

  @Test("only a chunk exactly EOM ends a text")
  func eomOnlyWhole() {
    var reassembler = TransferReassembler(maxBytes: 64)
    for chunk in ["EOM ", "eom", "EO", "M", "xEOM", "EOMx"] {
      #expect(reassembler.append(Array(chunk.utf8)) == nil)
    }
    #expect(reassembler.append(Self.eom) == .complete(Array("EOM eomEOMxEOMEOMx".utf8)))
  }

  @Test("a text of exactly maxBytes is kept")
  func exactlyAtLimit() {
    var reassembler = TransferReassembler(maxBytes: 10)
    #expect(
      feed(&reassembler, [Array("01234".utf8), Array("56789".utf8)])
        == [.complete(Array("0123456789".utf8))])
    #expect(feed(&reassembler, [Array("0123456789".utf8)]) == [.complete(Array("0123456789".utf8))])
  }

  @Test("one byte over maxBytes reports tooLong once and drops the text up to its EOM")
  func oneOverLimit() {
    var reassembler = TransferReassembler(maxBytes: 10)
    #expect(reassembler.append(Array("01234".utf8)) == nil)
    #expect(reassembler.append(Array("567890".utf8)) == .tooLong(bytes: 11))
    #expect(reassembler.isDiscarding)
    #expect(reassembler.pendingBytes == 0)
    // The rest of the dropped text is ignored, however long.
    for _ in 0..<100 { #expect(reassembler.append(Array("more".utf8)) == nil) }
    #expect(reassembler.pendingBytes == 0)
    // Its EOM ends it without a text…
    #expect(reassembler.append(Self.eom) == nil)
    #expect(!reassembler.isDiscarding)
    // …and the next text is whole.
    #expect(feed(&reassembler, [Array("next".utf8)]) == [.complete(Array("next".utf8))])
  }

  @Test("a single chunk over maxBytes is too long")
  func singleChunkOverLimit() {
    var reassembler = TransferReassembler(maxBytes: 3)
    #expect(feed(&reassembler, [Array("abcd".utf8)]) == [.tooLong(bytes: 4)])
    #expect(feed(&reassembler, [Array("abc".utf8)]) == [.complete(Array("abc".utf8))])
  }

  @Test("reset drops a partial text and reports its size")
  func resetDiscardsPartial() {
    var reassembler = TransferReassembler(maxBytes: 64)
    #expect(reassembler.append(Array("partial".utf8)) == nil)
    #expect(reassembler.reset() == 7)
    #expect(reassembler.pendingBytes == 0)
    #expect(reassembler.reset() == 0)
    #expect(feed(&reassembler, [Array("fresh".utf8)]) == [.complete(Array("fresh".utf8))])
  }

  @Test("reset while dropping a too-long text starts afresh")
  func resetWhileDiscarding() {
    var reassembler = TransferReassembler(maxBytes: 2)
    #expect(reassembler.append(Array("abc".utf8)) == .tooLong(bytes: 3))
    #expect(reassembler.reset() == 0)
    #expect(!reassembler.isDiscarding)
    #expect(feed(&reassembler, [Array("ok".utf8)]) == [.complete(Array("ok".utf8))])
  }
}
