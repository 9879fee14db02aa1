import Glibc
import Testing

@testable import LoopSupport

@Suite("Receive vector: recvmmsg and its recv fallback read the same datagrams")
struct ReceiveVectorTests {
  @Test("struct mmsghdr is laid out as C lays it out: msg_len after msghdr, padded")
  func layout() {
    let wide = MemoryLayout<Int>.size == 8
    #expect(ReceiveVector.lengthOffset == (wide ? 56 : 28))
    #expect(ReceiveVector.headerStride == (wide ? 64 : 32))
  }

  @Test(
    "40 waiting datagrams (one empty, one too long) come as 32 then 8, then EAGAIN; after a hang-up every slot is empty",
    arguments: [false, true])
  func readsInSlots(oneByOne: Bool) throws {
    var fds: [Int32] = [-1, -1]
    try #require(socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue), 0, &fds) == 0)
    defer { close(fds[0]) }
    var sent: [[UInt8]] = (0..<40).map { [UInt8($0), 0xC3] }
    sent[5] = []
    sent[7] = Array(repeating: 0x11, count: 20)
    for value in sent {
      #expect(value.withUnsafeBytes { send(fds[1], $0.baseAddress, $0.count, 0) } == value.count)
    }
    let vector = ReceiveVector(capacity: 32, size: 8, oneByOne: oneByOne)
    #expect(vector.usesReceiveMultiple == !oneByOne)
    var expected = sent
    expected[7] = Array(repeating: 0x11, count: 8)  // cut to the slot
    #expect(vector.receive(from: fds[0], upTo: 32) == .received(32))
    #expect((0..<32).map(vector.value(at:)) == Array(expected[0..<32]))
    #expect(vector.length(at: 5) == 0)
    // Fewer asked for than the capacity: that many.
    #expect(vector.receive(from: fds[0], upTo: 3) == .received(3))
    #expect((0..<3).map(vector.value(at:)) == Array(expected[32..<35]))
    #expect(vector.receive(from: fds[0], upTo: 32) == .received(5))
    #expect((0..<5).map(vector.value(at:)) == Array(expected[35..<40]))
    #expect(vector.receive(from: fds[0], upTo: 32) == .failed(EAGAIN))
    // One call per read with recvmmsg; one per datagram and the failing one without.
    #expect(vector.systemCalls == (oneByOne ? 42 : 4))
    // The peer hangs up: every slot reads empty (the reader tells the end by the hang-up).
    close(fds[1])
    #expect(vector.receive(from: fds[0], upTo: 4) == .received(4))
    #expect((0..<4).allSatisfy { vector.length(at: $0) == 0 })
  }
}
