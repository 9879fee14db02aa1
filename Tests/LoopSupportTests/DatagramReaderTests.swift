import Foundation
import Glibc
import Synchronization
import Testing

@testable import LoopSupport

/// What a reader handed over for one socket.
private final class Received: Sendable {
  let values = Mutex<[[UInt8]]>([])
  let batches = Mutex(0)
  let closedCount = Mutex(0)
  /// When the last batch arrived, timed on the reader thread (the test's own tasks may be late
  /// when tests run in parallel).
  let lastBatchAt = Mutex<ContinuousClock.Instant?>(nil)

  var receive: @Sendable ([[UInt8]]) -> Void {
    { batch in
      self.lastBatchAt.withLock { $0 = .now }
      self.batches.withLock { $0 += 1 }
      self.values.withLock { $0 += batch }
    }
  }
  var closed: @Sendable () -> Void { { self.closedCount.withLock { $0 += 1 } } }

  /// Waits up to `seconds` for `condition`.
  func wait(seconds: Int = 5, _ condition: (Received) -> Bool) async -> Bool {
    for _ in 0..<(seconds * 100) {
      if condition(self) { return true }
      try? await Task.sleep(for: .milliseconds(10))
    }
    return condition(self)
  }
}

private func socketPair() throws -> (reader: Int32, writer: Int32) {
  var fds: [Int32] = [-1, -1]
  try #require(
    socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0
  )
  return (fds[0], fds[1])
}

private func send(_ fd: Int32, _ value: [UInt8]) {
  let sent = value.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, 0) }
  #expect(sent == value.count)
}

@Suite("Datagram reader: values in order on its thread, empty values, hang-ups, drain and remove")
struct DatagramReaderTests {
  @Test("2,000 values arrive in order, in fewer batches than values, and nothing else")
  func inOrder() async throws {
    let reader = try DatagramReader(name: "test-reader")
    defer { reader.stop() }
    let (mine, theirs) = try socketPair()
    defer { close(theirs) }
    let received = Received()
    #expect(reader.add(mine, receive: received.receive, closed: received.closed))
    let expected = (0..<2000).map { i in [UInt8(i & 0xFF), UInt8(i >> 8), 0xAB] }
    for value in expected { send(theirs, value) }
    #expect(await received.wait { $0.values.withLock { $0.count } >= 2000 })
    #expect(received.values.withLock { $0 } == expected)
    #expect(received.batches.withLock { $0 } <= 2000)
    #expect(received.closedCount.withLock { $0 } == 0)
  }

  @Test(
    "waiting values take one system call per 32, a lone value one: not one more to find the socket empty"
  )
  func oneCallPerVector() async throws {
    let reader = try DatagramReader(name: "test-reader")
    defer { reader.stop() }
    let (mine, theirs) = try socketPair()
    defer { close(theirs) }
    let received = Received()
    // 100 values wait before the reader sees the socket: 32 + 32 + 32 + 4.
    let waiting = (0..<100).map { [UInt8($0), 0x5A] }
    for value in waiting { send(theirs, value) }
    reader.add(mine, receive: received.receive, closed: received.closed)
    #expect(await received.wait { $0.values.withLock { $0.count } == 100 })
    #expect(reader.receiveCalls == 4)
    #expect(received.batches.withLock { $0 } == 1)
    // Then values one at a time, each read as it comes: one call each (`recv` took two).
    for value in 0..<10 {
      send(theirs, [UInt8(value)])
      #expect(await received.wait { $0.values.withLock { $0.count } == 101 + value })
      #expect(reader.receiveCalls == 5 + value)
    }
    #expect(received.values.withLock { $0 } == waiting + (0..<10).map { [UInt8($0)] })
  }

  @Test(
    "gathering: values 5 ms apart are read a few times per 1-s interval, in order; the first after a quiet spell at once"
  )
  func gathering() async throws {
    let reader = try DatagramReader(name: "test-reader", gathering: .seconds(1))
    defer { reader.stop() }
    let (mine, theirs) = try socketPair()
    defer { close(theirs) }
    let received = Received()
    let lastBatchAt = Mutex(ContinuousClock.now)
    reader.add(
      mine,
      receive: { batch in
        lastBatchAt.withLock { $0 = .now }
        received.receive(batch)
      }, closed: received.closed)
    // Paced by a thread of its own (the test pool's tasks may be late when tests run in
    // parallel).
    let writer = theirs
    let paced = Thread {
      for value in 0..<200 {
        send(writer, [UInt8(value)])
        usleep(5000)
      }
    }
    paced.start()
    #expect(await received.wait(seconds: 20) { $0.values.withLock { $0.count } == 200 })
    #expect(received.values.withLock { $0 } == (0..<200).map { [UInt8($0)] })
    // 1 s or more of values: a few turns (each read at once, 200 without gathering).
    let turns = reader.readingTurns
    #expect(turns >= 2 && turns <= 40, "turns: \(turns)")
    // Quiet for longer than the interval, then one value: read at once, not an interval later.
    try await Task.sleep(for: .milliseconds(1500))
    let sent = ContinuousClock.now
    send(theirs, [0xFF])
    #expect(await received.wait { $0.values.withLock { $0.count } == 201 })
    #expect(lastBatchAt.withLock { $0 } - sent < .milliseconds(500))
  }

  @Test(
    "gathering between one and two values per interval: 40 values 60 ms apart with a 0.1-s interval take clearly fewer turns than values"
  )
  func gatheringModerateRate() async throws {
    let reader = try DatagramReader(name: "test-reader", gathering: .milliseconds(100))
    defer { reader.stop() }
    let (mine, theirs) = try socketPair()
    defer { close(theirs) }
    let received = Received()
    reader.add(mine, receive: received.receive, closed: received.closed)
    let writer = theirs
    let paced = Thread {
      for value in 0..<40 {
        send(writer, [UInt8(value)])
        usleep(60_000)
      }
    }
    paced.start()
    #expect(await received.wait(seconds: 20) { $0.values.withLock { $0.count } == 40 })
    #expect(received.values.withLock { $0 } == (0..<40).map { [UInt8($0)] })
    // About 25 turns (1.7 values each); 40 when each value is read as it comes.
    let turns = reader.readingTurns
    #expect(turns <= 34, "turns: \(turns)")
  }

  @Test(
    "gathering is per socket: while one socket's values gather, a lone value on another is read at once"
  )
  func gatheringPerSocket() async throws {
    let reader = try DatagramReader(name: "test-reader", gathering: .seconds(2))
    defer { reader.stop() }
    let (fast, fastPeer) = try socketPair()
    let (lone, lonePeer) = try socketPair()
    defer {
      close(fastPeer)
      close(lonePeer)
    }
    let streamed = Received()
    let single = Received()
    reader.add(fast, receive: streamed.receive, closed: streamed.closed)
    reader.add(lone, receive: single.receive, closed: single.closed)
    // Values 5 ms apart on one socket for 1.5 s: after its first reads it gathers for 2 s.
    let writer = fastPeer
    let paced = Thread {
      for value in 0..<300 {
        send(writer, [UInt8(value & 0xFF)])
        usleep(5000)
      }
    }
    paced.start()
    #expect(await streamed.wait { $0.values.withLock { !$0.isEmpty } })
    try await Task.sleep(for: .milliseconds(300))
    let sent = ContinuousClock.now
    send(lonePeer, [0xAB])
    #expect(await single.wait { $0.values.withLock { $0 == [[0xAB]] } })
    // Read at once, not when the other socket's interval ends (up to 2 s later).
    let read = try #require(single.lastBatchAt.withLock { $0 })
    #expect(read - sent < .milliseconds(1000))
    #expect(await streamed.wait(seconds: 20) { $0.values.withLock { $0.count } == 300 })
    #expect(streamed.values.withLock { $0 } == (0..<300).map { [UInt8($0 & 0xFF)] })
  }

  @Test(
    "a socket whose read took the gathering ceiling or more is read at once again: the sender's end must not fill"
  )
  func gatheringCeiling() async throws {
    let reader = try DatagramReader(
      name: "test-reader", batchLimit: 64, gathering: .seconds(2), gatheringCeiling: 8)
    defer { reader.stop() }
    let (mine, theirs) = try socketPair()
    defer { close(theirs) }
    let received = Received()
    reader.add(mine, receive: received.receive, closed: received.closed)
    // The first value after a quiet spell is read at once; the second, read at once too,
    // comes within the interval: the socket gathers for 2 s from then.
    send(theirs, [0])
    #expect(await received.wait { $0.values.withLock { $0.count } == 1 })
    send(theirs, [1])
    #expect(await received.wait { $0.values.withLock { $0.count } == 2 })
    // Ten while it gathers, read in one turn at its end: past the ceiling of 8. (Sent right
    // after the first value, a reader woken in the middle of them read a few, gathered, and
    // found fewer than 8 at the end: it went on gathering, and the check below failed.)
    for value in 2...11 { send(theirs, [UInt8(value)]) }
    #expect(await received.wait { $0.values.withLock { $0.count } == 12 })
    try await Task.sleep(for: .milliseconds(100))
    let sent = ContinuousClock.now
    send(theirs, [12])
    #expect(await received.wait { $0.values.withLock { $0.count } == 13 })
    // Read at once, not at the end of a 2-s interval.
    let read = try #require(received.lastBatchAt.withLock { $0 })
    #expect(read - sent < .milliseconds(1000))
    #expect(received.values.withLock { $0 } == (0...12).map { [UInt8($0)] })
  }

  @Test(
    "gathering does not slow a backlog: 200 waiting values with a batch limit of 64 arrive within one interval"
  )
  func gatheringBacklog() async throws {
    let reader = try DatagramReader(
      name: "test-reader", batchLimit: 64, gathering: .seconds(2))
    defer { reader.stop() }
    let (mine, theirs) = try socketPair()
    defer { close(theirs) }
    let received = Received()
    // Fewer than the socket pair holds (~278 short values), so that sending does not block.
    let sent = (0..<200).map { [UInt8($0), 0x42] }
    for value in sent { send(theirs, value) }
    // Timed on the reader thread (the test's own tasks may be late when tests run in parallel).
    let batchTimes = Mutex<[ContinuousClock.Instant]>([])
    reader.add(
      mine,
      receive: { batch in
        batchTimes.withLock { $0.append(.now) }
        received.receive(batch)
      }, closed: received.closed)
    #expect(await received.wait(seconds: 10) { $0.values.withLock { $0.count } == 200 })
    // Four batches (64 + 64 + 64 + 8), read one after the other, not an interval apart.
    let times = batchTimes.withLock { $0 }
    #expect(times.count == 4)
    if let first = times.first, let last = times.last {
      #expect(last - first < .seconds(1))
    }
    #expect(received.values.withLock { $0 } == sent)
    #expect(received.batches.withLock { $0 } == 4)
  }

  @Test("a hang-up while values gather: the values first, then closed, within the interval")
  func gatheringHangUp() async throws {
    let reader = try DatagramReader(name: "test-reader", gathering: .milliseconds(500))
    defer { reader.stop() }
    let (mine, theirs) = try socketPair()
    let received = Received()
    // Timed on the reader thread: the test's own task may be late when tests run in parallel.
    let closedAt = Mutex<ContinuousClock.Instant?>(nil)
    reader.add(
      mine, receive: received.receive,
      closed: {
        closedAt.withLock { $0 = .now }
        received.closed()
      })
    for value in 0..<20 { send(theirs, [UInt8(value)]) }  // fast: the reader gathers next
    #expect(await received.wait { $0.values.withLock { $0.count } == 20 })
    for value in 20..<30 { send(theirs, [UInt8(value)]) }
    let started = ContinuousClock.now
    close(theirs)
    #expect(await received.wait { $0.closedCount.withLock { $0 } == 1 })
    let closed = try #require(closedAt.withLock { $0 })
    #expect(closed - started < .seconds(2))
    #expect(received.values.withLock { $0 } == (0..<30).map { [UInt8($0)] })
  }

  @Test(
    "empty values between others survive a hang-up in the same read: 40 values, an empty one at 3, then closed"
  )
  func emptyValuesBeforeHangUp() async throws {
    let reader = try DatagramReader(name: "test-reader")
    defer { reader.stop() }
    let (mine, theirs) = try socketPair()
    let received = Received()
    var sent = (0..<40).map { [UInt8($0)] }
    sent[3] = []
    for value in sent { send(theirs, value) }
    close(theirs)
    // Registered after the hang-up: one read finds the values and the end together.
    reader.add(mine, receive: received.receive, closed: received.closed)
    #expect(await received.wait { $0.closedCount.withLock { $0 } == 1 })
    #expect(received.values.withLock { $0 } == sent)
  }

  @Test("a peer that only shuts its sending side ends the socket (no stream of empty values)")
  func halfClose() async throws {
    let reader = try DatagramReader(name: "test-reader")
    defer { reader.stop() }
    let (mine, theirs) = try socketPair()
    defer { close(theirs) }
    let received = Received()
    reader.add(mine, receive: received.receive, closed: received.closed)
    send(theirs, [1])
    #expect(await received.wait { $0.values.withLock { $0.count } == 1 })
    _ = shutdown(theirs, Int32(SHUT_WR))
    #expect(await received.wait { $0.closedCount.withLock { $0 } == 1 })
    #expect(received.values.withLock { $0 } == [[1]])
  }

  @Test("a datagram longer than the longest read is cut, and the next one is whole")
  func longDatagramCut() async throws {
    let reader = try DatagramReader(name: "test-reader", maxDatagram: 4)
    defer { reader.stop() }
    let (mine, theirs) = try socketPair()
    defer { close(theirs) }
    let received = Received()
    send(theirs, [1, 2, 3, 4, 5, 6])
    send(theirs, [7, 8])
    reader.add(mine, receive: received.receive, closed: received.closed)
    #expect(await received.wait { $0.values.withLock { $0.count } == 2 })
    #expect(received.values.withLock { $0 } == [[1, 2, 3, 4], [7, 8]])
  }

  @Test("a zero-length datagram is an empty value, not the end; the hang-up is the end")
  func emptyValueThenHangUp() async throws {
    let reader = try DatagramReader(name: "test-reader")
    defer { reader.stop() }
    let (mine, theirs) = try socketPair()
    let received = Received()
    reader.add(mine, receive: received.receive, closed: received.closed)
    send(theirs, [1])
    send(theirs, [])
    send(theirs, [2])
    #expect(await received.wait { $0.values.withLock { $0.count } == 3 })
    #expect(received.closedCount.withLock { $0 } == 0)
    send(theirs, [3])
    close(theirs)  // queued values first, then the end
    #expect(await received.wait { $0.closedCount.withLock { $0 } == 1 })
    #expect(received.values.withLock { $0 } == [[1], [], [2], [3]])
    #expect(await received.wait { _ in reader.count == 0 })
  }

  @Test("remove delivers what is waiting before it returns and hangs up on the peer")
  func removeDrains() async throws {
    let reader = try DatagramReader(name: "test-reader")
    defer { reader.stop() }
    let (mine, theirs) = try socketPair()
    defer { close(theirs) }
    let received = Received()
    // Stop the reader thread from seeing the values first: register after sending.
    for value in 0..<50 { send(theirs, [UInt8(value)]) }
    reader.add(mine, receive: received.receive, closed: received.closed)
    reader.remove(mine)
    #expect(received.values.withLock { $0 } == (0..<50).map { [UInt8($0)] })
    var probe = pollfd(fd: theirs, events: Int16(POLLIN), revents: 0)
    #expect(poll(&probe, 1, 2000) == 1)
    #expect(probe.revents & Int16(POLLHUP) != 0)
    #expect(await received.wait { _ in reader.count == 0 })
    #expect(received.closedCount.withLock { $0 } == 0)
  }

  @Test("drain hands over what is waiting on the caller's thread, in order with the reader")
  func drain() async throws {
    let reader = try DatagramReader(name: "test-reader")
    defer { reader.stop() }
    let (mine, theirs) = try socketPair()
    defer { close(theirs) }
    let received = Received()
    reader.add(mine, receive: received.receive, closed: received.closed)
    for round in 0..<20 {
      for value in 0..<10 { send(theirs, [UInt8(round), UInt8(value)]) }
      reader.drain(mine)
      // Everything sent before the drain has been handed over when it returns.
      #expect(received.values.withLock { $0.count } == (round + 1) * 10)
    }
    var expected: [[UInt8]] = []
    for round in 0..<20 {
      for value in 0..<10 { expected.append([UInt8(round), UInt8(value)]) }
    }
    #expect(received.values.withLock { $0 } == expected)
  }

  @Test("after stop a socket is refused and closed")
  func stopped() async throws {
    let reader = try DatagramReader(name: "test-reader")
    reader.stop()
    try await Task.sleep(for: .milliseconds(50))
    let (mine, theirs) = try socketPair()
    defer { close(theirs) }
    let received = Received()
    let added = reader.add(mine, receive: received.receive, closed: received.closed)
    #expect(!added)
    var probe = pollfd(fd: theirs, events: Int16(POLLIN), revents: 0)
    #expect(poll(&probe, 1, 1000) == 1)
    #expect(probe.revents & Int16(POLLHUP) != 0)
  }
}
