import BridgeCore
import Synchronization

/// What the gateway publishes, as the web page sees it: every publication handed to the MQTT
/// client passes through ``record(topic:payload:retain:)`` (the same messages MQTT subscribers
/// get, so the page has no second source of truth). The hub keeps the newest payload of each
/// retained topic (a snapshot for a page that just opened), the last ``recentCapacity``
/// bridge events, and streams every publication to the open event streams.
///
/// It never holds the gateway back: recording takes a lock for a dictionary update and a
/// bounded yield per open stream; a stream whose reader falls ``streamCapacity`` messages
/// behind is ended (the page reconnects and takes a fresh snapshot).
public final class WebHub: Sendable {
  /// One publication.
  public struct Message: Sendable, Hashable {
    /// The topic.
    public var topic: String
    /// The payload.
    public var payload: [UInt8]
    /// Whether it was published retained.
    public var retain: Bool
  }

  /// How many messages an event stream may fall behind before it is ended.
  public static let streamCapacity = 4096
  /// How many bridge events the hub keeps for a new page.
  public static let recentCapacity = 100
  /// The most retained topics kept (beyond, new topics are not kept: a gateway holds a few
  /// per device, and `bluetooth.max_devices` bounds the devices).
  public static let retainedCapacity = 100_000

  private struct Waiter {
    let topic: String
    let matches: @Sendable (JSONValue) -> Bool
    let continuation: AsyncStream<Message>.Continuation
  }

  private struct State {
    var retained: [String: [UInt8]] = [:]
    var recent: [Message] = []
    var streams: [Int: AsyncStream<Message>.Continuation] = [:]
    var waiters: [Int: Waiter] = [:]
    var nextID = 0
    var finished = false
    var endedSlowStreams = 0
  }

  private let state = Mutex(State())

  /// Makes an empty hub.
  public init() {}

  /// Takes one publication of the gateway.
  ///
  /// - Important: It runs on the publishing path (inside a bridge step): it only updates the
  ///   hub under its lock and never waits.
  ///
  /// - Parameters:
  ///   - topic: The topic.
  ///   - payload: The payload; empty and retained clears the topic.
  ///   - retain: Whether it is retained.
  public func record(topic: String, payload: [UInt8], retain: Bool) {
    let message = Message(topic: topic, payload: payload, retain: retain)
    state.withLock { state in
      if retain {
        if payload.isEmpty {
          state.retained[topic] = nil
        } else if state.retained[topic] != nil || state.retained.count < Self.retainedCapacity {
          state.retained[topic] = payload
        }
      } else if topic.hasSuffix("/event"), topic.contains("/bridge/") {
        state.recent.append(message)
        if state.recent.count > Self.recentCapacity { state.recent.removeFirst() }
      }
      for (id, stream) in state.streams {
        if case .dropped = stream.yield(message) {
          stream.finish()
          state.streams[id] = nil
          state.endedSlowStreams += 1
        }
      }
      guard !state.waiters.isEmpty else { return }
      for (id, waiter) in state.waiters where waiter.topic == topic {
        guard let value = try? JSONValue.parse(payload), waiter.matches(value) else { continue }
        waiter.continuation.yield(message)
        waiter.continuation.finish()
        state.waiters[id] = nil
      }
    }
  }

  /// The retained topics and their payloads, in topic order, and the recent bridge events.
  public func snapshot() -> (retained: [(topic: String, payload: [UInt8])], recent: [Message]) {
    // Copy under the lock (the publishing path waits for it), sort outside.
    let (retained, recent) = state.withLock { ($0.retained, $0.recent) }
    return (retained.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }, recent)
  }

  /// The newest payload of a retained topic.
  ///
  /// - Parameter topic: The topic.
  /// - Returns: Its payload, or `nil` when it holds none.
  public func retained(_ topic: String) -> [UInt8]? {
    state.withLock { $0.retained[topic] }
  }

  /// How many event streams are open, and how many were ended for falling behind.
  public var streamCounts: (open: Int, endedSlow: Int) {
    state.withLock { ($0.streams.count, $0.endedSlowStreams) }
  }

  /// The most event streams open at once (each costs a yield per publication).
  public static let maxStreams = 32

  /// Opens an event stream of every publication from now on; ``close(_:)`` it when the
  /// reader goes away. After ``finish()`` the stream ends at once.
  ///
  /// - Returns: The stream and its id; `nil` when ``maxStreams`` are open.
  public func open() -> (id: Int, messages: AsyncStream<Message>)? {
    let (stream, continuation) = AsyncStream.makeStream(
      of: Message.self, bufferingPolicy: .bufferingOldest(Self.streamCapacity))
    let id: Int? = state.withLock { state in
      guard state.streams.count < Self.maxStreams else { return nil }
      state.nextID += 1
      if state.finished {
        continuation.finish()
      } else {
        state.streams[state.nextID] = continuation
      }
      return state.nextID
    }
    return id.map { ($0, stream) }
  }

  /// Closes an event stream.
  ///
  /// - Parameter id: The id ``open()`` gave.
  public func close(_ id: Int) {
    let stream = state.withLock { $0.streams.removeValue(forKey: id) }
    stream?.finish()
  }

  /// Ends every event stream and every wait for an answer (the gateway stops), so that the
  /// HTTP server can finish; later streams and waits end at once.
  public func finish() {
    let (streams, waiters) = state.withLock { state in
      state.finished = true
      defer {
        state.streams = [:]
        state.waiters = [:]
      }
      return (Array(state.streams.values), state.waiters.values.map(\.continuation))
    }
    for stream in streams { stream.finish() }
    for waiter in waiters { waiter.finish() }
  }

  /// Waits for the publication on `topic` whose JSON payload `matches` (carries the request's
  /// transaction): the answer to a request handed to the gateway after this call.
  ///
  /// - Parameters:
  ///   - topic: The answer's topic.
  ///   - matches: Whether a JSON payload on it is the answer.
  /// - Returns: A stream that yields the answer once; it ends without one when ``cancel(_:)``
  ///   is called.
  func expect(topic: String, matches: @escaping @Sendable (JSONValue) -> Bool) -> (
    id: Int, answer: AsyncStream<Message>
  ) {
    let (stream, continuation) = AsyncStream.makeStream(
      of: Message.self, bufferingPolicy: .bufferingNewest(1))
    let id: Int = state.withLock { state in
      state.nextID += 1
      if state.finished {
        continuation.finish()
      } else {
        state.waiters[state.nextID] = Waiter(
          topic: topic, matches: matches, continuation: continuation)
      }
      return state.nextID
    }
    return (id, stream)
  }

  /// Stops waiting for an answer.
  func cancel(_ id: Int) {
    let waiter = state.withLock { $0.waiters.removeValue(forKey: id) }
    waiter?.continuation.finish()
  }
}
