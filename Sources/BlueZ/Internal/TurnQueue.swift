/// A turn that the operations of an actor take so that they do not interleave across their
/// awaits (the discovery calls on one adapter, the peripheral's registration steps): the holder
/// passes it to the next waiter in order. A waiter may leave the queue (its task was
/// cancelled) before its turn comes.
struct TurnQueue {
  private var waiters: [(ticket: Int, continuation: CheckedContinuation<Bool, Never>)] = []
  private var tickets = 0
  /// Whether an operation holds the turn.
  private(set) var isHeld = false
  /// How many wait for the turn.
  var waiting: Int { waiters.count }

  /// Takes the turn when it is free (`nil`); otherwise a ticket to ``wait(_:_:)`` with.
  mutating func take() -> Int? {
    guard isHeld else {
      isHeld = true
      return nil
    }
    tickets += 1
    return tickets
  }

  /// Waits for the turn: `continuation` answers `true` when it is passed on (at once when the
  /// turn was freed since ``take()``), `false` when the waiter ``leave(_:)``s first.
  mutating func wait(_ ticket: Int, _ continuation: CheckedContinuation<Bool, Never>) {
    guard isHeld else {
      isHeld = true
      continuation.resume(returning: true)
      return
    }
    waiters.append((ticket, continuation))
  }

  /// A waiter leaves (answered `false`); nothing when it holds the turn already.
  mutating func leave(_ ticket: Int) {
    guard let index = waiters.firstIndex(where: { $0.ticket == ticket }) else { return }
    waiters.remove(at: index).continuation.resume(returning: false)
  }

  /// Passes the turn to the next waiter, or frees it when none waits.
  mutating func release() {
    if waiters.isEmpty {
      isHeld = false
    } else {
      waiters.removeFirst().continuation.resume(returning: true)
    }
  }
}
