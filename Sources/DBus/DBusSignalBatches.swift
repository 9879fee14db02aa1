import Synchronization

/// The signals of one subscription, handed over a bus-thread turn at a time
/// (``DBusConnection/signalBatches(matching:bufferSize:)``).
///
/// Where ``DBusConnection/signals(matching:bufferSize:)`` hands over each signal on its own, so
/// that a consumer wakes (and, on an actor, hops) once per signal, this sequence's elements are
/// everything that arrived since the consumer last asked, in arrival order: what one turn of the
/// bus thread read (part of one, when the consumer asks while the turn is still dispatching). With
/// a gathering connection (``DBusConnection/init(address:gathering:)``) one turn holds every signal
/// of an interval.
///
/// It holds at most `bufferSize` signals that the consumer has not taken — a bound in signals,
/// not in batches; newer ones are dropped while it is full and counted in
/// ``DBusStatistics/signalsDropped``. One consumer iterates it; the subscription ends when the
/// sequence and its iterator are gone, or when the iterating task is cancelled.
public struct DBusSignalBatches: AsyncSequence, Sendable {
  /// A batch: the signals that arrived since the consumer last asked, in order; never empty.
  public typealias Element = [DBusSignal]

  /// The consumer's end: ends the subscription when the last copy of the sequence and its
  /// iterators are gone.
  final class Handle: Sendable {
    let queue: SignalQueue
    init(_ queue: SignalQueue) { self.queue = queue }
    deinit { queue.terminate() }
  }

  let handle: Handle

  init(_ queue: SignalQueue) { handle = Handle(queue) }

  /// Iterates the batches.
  public struct AsyncIterator: AsyncIteratorProtocol {
    let handle: Handle

    /// Everything that arrived since the last call, waiting when nothing has; `nil` once the
    /// connection closed (after what was queued) or the task was cancelled.
    public mutating func next() async -> [DBusSignal]? {
      await handle.queue.next()
    }
  }

  /// The iterator; one consumer iterates.
  public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(handle: handle) }
}

/// The queue behind ``DBusSignalBatches``: filled by the bus thread, signal by signal, and
/// handed to the waiting consumer once per turn (``flush()``).
final class SignalQueue: Sendable {
  private struct State {
    var queued: [DBusSignal] = []
    var waiter: CheckedContinuation<[DBusSignal]?, Never>?
    var finished = false
    var terminated = false
  }

  private let state = Mutex(State())
  private let capacity: Int
  private let onTermination: @Sendable () -> Void

  /// - Parameters:
  ///   - capacity: Signals held that the consumer has not taken.
  ///   - onTermination: Called once when the consumer is gone or cancelled.
  init(capacity: Int, onTermination: @escaping @Sendable () -> Void) {
    self.capacity = max(1, capacity)
    self.onTermination = onTermination
  }

  /// Queues a signal (bus thread); `false` when it was dropped because the queue is full (a
  /// consumer that has gone drops nothing: its subscription is ending).
  func append(_ signal: DBusSignal) -> Bool {
    state.withLock { state in
      guard !state.terminated else { return true }
      guard !state.finished, state.queued.count < capacity else { return false }
      state.queued.append(signal)
      return true
    }
  }

  /// Hands what is queued to a waiting consumer (bus thread, at the end of a dispatch).
  func flush() {
    let handover = state.withLock {
      state -> (CheckedContinuation<[DBusSignal]?, Never>, [DBusSignal])? in
      guard let waiter = state.waiter, !state.queued.isEmpty else { return nil }
      state.waiter = nil
      defer { state.queued = [] }
      return (waiter, state.queued)
    }
    if let (waiter, signals) = handover { waiter.resume(returning: signals) }
  }

  /// No more signals (the connection closed): the consumer gets what is queued, then `nil`.
  func finish() {
    let handover = state.withLock {
      state -> (CheckedContinuation<[DBusSignal]?, Never>, [DBusSignal]?)? in
      state.finished = true
      guard let waiter = state.waiter else { return nil }
      state.waiter = nil
      // A waiter finds the queue empty unless signals came after the last flush.
      defer { state.queued = [] }
      return (waiter, state.queued.isEmpty ? nil : state.queued)
    }
    if let (waiter, signals) = handover { waiter.resume(returning: signals) }
  }

  /// The consumer is gone or cancelled: the subscription ends.
  func terminate() {
    let first = state.withLock { state -> Bool in
      defer { state.terminated = true }
      return !state.terminated
    }
    guard first else { return }
    finish()
    onTermination()
  }

  /// Everything queued, waiting until a flush when nothing is.
  func next() async -> [DBusSignal]? {
    await withTaskCancellationHandler {
      await withCheckedContinuation { (waiter: CheckedContinuation<[DBusSignal]?, Never>) in
        let now = state.withLock { state -> [DBusSignal]?? in
          if !state.queued.isEmpty {
            defer { state.queued = [] }
            return .some(state.queued)
          }
          if state.finished || state.terminated { return .some(nil) }
          precondition(state.waiter == nil, "DBusSignalBatches has one consumer")
          state.waiter = waiter
          return .none
        }
        if let now { waiter.resume(returning: now) }
      }
    } onCancel: {
      terminate()
    }
  }
}
