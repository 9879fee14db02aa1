import Glibc
import Testing

@testable import LoopSupport

@Suite("Receive vector: recvmmsg and its recv fallback read the same datagrams")
struct ReceiveVectorTests {
  @Test(
    "40 waiting datagrams (one empty, one too long) come as 32 then 8, then EAGAIN",
    arguments: [false, true])
  func readsInSlots(oneByOne: Bool) throws {
    var fds: [Int32] = [-1, -1]
    try #require(socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue), 0, &fds) == 0)
    defer {
      close(fds[0])
      close(fds[1])
    }
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
    #expect(vector.receive(from: fds[0], upTo: 32) == 32)
    #expect((0..<32).map(vector.value(at:)) == Array(expected[0..<32]))
    #expect(vector.receive(from: fds[0], upTo: 32) == 8)
    #expect((0..<8).map(vector.value(at:)) == Array(expected[32..<40]))
    #expect(vector.receive(from: fds[0], upTo: 32) == -1)
    #expect(errno == EAGAIN)
    // One call per read with recvmmsg; one per datagram and the failing one without.
    #expect(vector.systemCalls == (oneByOne ? 42 : 3))
  }
}
