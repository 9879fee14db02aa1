import Glibc
import LoopSupport
import Testing

@Suite("Loop mailbox: commands in order, a wake-up per post, refused once closed")
struct LoopMailboxTests {
  @Test("posting wakes the poll; commands come out in order; the wake-ups drain")
  func postAndWake() throws {
    let mailbox = try LoopMailbox<Int>()
    var fds = [mailbox.wakePollFD]
    #expect(try pollDescriptors(&fds, timeout: 0) == 0)
    for value in 1...3 { #expect(mailbox.post(value)) }
    fds = [mailbox.wakePollFD]
    #expect(try pollDescriptors(&fds, timeout: 1000) == 1)
    #expect(fds[0].revents & Int16(POLLIN) != 0)
    #expect(mailbox.take() == [1, 2, 3])
    #expect(mailbox.take().isEmpty)
    mailbox.drainWakeUps()
    fds = [mailbox.wakePollFD]
    #expect(try pollDescriptors(&fds, timeout: 0) == 0)
  }

  @Test(
    "a failing poll (more descriptors than the process may open: EINVAL) is reported after a pause, so that a loop polling again cannot spin"
  )
  func failedPollPauses() throws {
    var limit = rlimit()
    #expect(getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0)
    var fds = [pollfd](
      repeating: pollfd(fd: -1, events: Int16(POLLIN), revents: 0),
      count: Int(min(limit.rlim_cur, 1 << 20)) + 1)
    // (Linux caps the limit at fs.nr_open, 1 << 20 by default.)
    #expect(UInt64(fds.count) > UInt64(limit.rlim_cur), "the limit is \(limit.rlim_cur)")
    for timeout: Int32 in [50, -1, 0] {
      let start = ContinuousClock.now
      #expect(throws: LoopError.self) { try pollDescriptors(&fds, timeout: timeout) }
      let waited = ContinuousClock.now - start
      let expected = timeout <= 0 ? pollFailurePause : timeout
      #expect(waited >= .milliseconds(expected - 5), "\(timeout): \(waited)")
    }
  }

  @Test("more wake-ups than one read takes (1,000) drain too")
  func manyWakeUpsDrain() throws {
    let mailbox = try LoopMailbox<Int>()
    for _ in 0..<1000 { mailbox.wake() }
    mailbox.drainWakeUps()
    var fds = [mailbox.wakePollFD]
    #expect(try pollDescriptors(&fds, timeout: 0) == 0)
    mailbox.wake()
    fds = [mailbox.wakePollFD]
    #expect(try pollDescriptors(&fds, timeout: 0) == 1)
  }

  @Test(
    "one wake-up per batch: a post while commands wait writes nothing; after take, the next post wakes again"
  )
  func oneWakeUpPerBatch() throws {
    let mailbox = try LoopMailbox<Int>()
    for value in 1...100 { #expect(mailbox.post(value)) }
    // Exactly one byte in the pipe.
    var byte: UInt8 = 0
    #expect(read(mailbox.wakeFD, &byte, 1) == 1)
    #expect(read(mailbox.wakeFD, &byte, 1) == -1)
    #expect(mailbox.take().count == 100)
    #expect(mailbox.post(101))
    var fds = [mailbox.wakePollFD]
    #expect(try pollDescriptors(&fds, timeout: 1000) == 1)
  }

  @Test("a batch posted at once writes one wake-up byte and comes out in order")
  func batchOneWakeUp() throws {
    let mailbox = try LoopMailbox<Int>()
    #expect(mailbox.post(contentsOf: 1...500))
    var byte: UInt8 = 0
    #expect(read(mailbox.wakeFD, &byte, 1) == 1)
    #expect(read(mailbox.wakeFD, &byte, 1) == -1)
    #expect(mailbox.take() == Array(1...500))
    #expect(mailbox.post(contentsOf: [Int]()))
    #expect(read(mailbox.wakeFD, &byte, 1) == -1)
  }

  @Test("closing returns what was waiting; later posts are refused for the caller to answer")
  func close() throws {
    let mailbox = try LoopMailbox<String>()
    #expect(mailbox.post("a"))
    #expect(mailbox.close() == ["a"])
    #expect(!mailbox.post("b"))
    #expect(mailbox.take().isEmpty)
  }

  @Test("many posts from other threads: none lost, each thread's order kept")
  func concurrentPosts() async throws {
    let mailbox = try LoopMailbox<(Int, Int)>()
    await withTaskGroup(of: Void.self) { group in
      for thread in 0..<4 {
        group.addTask { for index in 0..<1000 { _ = mailbox.post((thread, index)) } }
      }
    }
    let all = mailbox.take()
    #expect(all.count == 4000)
    for thread in 0..<4 {
      #expect(all.filter { $0.0 == thread }.map(\.1) == Array(0..<1000))
    }
  }
}
