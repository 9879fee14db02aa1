public import Logging

/// An MQTT client over libmosquitto with supervised reconnection and a bounded offline queue.
///
/// Create it, call ``start()``, then publish and subscribe from any task. The client
/// connects in the background and keeps reconnecting with exponential backoff and jitter,
/// whatever ended the previous connection (network errors, broker restarts, refused
/// credentials, MQTT 5 CONNACK refusals). After every accepted connection it subscribes again to
/// every filter and re-publishes the newest retained message of every topic it published
/// retained (``setRetainedState(_:)`` or ``publish(_:)``/``enqueue(_:)`` with `retain`; an empty
/// retained payload clears the topic), so that a broker restarted without persistence gets the
/// gateway's retained state back.
///
/// Messages published while disconnected wait in a bounded queue
/// (``MQTTClientConfiguration/offlineQueueCapacity``) with an explicit drop policy; drops are
/// counted in ``statistics``.
///
/// - Important: All libmosquitto calls happen on one private loop thread; every method here is
///   safe to call from any thread or task.
public final class MQTTClient: Sendable {
  /// Messages arriving on subscribed topics, in arrival order.
  ///
  /// The buffer holds ``MQTTClientConfiguration/incomingBufferCapacity`` messages and
  /// ``MQTTClientConfiguration/incomingBufferBytes`` payload bytes. When the consumer falls
  /// behind further, newer messages arrive without their payload
  /// (``MQTTMessage/discarded``, counted in ``MQTTStatistics/receivedDiscarded``) and, past the
  /// message count, go to ``overflow``.
  public let messages: MQTTMessageStream
  /// Messages that did not fit in ``messages`` (its count was reached), without their payload
  /// (``MQTTMessage/discarded`` `.bufferFull`), so that whoever sent them can be told; counted
  /// in ``MQTTStatistics/receivedDiscarded``. It holds the oldest
  /// ``overflowCapacity``; past that a message is lost, counted in
  /// ``MQTTStatistics/receivedDropped``.
  public let overflow: AsyncStream<MQTTMessage>
  /// How many messages ``overflow`` holds.
  public static let overflowCapacity = 1024
  /// Connection changes (connected, failed attempts, losses, stop); holds the newest 256.
  public let events: AsyncStream<MQTTClientEvent>
  /// The configuration the client was created with.
  public var configuration: MQTTClientConfiguration { core.configuration }

  private let core: ClientCore
  /// Sees every message handed to the client for publication, in order, on the caller's
  /// thread (the gateway's web page follows the gateway this way).
  private let observer: (@Sendable (MQTTMessage) -> Void)?

  /// Creates a client; nothing connects until ``start()``.
  ///
  /// - Parameters:
  ///   - configuration: the broker and session settings.
  ///   - logger: where connection changes and errors are logged.
  ///   - observer: Sees every message handed over for publication (``publish(_:)``,
  ///     ``enqueue(_:)``, ``send(_:)``, ``setRetainedState(_:)``), before the broker does; it
  ///     must be quick and must not call the client.
  /// - Throws: ``MQTTError`` with code `invalid_configuration` when libmosquitto refuses a
  ///   setting (unreadable TLS files, certificate without key, …).
  public init(
    configuration: MQTTClientConfiguration, logger: Logger,
    observer: (@Sendable (MQTTMessage) -> Void)? = nil
  ) throws(MQTTError) {
    self.observer = observer
    let (messages, messageSink) = AsyncStream.makeStream(
      of: MQTTMessage.self,
      bufferingPolicy: .bufferingOldest(max(1, configuration.incomingBufferCapacity)))
    let (events, eventSink) = AsyncStream.makeStream(
      of: MQTTClientEvent.self, bufferingPolicy: .bufferingNewest(256))
    let (overflow, overflowSink) = AsyncStream.makeStream(
      of: MQTTMessage.self, bufferingPolicy: .bufferingOldest(Self.overflowCapacity))
    self.events = events
    self.overflow = overflow
    let core = try ClientCore(
      configuration: configuration, logger: logger, messages: messageSink,
      overflow: overflowSink, events: eventSink)
    self.core = core
    self.messages = MQTTMessageStream(base: messages, core: core)
  }

  deinit {
    // The loop thread holds the core; tell it to stop when nobody can use the client anymore.
    core.send(.stop)
  }

  /// The linked libmosquitto version, e.g. `2.0.11`.
  public static var libraryVersion: String { MosquittoLibrary.version }

  /// Starts connecting in the background. Calling it again has no effect.
  public func start() { core.start() }

  /// The broker socket now (-1 while there is none), for tests that look at what the kernel
  /// did with it.
  var socketDescriptor: Int32 { core.socketDescriptor }

  /// Publishes a message and waits until the broker acknowledged it (QoS ≥ 1) or it was
  /// written to the socket (QoS 0).
  ///
  /// While disconnected the message waits in the offline queue, so this call waits too.
  /// - Throws: ``MQTTError`` `dropped` when the offline queue dropped it, `stopped` when the
  ///   client stopped first, `publish_refused` for an MQTT 5 error reason code,
  ///   `invalid_argument` when libmosquitto refuses the topic or payload.
  public func publish(_ message: MQTTMessage) async throws(MQTTError) {
    observer?(message)
    try await perform { waiter in .publish(message, waiter) }
  }

  /// Returns once the client's loop thread has taken a command: proof that it is alive and not
  /// stuck, whether or not the broker is reachable (a service manager's watchdog).
  ///
  /// - Throws: ``MQTTError`` `stopped` after shutdown, `cancelled` when the task is cancelled.
  public func ping() async throws(MQTTError) {
    try await perform { waiter in .ping(waiter) }
  }

  /// Publishes a message without waiting; its fate shows in ``statistics``.
  public func enqueue(_ message: MQTTMessage) {
    observer?(message)
    core.send(.publish(message, nil))
  }

  /// Publishes an answer to a request without waiting, ahead of the publications still
  /// queued: it goes out with the next room in the in-flight window, so that while the broker
  /// takes publications more slowly than they come, a response does not wait behind the
  /// backlog. Answers keep their order among themselves; use it only for topics that carry
  /// nothing but answers (every topic keeps its order). Its fate shows in ``statistics``.
  ///
  /// - Parameter message: The answer.
  public func answer(_ message: MQTTMessage) {
    observer?(message)
    core.send(.publishAhead(message))
  }

  /// Hands several messages to the client in order with one wake-up of its loop thread (the
  /// fast path of a bridge step): each as ``enqueue(_:)`` or ``setRetainedState(_:)`` would.
  ///
  /// - Parameter batch: The messages, in order.
  public func send(_ batch: [MQTTHandOff]) {
    if let observer {
      for handOff in batch {
        switch handOff {
        case .enqueue(let message), .answer(let message), .retainedState(let message),
          .publishOnce(let message):
          observer(message)
        case .forgetRetained, .forgetRetainedBelow: break
        }
      }
    }
    // One array for the batch (the path of every value: no array per hand-off).
    var commands: [Command] = []
    commands.reserveCapacity(batch.count)
    for handOff in batch {
      switch handOff {
      case .enqueue(let message): commands.append(.publish(message, nil))
      case .answer(let message): commands.append(.publishAhead(message))
      case .retainedState(let message): commands.append(.retain(message))
      case .publishOnce(let message):
        commands.append(.publish(message, nil))
        commands.append(.forgetRetained(message.topic))
      case .forgetRetained(let topic): commands.append(.forgetRetained(topic))
      case .forgetRetainedBelow(let prefix): commands.append(.forgetRetainedBelow(prefix))
      }
    }
    core.send(contentsOf: commands)
  }

  /// Publishes `message` now and again after every reconnect (for retained state such as a
  /// gateway's `online` status). A later call for the same topic replaces it.
  public func setRetainedState(_ message: MQTTMessage) {
    observer?(message)
    core.send(.retain(message))
  }

  /// Stops re-publishing the retained state of `topic` after reconnects.
  public func forgetRetainedState(topic: String) {
    core.send(.forgetRetained(topic))
  }

  /// Stops re-publishing the retained state of every topic that starts with `prefix` (the
  /// device-level topics of a device another gateway of the fleet now owns).
  public func forgetRetainedState(below prefix: String) {
    core.send(.forgetRetainedBelow(prefix))
  }

  /// Subscribes to a topic filter, now and after every reconnect, without waiting for the
  /// broker's SUBACK: commands are carried out in order, so a subscription added before
  /// ``setRetainedState(_:)`` reaches the broker before that publication, also after a reconnect.
  ///
  /// - Parameters:
  ///   - filter: The topic filter.
  ///   - qos: The maximum QoS.
  public func addSubscription(_ filter: String, qos: MQTTQoS = .atLeastOnce) {
    core.send(.subscribe(filter, qos, nil))
  }

  /// Subscribes to a topic filter, now and after every reconnect, and waits for the broker's
  /// SUBACK (while disconnected: until the next connection's SUBACK).
  /// - Throws: ``MQTTError`` `subscription_refused` when the broker refuses it,
  ///   `invalid_argument` for a malformed filter, `stopped` when the client stopped.
  public func subscribe(_ filter: String, qos: MQTTQoS = .atLeastOnce) async throws(MQTTError) {
    try await perform { waiter in .subscribe(filter, qos, waiter) }
  }

  /// Removes a subscription and waits for the broker's UNSUBACK when connected.
  public func unsubscribe(_ filter: String) async throws(MQTTError) {
    try await perform { waiter in .unsubscribe(filter, waiter) }
  }

  /// Publishes `finalMessages`, then the configured last will when `publishingWill` (a clean
  /// DISCONNECT tells the broker not to send it: the client says it itself, for example a
  /// retained `offline` state), waits up to `timeout` seconds for everything queued to be
  /// acknowledged, disconnects cleanly and stops the loop thread.
  ///
  /// Returns within `timeout` + 2 seconds whatever the broker does; when not connected it
  /// drops what is queued and returns at once.
  ///
  /// - Parameters:
  ///   - publishingWill: Whether the last will goes out after `finalMessages`.
  ///   - finalMessages: What to publish before disconnecting.
  ///   - timeout: How long to wait for the broker's acknowledgements, in seconds.
  ///
  /// A cancelled caller stops waiting at once; the shutdown itself goes on.
  public func shutdown(
    publishingWill: Bool = false, finalMessages: [MQTTMessage] = [], timeout: Double = 5
  ) async {
    if !core.started.withLock({ $0 }) { core.start() }
    try? await perform(evenIfCancelled: true) { waiter in
      .shutdown(finalMessages, will: publishingWill, timeout: timeout, waiter)
    }
  }

  /// A snapshot of the client's counters.
  public var statistics: MQTTStatistics { core.stats.withLock { $0 } }

  /// Sends a command and waits for its outcome; a cancelled caller stops waiting at once with
  /// ``MQTTError/Code/cancelled`` (a command already sent still runs; one whose caller was
  /// cancelled before it was sent is not sent, unless `evenIfCancelled`).
  private func perform(
    evenIfCancelled: Bool = false, _ make: @escaping @Sendable (Waiter) -> Command
  ) async throws(MQTTError) {
    let slot = WaiterSlot()
    do {
      try await withTaskCancellationHandler {
        try await withCheckedThrowingContinuation { continuation in
          let waiter = Waiter(continuation)
          // A waiter answers once: one answered `cancelled` already ignores the command's end.
          if slot.install(waiter) || evenIfCancelled { core.send(make(waiter)) }
        }
      } onCancel: {
        slot.cancel()
      }
    } catch let error as MQTTError {
      throw error
    } catch {
      throw MQTTError(.stopped, "\(error)")
    }
  }
}

/// The messages an ``MQTTClient`` receives, in arrival order; iterate it from one task.
public struct MQTTMessageStream: AsyncSequence, Sendable {
  /// A received message.
  public typealias Element = MQTTMessage
  private let base: AsyncStream<MQTTMessage>
  private let core: ClientCore

  init(base: AsyncStream<MQTTMessage>, core: ClientCore) {
    self.base = base
    self.core = core
  }

  /// Creates the iterator.
  public func makeAsyncIterator() -> AsyncIterator {
    AsyncIterator(base: base.makeAsyncIterator(), core: core)
  }

  /// Hands out messages and gives their bytes back to the buffer's budget.
  public struct AsyncIterator: AsyncIteratorProtocol {
    private var base: AsyncStream<MQTTMessage>.AsyncIterator
    private let core: ClientCore

    init(base: AsyncStream<MQTTMessage>.AsyncIterator, core: ClientCore) {
      self.base = base
      self.core = core
    }

    /// The next message, or `nil` once the client has stopped.
    public mutating func next() async -> MQTTMessage? {
      guard let message = await base.next() else { return nil }
      let size = message.payload.count
      if size > 0 { core.stats.withLock { $0.incomingBytes -= size } }
      return message
    }
  }
}

/// One message of a batch handed to ``MQTTClient/send(_:)``.
public enum MQTTHandOff: Sendable {
  /// Publish without waiting, as ``MQTTClient/enqueue(_:)``.
  case enqueue(MQTTMessage)
  /// Publish without waiting, ahead of what is queued, as ``MQTTClient/answer(_:)``.
  case answer(MQTTMessage)
  /// Publish now and after every reconnect, as ``MQTTClient/setRetainedState(_:)``.
  case retainedState(MQTTMessage)
  /// Publish without waiting and never again after a reconnect, even when retained (a claim
  /// that another gateway may have replaced meanwhile).
  case publishOnce(MQTTMessage)
  /// Stop re-publishing a topic's retained state, as
  /// ``MQTTClient/forgetRetainedState(topic:)``.
  case forgetRetained(String)
  /// Stop re-publishing the retained state of every topic below a prefix, as
  /// ``MQTTClient/forgetRetainedState(below:)``.
  case forgetRetainedBelow(String)
}
