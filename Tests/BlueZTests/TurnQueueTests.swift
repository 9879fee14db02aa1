import Synchronization
import Testing

@testable import BlueZ

/// The turn the central's adapter operations and the peripheral's registration steps take.
@Suite struct TurnQueueTests {
  /// An actor holding one turn, as the central and the peripheral do.
  private actor Holder {
    var turn = TurnQueue()
    var order: [Int] = []

    /// Takes the turn, or waits for it; `false` when the waiter left first.
    func acquire(_ label: Int, onTicket: @Sendable (Int) -> Void = { _ in }) async -> Bool {
      guard let ticket = turn.take() else {
        order.append(label)
        return true
      }
      onTicket(ticket)
      let granted = await withCheckedContinuation { turn.wait(ticket, $0) }
      if granted { order.append(label) }
      return granted
    }

    func release() { turn.release() }
    var waiting: Int { turn.waiting }
    func leave(_ ticket: Int) { turn.leave(ticket) }
    var isHeld: Bool { turn.isHeld }
  }

  @Test("the turn goes to the waiters in the order they asked, and is free after the last")
  func order() async throws {
    let holder = Holder()
    #expect(await holder.acquire(0))
    let second = Task { await holder.acquire(1) }
    try await waitUntil { await holder.waiting == 1 }
    let third = Task { await holder.acquire(2) }
    try await waitUntil { await holder.waiting == 2 }
    await holder.release()
    #expect(await second.value)
    #expect(await holder.isHeld)
    await holder.release()
    #expect(await third.value)
    await holder.release()
    #expect(await holder.isHeld == false)
    #expect(await holder.order == [0, 1, 2])
  }

  @Test("a waiter that leaves is answered false at once and never gets the turn")
  func leaving() async throws {
    let holder = Holder()
    #expect(await holder.acquire(0))
    let ticket = Mutex<Int?>(nil)
    let leaver = Task { await holder.acquire(1) { number in ticket.withLock { $0 = number } } }
    try await waitUntil { await holder.waiting == 1 }
    let next = Task { await holder.acquire(2) }
    try await waitUntil { await holder.waiting == 2 }
    await holder.leave(try #require(ticket.withLock { $0 }))
    #expect(await leaver.value == false)
    await holder.release()
    #expect(await next.value)
    #expect(await holder.order == [0, 2])
  }

  @Test("a turn freed between take and wait is granted at once")
  func freedMeanwhile() async throws {
    var turn = TurnQueue()
    let first = turn.take()
    #expect(first == nil)
    let taken = turn.take()
    let ticket = try #require(taken)
    turn.release()
    #expect(turn.isHeld == false)
    let granted = await withCheckedContinuation { turn.wait(ticket, $0) }
    #expect(granted)
    #expect(turn.isHeld)
  }

  /// Polls `condition` every 5 ms for up to 10 s.
  private func waitUntil(_ condition: @Sendable () async -> Bool) async throws {
    for _ in 0..<2000 where await !condition() {
      try await Task.sleep(for: .milliseconds(5))
    }
    #expect(await condition())
  }
}
