/// The waiters for a turn that operations of an actor take so that they do not interleave
/// across their awaits (the discovery calls on one adapter): the holder passes the turn to the
/// next in order. A waiter whose task is cancelled leaves the queue at once.
struct TurnQueue {
  private var waiters: [(ticket: Int, continuation: CheckedContinuation<Bool, Never>)] = []
  private var tickets = 0

  /// A ticket for the next waiter.
  mutating func ticket() -> Int {
    tickets += 1
    return tickets
  }

  /// Waits for the turn: `continuation` answers `true` when it is passed on, `false` when the
  /// waiter ``leave(_:)``s first.
  mutating func wait(_ ticket: Int, _ continuation: CheckedContinuation<Bool, Never>) {
    waiters.append((ticket, continuation))
  }

  /// A cancelled waiter leaves (answered `false`); nothing when it holds the turn already.
  mutating func leave(_ ticket: Int) {
    guard let index = waiters.firstIndex(where: { $0.ticket == ticket }) else { return }
    waiters.remove(at: index).continuation.resume(returning: false)
  }

  /// Passes the turn to the next waiter; `false` when none waits.
  mutating func pass() -> Bool {
    guard !waiters.isEmpty else { return false }
    waiters.removeFirst().continuation.resume(returning: true)
    return true
  }
}
