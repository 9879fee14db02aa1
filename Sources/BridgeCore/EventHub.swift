public import Synchronization

/// Receives a producer's events in batches, on the producer's thread: the fast path from a
/// radio to a bridge, with no task or thread hop in between (see ``EventHub/attach(_:)``).
public struct EventSink<Event: Sendable>: Sendable {
  /// Called with each batch, in order, on the producer's thread; it must not block.
  public let receive: @Sendable ([Event]) -> Void
  /// Called once when the producer stops.
  public let finish: @Sendable () -> Void

  /// Makes a sink.
  ///
  /// - Parameters:
  ///   - receive: Called with each batch, in order; it must not block.
  ///   - finish: Called once when the producer stops.
  public init(
    receive: @escaping @Sendable ([Event]) -> Void, finish: @escaping @Sendable () -> Void = {}
  ) {
    self.receive = receive
    self.finish = finish
  }
}

/// A sink's attachment to a producer; ``cancel()`` detaches it.
public final class EventSubscription: Sendable {
  private let onCancel: Mutex<(@Sendable () -> Void)?>

  /// Makes a subscription that runs `onCancel` once, at the first ``cancel()``.
  /// - Parameter onCancel: What detaches the sink.
  public init(onCancel: @escaping @Sendable () -> Void) {
    self.onCancel = Mutex(onCancel)
  }

  /// Detaches the sink: it receives nothing after this returns (a batch being delivered on
  /// another thread at that moment may still arrive).
  public func cancel() {
    let body = onCancel.withLock { body in
      defer { body = nil }
      return body
    }
    body?()
  }
}

/// Fans events out to any number of subscribers: sinks (``attach(_:)``), which receive each batch
/// on the producer's thread, and `AsyncStream`s (``subscribe()``), each with its own bounded
/// buffer.
///
/// Policy: each stream subscriber's buffer keeps the newest `bufferSize` events; when a
/// consumer falls behind, its oldest undelivered events are dropped and counted in ``dropped``.
/// A sink is never behind: the producer waits for it.
public final class EventHub<Event: Sendable>: Sendable {
  // The per-batch path (`yield(contentsOf:)`) is inlinable so that it is specialised for the
  // event type where a producer calls it: generic, it looked up type metadata at run time for
  // every batch (6 % of the gateway's time on the notification path).
  @usableFromInline struct State {
    var subscribers: [UInt64: AsyncStream<Event>.Continuation] = [:] {
      didSet { subscriberList = Array(subscribers.values) }
    }
    var sinks: [UInt64: EventSink<Event>] = [:] {
      didSet { sinkList = Array(sinks.values) }
    }
    /// The values of ``subscribers`` and ``sinks``, kept up to date when they change: a batch
    /// takes them with one retain each instead of copying a dictionary per batch.
    @usableFromInline var subscriberList: [AsyncStream<Event>.Continuation] = []
    @usableFromInline var sinkList: [EventSink<Event>] = []
    var nextID: UInt64 = 0
    var finished = false
    @usableFromInline var dropped = 0
  }

  @usableFromInline let state = Mutex(State())
  private let bufferSize: Int

  /// Creates a hub whose subscribers each buffer the newest `bufferSize` events.
  /// - Parameter bufferSize: events buffered per subscriber (at least 1).
  public init(bufferSize: Int) {
    self.bufferSize = max(1, bufferSize)
  }

  /// A new stream of every event yielded from now on.
  /// - Returns: The stream; it ends at ``finish()`` or when its consumer stops iterating.
  public func subscribe() -> AsyncStream<Event> {
    let (stream, continuation) = AsyncStream.makeStream(
      of: Event.self, bufferingPolicy: .bufferingNewest(bufferSize))
    guard let id = register({ $0.subscribers[$1] = continuation }) else {
      continuation.finish()
      return stream
    }
    continuation.onTermination = { [weak self] _ in
      _ = self?.state.withLock { $0.subscribers.removeValue(forKey: id) }
    }
    return stream
  }

  /// Attaches a sink: from now on it receives every batch on the producer's thread, in order.
  ///
  /// - Parameter sink: The sink.
  /// - Returns: The attachment; cancel it to detach. A hub already finished calls
  ///   ``EventSink/finish`` at once.
  public func attach(_ sink: EventSink<Event>) -> EventSubscription {
    guard let id = register({ $0.sinks[$1] = sink }) else {
      sink.finish()
      return EventSubscription {}
    }
    return EventSubscription { [weak self] in
      _ = self?.state.withLock { $0.sinks.removeValue(forKey: id) }
    }
  }

  /// Adds a subscriber under a new id; `nil` once finished.
  private func register(_ add: (inout State, UInt64) -> Void) -> UInt64? {
    state.withLock { state in
      guard !state.finished else { return nil }
      state.nextID += 1
      add(&state, state.nextID)
      return state.nextID
    }
  }

  /// Hands `event` to every subscriber (outside the lock: `yield` may run other code).
  /// - Parameter event: the event.
  public func yield(_ event: Event) {
    yield(contentsOf: [event])
  }

  /// Hands a batch to every subscriber: each sink receives it in one call, each stream event
  /// by event (outside the lock: subscribers may run other code).
  /// - Parameter events: the events, in order.
  @inlinable
  public func yield(contentsOf events: [Event]) {
    guard !events.isEmpty else { return }
    let (sinks, subscribers) = state.withLock { ($0.sinkList, $0.subscriberList) }
    for sink in sinks { sink.receive(events) }
    guard !subscribers.isEmpty else { return }
    var dropped = 0
    for subscriber in subscribers {
      for event in events {
        if case .dropped = subscriber.yield(event) { dropped += 1 }
      }
    }
    if dropped > 0 { state.withLock { $0.dropped += dropped } }
  }

  /// Finishes every stream and sink; later subscribers get a finished stream.
  public func finish() {
    let (subscribers, sinks) = state.withLock { state in
      state.finished = true
      defer {
        state.subscribers.removeAll()
        state.sinks.removeAll()
      }
      return (state.subscriberList, state.sinkList)
    }
    for subscriber in subscribers { subscriber.finish() }
    for sink in sinks { sink.finish() }
  }

  /// Events dropped because a subscriber's buffer was full.
  public var dropped: Int { state.withLock { $0.dropped } }
}

extension AsyncStream where Element: Sendable {
  /// Feeds this stream to a sink, one batch per element, from a task of its own, then finishes
  /// the sink: for producers that only have a stream (test doubles). One consumer only.
  ///
  /// - Parameter sink: The receiver.
  /// - Returns: The attachment; cancelling it stops the task.
  public func pump(into sink: EventSink<Element>) -> EventSubscription {
    let task = Task {
      for await event in self { sink.receive([event]) }
      sink.finish()
    }
    return EventSubscription { task.cancel() }
  }
}
