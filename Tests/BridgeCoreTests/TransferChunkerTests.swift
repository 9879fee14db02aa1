import BridgeCore
import Testing

@Suite("Transfer chunker")
struct TransferChunkerTests {
  func all(_ text: [UInt8], mtu: Int) -> [[UInt8]] {
    var chunker = TransferChunker(text: text, mtu: mtu)
    var out: [[UInt8]] = []
    while let next = chunker.next() { out.append(next) }
    return out
  }

  @Test(
    "chunks are exactly MTU − 3 bytes (512 at most), the last may be shorter, EOM comes last",
    arguments: [23, 185, 247, 515, 517])
  func sizes(mtu: Int) {
    let size = min(mtu - 3, 512)
    for length in [0, 1, size - 1, size, size + 1, 4096, 65_536] {
      let text = (0..<length).map { UInt8(truncatingIfNeeded: $0 &* 7) }
      let notifications = all(text, mtu: mtu)
      #expect(notifications.last == Array("EOM".utf8))
      let chunks = notifications.dropLast()
      #expect(chunks.allSatisfy { $0.count <= size && !$0.isEmpty })
      #expect(chunks.dropLast().allSatisfy { $0.count == size })
      #expect(chunks.count == (length + size - 1) / size)
      #expect(Array(chunks.joined()) == text)
    }
  }

  @Test("20, 19 and 21 bytes at the default MTU")
  func defaultMTUEdges() {
    #expect(all(Array(repeating: 0x41, count: 20), mtu: 23).map(\.count) == [20, 3])
    #expect(all(Array(repeating: 0x41, count: 19), mtu: 23).map(\.count) == [19, 3])
    #expect(all(Array(repeating: 0x41, count: 21), mtu: 23).map(\.count) == [20, 1, 3])
    #expect(all([], mtu: 23) == [Array("EOM".utf8)])
  }

  @Test("multi-byte UTF-8 split across chunks reassembles exactly")
  func utf8RoundTrip() {
    let text = Array(String(repeating: "Grüße 🚀 東京 ", count: 200).utf8)
    for mtu in [23, 185, 247, 517] {
      var reassembler = TransferReassembler(maxBytes: 1 << 20)
      var result: [UInt8]?
      for notification in all(text, mtu: mtu) {
        if case .complete(let whole) = reassembler.append(notification) { result = whole }
      }
      #expect(result == text)
      #expect(result.flatMap { String(validating: $0, as: UTF8.self) } != nil)
    }
  }

  @Test("MTUs out of range are clamped; a chunk never exceeds the 512-byte attribute value")
  func clamped() {
    #expect(TransferChunker(text: [], mtu: 5).chunkSize == 20)
    #expect(TransferChunker(text: [], mtu: 515).chunkSize == 512)
    #expect(TransferChunker(text: [], mtu: 517).chunkSize == 512)
    #expect(TransferChunker(text: [], mtu: 10_000).chunkSize == 512)
  }
}
