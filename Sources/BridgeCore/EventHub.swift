import Synchronization

/// Fans events out to any number of `AsyncStream` subscribers, each with its own bounded buffer.
///
/// Policy: each subscriber's buffer keeps the newest `bufferSize` events; when a consumer falls
/// behind, its oldest undelivered events are dropped and counted in ``dropped``.
public final class EventHub<Event: Sendable>: Sendable {
  private struct State {
    var subscribers: [UInt64: AsyncStream<Event>.Continuation] = [:]
    var nextID: UInt64 = 0
    var finished = false
    var dropped = 0
  }

  private let state = Mutex(State())
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
    let id: UInt64? = state.withLock { state in
      guard !state.finished else { return nil }
      state.nextID += 1
      state.subscribers[state.nextID] = continuation
      return state.nextID
    }
    guard let id else {
      continuation.finish()
      return stream
    }
    continuation.onTermination = { [weak self] _ in
      _ = self?.state.withLock { $0.subscribers.removeValue(forKey: id) }
    }
    return stream
  }

  /// Hands `event` to every subscriber (outside the lock: `yield` may run other code).
  /// - Parameter event: the event.
  public func yield(_ event: Event) {
    let subscribers = state.withLock { Array($0.subscribers.values) }
    var dropped = 0
    for subscriber in subscribers {
      if case .dropped = subscriber.yield(event) { dropped += 1 }
    }
    if dropped > 0 { state.withLock { $0.dropped += dropped } }
  }

  /// Finishes every stream; later subscribers get a finished stream.
  public func finish() {
    let subscribers = state.withLock { state in
      state.finished = true
      defer { state.subscribers.removeAll() }
      return Array(state.subscribers.values)
    }
    for subscriber in subscribers { subscriber.finish() }
  }

  /// Events dropped because a subscriber's buffer was full.
  public var dropped: Int { state.withLock { $0.dropped } }
}
