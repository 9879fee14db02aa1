import Backoff
import DequeModule
import Logging
import OrderedCollections

/// What an ``MQTTSession`` asks of the connection to the broker: one call per MQTT operation,
/// each answered at once (libmosquitto's calls do not block). ``MosquittoHandle`` is the real
/// one; tests use a fake that answers with literal results.
protocol MQTTTransport {
  /// Opens the connection (or opens it again); the CONNACK arrives later.
  mutating func connect() -> MQTTTransportStatus
  /// Hands a message over.
  mutating func publish(_ message: MQTTMessage) -> MQTTSendResult
  /// Sends a SUBSCRIBE.
  mutating func subscribe(_ filter: String, qos: MQTTQoS) -> MQTTSendResult
  /// Sends an UNSUBSCRIBE.
  mutating func unsubscribe(_ filter: String) -> MQTTSendResult
  /// Sends a DISCONNECT and closes.
  mutating func disconnect()
  /// Whether the socket is open.
  var isOpen: Bool { get }
}

/// The outcome of ``MQTTTransport/connect()``.
enum MQTTTransportStatus: Sendable, Hashable {
  /// Connecting; the CONNACK will tell.
  case started
  /// This attempt failed; try again later.
  case failed(MQTTError)
  /// The settings can never work (bad host, port or keepalive): stop.
  case invalid(MQTTError)
}

/// The outcome of handing a packet to the transport.
enum MQTTSendResult: Sendable, Hashable {
  /// Written or queued for writing, with its message id.
  case sent(mid: Int32)
  /// Not connected; the library keeps a QoS ≥ 1 publication under `mid` and sends it after the
  /// reconnect.
  case noConnection(mid: Int32)
  /// Refused for good (malformed topic, payload too large, …).
  case refused(MQTTError)
}

/// The MQTT client's session logic, pure: connection phases with one ``Backoff``, the offline
/// queue and its drop policy, the in-flight window, subscriptions (sent again after every
/// connection), retained state (re-published after every connection), and an orderly shutdown.
///
/// The loop thread (``ClientCore``) feeds it commands, what libmosquitto's callbacks reported,
/// and the time; it calls the ``MQTTTransport`` for every packet. Whoever waits for an outcome
/// holds a ``Waiter`` the session answers. Tested with literal event sequences
/// (`MQTTSessionTests`).
struct MQTTSession {
  /// A publication and whoever waits for its outcome.
  struct Outgoing {
    var message: MQTTMessage
    var waiter: Waiter?
  }

  /// Where the connection stands.
  enum Phase: Sendable, Hashable {
    /// Not connected; the next attempt at `retryAt`.
    case idle(retryAt: Double)
    /// Connecting since `since`, waiting for the CONNACK.
    case awaitingConnack(since: Double)
    /// Connected.
    case connected
    /// Shutting down: sending what is queued until `deadline`.
    case draining(deadline: Double)
    /// Shutting down: DISCONNECT sent, waiting until `deadline` for the socket to close.
    case disconnecting(deadline: Double)
    /// Done; every command is refused.
    case stopped
  }

  /// The figures the session owns in ``MQTTStatistics``.
  struct Counters: Sendable, Hashable {
    var connected = false
    var published: UInt64 = 0
    var dropped: UInt64 = 0
    var reconnects: UInt64 = 0
    var connectionFailures: UInt64 = 0
    var queued = 0
    var inflight = 0
  }

  let configuration: MQTTClientConfiguration
  let logger: Logger
  private(set) var phase: Phase = .idle(retryAt: 0)
  private(set) var counters = Counters()
  /// Events for the client's event stream, oldest first (``takeEvents()``).
  private var events: [MQTTClientEvent] = []

  private var everConnected = false
  private var backoff: Backoff
  private var pending = Deque<Outgoing>()
  /// Answers to requests (``Command/publishAhead(_:)``), handed over before `pending`: a
  /// response does not wait behind a backlog of other publications. Their topics are their
  /// own, so every topic keeps its order. Both queues together hold at most the offline
  /// queue's capacity.
  private var ahead = Deque<Outgoing>()
  /// The most messages `pending` held since its storage was last new: storage that grew past
  /// ``releasedQueueSize`` during a backlog (every retained topic re-published after a broker
  /// restart) is given back once the backlog has drained, not kept for good.
  private var pendingPeak = 0
  private var inflight: [Int32: Outgoing] = [:]
  private var inflightReliable = 0
  private var subscriptions: [String: MQTTQoS] = [:]
  private var subscribeWaiters: [String: [Waiter]] = [:]
  private var subackFilters: [Int32: String] = [:]
  private var unsubackWaiters: [Int32: Waiter] = [:]
  /// The newest retained message of every topic this client published retained, in the order
  /// the topics first appeared: re-published after every accepted connection.
  private var retained = OrderedDictionary<String, MQTTMessage>()
  /// The last error or warning libmosquitto logged: its text, added to the next failure's
  /// message (never used to classify it).
  private var lastLibraryMessage: String?
  /// Why the broker refused the last CONNECT: the error of the loss that follows.
  private var refusal: MQTTError?
  private var shutdownWaiter: Waiter?
  /// Outcomes for waiters, delivered by ``deliverAnswers()`` once the figures are published.
  private var answers: [(waiter: Waiter, error: MQTTError?)] = []

  init(configuration: MQTTClientConfiguration, logger: Logger) {
    self.configuration = configuration
    self.logger = logger
    backoff = Backoff(
      minimum: configuration.minReconnectDelay, maximum: configuration.maxReconnectDelay)
  }

  /// Whether the session has ended.
  var isStopped: Bool { phase == .stopped }

  /// The subscriptions sent after every connection.
  var subscribedFilters: [String: MQTTQoS] { subscriptions }

  /// The retained state re-published after every connection, by topic.
  var retainedTopics: [String] { Array(retained.keys) }

  /// Answers the waiters whose operations ended since the last call, in order. The loop
  /// thread calls it after publishing ``counters``, so that whoever wakes up sees them.
  mutating func deliverAnswers() {
    let ready = answers
    answers.removeAll(keepingCapacity: true)
    for (waiter, error) in ready {
      if let error { waiter.resume(throwing: error) } else { waiter.resume() }
    }
  }

  /// The events produced since the last call.
  mutating func takeEvents() -> [MQTTClientEvent] {
    defer { events.removeAll(keepingCapacity: true) }
    return events
  }

  /// The next time the session has something to do without any input: a retry, the CONNACK's
  /// or a shutdown's deadline, at most one second away; while connected, when libmosquitto's
  /// keepalive needs looking at: a tenth of `keepalive` (at least a second; a minute without
  /// keepalive), so that an idle connection does not wake the loop thread every second, while a
  /// ping still leaves well within the 1.5 × keepalive after which the broker gives up on a
  /// silent client.
  func nextDeadline(now: Double) -> Double {
    switch phase {
    case .idle(let retryAt): min(now + 1, retryAt)
    case .draining(let deadline), .disconnecting(let deadline): min(now + 1, deadline)
    case .connected:
      configuration.keepalive > 0 ? now + max(1, Double(configuration.keepalive) / 10) : now + 60
    default: now + 1
    }
  }

  // MARK: inputs

  /// Carries out one command of the client.
  mutating func execute(_ command: Command, now: Double, on transport: inout some MQTTTransport) {
    if phase == .stopped {
      Self.refuse(command)
      return
    }
    switch command {
    case .publish(let message, let waiter):
      if message.retain { remember(message) }
      enqueue(Outgoing(message: message, waiter: waiter))
      flushPending(on: &transport)
    case .publishAhead(let message):
      if message.retain { remember(message) }
      enqueue(Outgoing(message: message, waiter: nil), ahead: true)
      flushPending(on: &transport)
    case .subscribe(let filter, let qos, let waiter):
      subscriptions[filter] = qos
      if let waiter { subscribeWaiters[filter, default: []].append(waiter) }
      if phase == .connected { sendSubscribe(filter, qos, on: &transport) }
    case .unsubscribe(let filter, let waiter):
      subscriptions[filter] = nil
      guard phase == .connected else {
        answer(waiter, nil)
        return
      }
      if case .sent(let mid) = transport.unsubscribe(filter), let waiter {
        unsubackWaiters[mid] = waiter
      } else {
        answer(waiter, nil)
      }
    case .retain(let message):
      remember(message)
      // While disconnected, the next connection's resync publishes it.
      if phase == .connected {
        enqueue(Outgoing(message: message, waiter: nil))
        flushPending(on: &transport)
      }
    case .forgetRetained(let topic):
      retained[topic] = nil
    case .forgetRetainedBelow(let prefix):
      retained.removeAll { $0.key.hasPrefix(prefix) }
    case .ping(let waiter):
      answer(waiter, nil)
    case .stop:
      phase = .stopped
    case .shutdown(let finals, let will, let timeout, let waiter):
      shutdownWaiter = waiter
      guard phase == .connected else {
        phase = .stopped
        return
      }
      // A clean DISCONNECT tells the broker not to publish the will: its message goes last,
      // from here, when the caller announces its going.
      let last = will ? configuration.will.map { [$0] } ?? [] : []
      for message in finals + last {
        hand(Outgoing(message: message, waiter: nil), on: &transport)
      }
      phase = .draining(deadline: now + max(0, timeout))
    }
    updateDepths()
  }

  /// Lets time pass: connects when due, gives up on a CONNACK that does not come, moves a
  /// shutdown forward.
  mutating func tick(now: Double, on transport: inout some MQTTTransport) {
    switch phase {
    case .idle(let retryAt) where now >= retryAt:
      switch transport.connect() {
      case .started:
        phase = .awaitingConnack(since: now)
        logger.debug(
          "MQTT connecting",
          metadata: ["mqtt.broker": "\(configuration.host):\(configuration.port)"])
      case .failed(let error):
        scheduleRetry(after: error, wasConnected: false, now: now)
      case .invalid(let error):
        logger.critical("MQTT client stopped: \(error.message)")
        events.append(.connectionFailed(error, retryIn: .infinity))
        phase = .stopped
      }
    case .awaitingConnack(let since) where now - since > Double(max(10, configuration.keepalive)):
      connectionLost(
        MQTTError(
          .network,
          "no CONNACK from the broker within \(max(10, configuration.keepalive)) s"), now: now)
    case .draining(let deadline):
      let done = pending.isEmpty && ahead.isEmpty && inflight.isEmpty
      if done || now >= deadline {
        if !done {
          logger.warning(
            "MQTT shutdown: \(pending.count + ahead.count + inflight.count) message(s) not acknowledged in time"
          )
        }
        transport.disconnect()
        phase = .disconnecting(deadline: now + 2)
      }
    case .disconnecting(let deadline):
      if now >= deadline || !transport.isOpen { phase = .stopped }
    default:
      break
    }
  }

  /// The broker answered the CONNECT.
  ///
  /// - Parameters:
  ///   - refusal: Why the broker refused (classified by its reason code), `nil` when it
  ///     accepted.
  ///   - sessionPresent: Whether the broker kept a session.
  ///   - transport: Where subscriptions and retained state go again.
  mutating func connack(
    refusal: MQTTError?, sessionPresent: Bool, on transport: inout some MQTTTransport
  ) {
    if let refusal {
      // libmosquitto closes the connection next; this is why.
      self.refusal = refusal
      return
    }
    self.refusal = nil
    let reconnect = everConnected
    everConnected = true
    backoff.reset()
    phase = .connected
    lastLibraryMessage = nil
    counters.connected = true
    if reconnect { counters.reconnects += 1 }
    logger.info(
      "MQTT connected",
      metadata: [
        "mqtt.broker": "\(configuration.host):\(configuration.port)",
        "mqtt.session_present": "\(sessionPresent)",
      ])
    events.append(.connected(sessionPresent: sessionPresent, reconnect: reconnect))
    resync(on: &transport)
  }

  /// The connection closed: cleanly (`error` nil) after our DISCONNECT, or not.
  mutating func disconnected(_ error: MQTTError?, now: Double) {
    if error == nil, case .disconnecting = phase {
      phase = .stopped
      return
    }
    connectionLost(error ?? MQTTError(.network, "the connection was lost"), now: now)
  }

  /// The connection failed or was lost (`error` as the transport describes it); does nothing
  /// when the loss was already handled.
  mutating func connectionLost(_ error: MQTTError, now: Double) {
    let wasConnected: Bool
    switch phase {
    case .connected: wasConnected = true
    case .draining, .disconnecting:
      // Lost while shutting down: stop now.
      phase = .stopped
      return
    case .stopped, .idle: return
    case .awaitingConnack: wasConnected = false
    }
    counters.connected = false
    // QoS 0 packets libmosquitto had not written yet are gone with the socket.
    for (mid, out) in inflight where out.message.qos == .atMostOnce {
      inflight[mid] = nil
      answer(out.waiter, MQTTError(.network, "connection lost before the write"))
    }
    updateDepths()
    scheduleRetry(after: explain(error), wasConnected: wasConnected, now: now)
  }

  /// libmosquitto logged an error or a warning (it explains the next failure).
  mutating func libraryMessage(_ text: String) {
    lastLibraryMessage = text
  }

  /// The broker acknowledged a publication (or refused it: `refusal`).
  mutating func published(mid: Int32, refusal: String?, on transport: inout some MQTTTransport) {
    guard let out = inflight.removeValue(forKey: mid) else { return }
    if out.message.qos != .atMostOnce { inflightReliable -= 1 }
    if refusal == nil { counters.published += 1 }
    // Refill the window (and the depth counters) before anyone waiting looks at them.
    flushPending(on: &transport)
    if let refusal {
      answer(out.waiter, MQTTError(.publishRefused, "\(out.message.topic): \(refusal)"))
    } else {
      answer(out.waiter, nil)
    }
  }

  /// The broker answered a SUBSCRIBE (`granted`: its reason codes).
  mutating func subscribed(mid: Int32, granted: [Int32]) {
    guard let filter = subackFilters.removeValue(forKey: mid) else { return }
    let waiters = subscribeWaiters.removeValue(forKey: filter) ?? []
    if let code = granted.first, code >= 0x80 {
      logger.error("MQTT broker refused subscription", metadata: ["mqtt.topic": "\(filter)"])
      let error = MQTTError(.subscriptionRefused, "broker refused subscription to \(filter)")
      for waiter in waiters { answer(waiter, error) }
    } else {
      for waiter in waiters { answer(waiter, nil) }
    }
  }

  /// The broker answered an UNSUBSCRIBE.
  mutating func unsubscribed(mid: Int32) {
    answer(unsubackWaiters.removeValue(forKey: mid), nil)
  }

  /// Ends the session: answers everyone still waiting and reports ``MQTTClientEvent/stopped``.
  mutating func finish(on transport: inout some MQTTTransport) {
    if transport.isOpen { transport.disconnect() }
    phase = .stopped
    let stopped = MQTTError(.stopped, "the MQTT client has stopped")
    for out in ahead { answer(out.waiter, stopped) }
    for out in pending { answer(out.waiter, stopped) }
    for out in inflight.values { answer(out.waiter, stopped) }
    for waiters in subscribeWaiters.values { for w in waiters { answer(w, stopped) } }
    for waiter in unsubackWaiters.values { answer(waiter, nil) }
    pending.removeAll()
    ahead.removeAll()
    inflight.removeAll()
    inflightReliable = 0
    subscribeWaiters.removeAll()
    unsubackWaiters.removeAll()
    counters.connected = false
    updateDepths()
    events.append(.stopped)
    answer(shutdownWaiter, nil)
    shutdownWaiter = nil
  }

  /// Answers a command that arrives after the session ended.
  static func refuse(_ command: Command) {
    switch command {
    case .publish(_, let waiter), .subscribe(_, _, let waiter), .unsubscribe(_, let waiter):
      waiter?.resume(throwing: MQTTError(.stopped, "the MQTT client has stopped"))
    case .ping(let waiter):
      waiter.resume(throwing: MQTTError(.stopped, "the MQTT client has stopped"))
    case .shutdown(_, _, _, let waiter): waiter.resume()
    case .publishAhead, .retain, .forgetRetained, .forgetRetainedBelow, .stop: break
    }
  }

  // MARK: internals

  private mutating func answer(_ waiter: Waiter?, _ error: MQTTError?) {
    if let waiter { answers.append((waiter, error)) }
  }

  private mutating func scheduleRetry(after error: MQTTError, wasConnected: Bool, now: Double) {
    let delay = backoff.nextDelay()
    phase = .idle(retryAt: now + delay)
    counters.connectionFailures += 1
    let retry = (delay * 100).rounded() / 100
    if wasConnected {
      logger.warning(
        "MQTT connection lost: \(error.message); reconnecting in \(retry) s",
        metadata: ["mqtt.error": "\(error.code.rawValue)"])
      events.append(.disconnected(error, retryIn: retry))
    } else {
      logger.error(
        "MQTT connection to \(configuration.host):\(configuration.port) failed: \(error.message); retrying in \(retry) s",
        metadata: ["mqtt.error": "\(error.code.rawValue)"])
      events.append(.connectionFailed(error, retryIn: retry))
    }
  }

  /// The error of a lost connection: the broker's refusal of the CONNECT when there was one
  /// (classified by its reason code), else `error` as the transport classified it by its
  /// return code; what libmosquitto logged last is added to the message as detail.
  private mutating func explain(_ error: MQTTError) -> MQTTError {
    var explained = refusal ?? error
    refusal = nil
    if let detail = lastLibraryMessage, !explained.message.contains(detail) {
      explained.message += " (\(detail))"
    }
    lastLibraryMessage = nil
    return explained
  }

  /// After each accepted connection: subscribe again, re-publish retained state, flush.
  private mutating func resync(on transport: inout some MQTTTransport) {
    for (filter, qos) in subscriptions.sorted(by: { $0.key < $1.key }) {
      sendSubscribe(filter, qos, on: &transport)
    }
    // Always, even when the broker reports a present session: state set while disconnected
    // is only here, and a broker restarted without persistence (mosquitto's default) has lost
    // the rest. Re-publishing a retained message the broker still holds changes nothing.
    for message in retained.values {
      hand(Outgoing(message: message, waiter: nil), on: &transport)
    }
    flushPending(on: &transport)
  }

  /// Keeps `message` as its topic's retained state; an empty retained payload clears it. A
  /// clear made while disconnected, of a topic that has a state here, takes that state's place
  /// until it is handed over (``hand(_:on:)``): the offline queue may drop its copy, and a
  /// clear lost is a stale retained message for good. The table never grows by clears.
  private mutating func remember(_ message: MQTTMessage) {
    if !message.payload.isEmpty {
      retained[message.topic] = message
    } else if phase == .connected || retained[message.topic] == nil {
      retained[message.topic] = nil
    } else {
      retained[message.topic] = message
    }
  }

  /// A retained clear went to the library: no longer kept for the next connection (unless a
  /// newer state replaced it meanwhile).
  private mutating func handedOver(_ message: MQTTMessage) {
    guard message.retain, message.payload.isEmpty, retained[message.topic]?.payload.isEmpty == true
    else { return }
    retained[message.topic] = nil
  }

  private mutating func sendSubscribe(
    _ filter: String, _ qos: MQTTQoS, on transport: inout some MQTTTransport
  ) {
    let error: MQTTError
    switch transport.subscribe(filter, qos: qos) {
    case .sent(let mid):
      subackFilters[mid] = filter
      return
    case .noConnection:
      // Kept: sent again after the next connection.
      error = MQTTError(.network, "subscribe to '\(filter)': not connected")
    case .refused(let refusal):
      subscriptions[filter] = nil
      error = MQTTError(.invalidArgument, "subscribe to '\(filter)': \(refusal.message)")
    }
    logger.error("MQTT subscribe failed: \(error.message)", metadata: ["mqtt.topic": "\(filter)"])
    for waiter in subscribeWaiters.removeValue(forKey: filter) ?? [] {
      answer(waiter, error)
    }
  }

  /// Queues `out` behind the other publications, or `ahead` of them behind earlier answers.
  /// When both queues together are full, the drop policy picks the message lost: the newest
  /// (`out`), or the oldest (the oldest other publication while there is one).
  private mutating func enqueue(_ out: Outgoing, ahead toFront: Bool = false) {
    guard pending.count + ahead.count >= configuration.offlineQueueCapacity else {
      store(out, ahead: toFront)
      return
    }
    let victim: Outgoing
    if configuration.dropPolicy == .dropOldest, let oldest = pending.popFirst() ?? ahead.popFirst()
    {
      victim = oldest
      store(out, ahead: toFront)
    } else {
      victim = out
      updateDepths()
    }
    counters.dropped += 1
    answer(
      victim.waiter,
      MQTTError(.dropped, "offline queue full; dropped a message to '\(victim.message.topic)'"))
  }

  private mutating func store(_ out: Outgoing, ahead toFront: Bool) {
    if toFront {
      ahead.append(out)
    } else {
      pending.append(out)
      pendingPeak = max(pendingPeak, pending.count)
    }
    updateDepths()
  }

  /// Queues and tables this large are made anew once empty (``pendingPeak``).
  static let releasedQueueSize = 1024

  /// Gives back the storage of an empty queue or in-flight table that grew large.
  private mutating func releaseDrainedStorage() {
    if pending.isEmpty && pendingPeak > Self.releasedQueueSize {
      pending = Deque()
      pendingPeak = 0
    }
    if inflight.isEmpty && inflight.capacity > Self.releasedQueueSize {
      inflight = [:]
    }
  }

  /// Whether acknowledgements are needed soon: publications wait for room in the in-flight
  /// window, or half of it is taken.
  var needsAcknowledgements: Bool {
    !pending.isEmpty || !ahead.isEmpty || inflightReliable * 2 >= configuration.maxInflight
  }

  private mutating func flushPending(on transport: inout some MQTTTransport) {
    defer {
      releaseDrainedStorage()
      updateDepths()
    }
    switch phase {
    case .connected, .draining: break
    default: return
    }
    // Answers first (``ahead``), then the rest, each in order.
    while let (next, fromAhead) = ahead.first.map({ ($0, true) })
      ?? pending.first.map({ ($0, false) })
    {
      if next.message.qos != .atMostOnce && inflightReliable >= configuration.maxInflight {
        return
      }
      if fromAhead { ahead.removeFirst() } else { pending.removeFirst() }
      if !hand(next, on: &transport) {
        if fromAhead { ahead.prepend(next) } else { pending.prepend(next) }
        return
      }
    }
  }

  /// Hands a message to the transport. Returns false when it must stay in our queue.
  @discardableResult
  private mutating func hand(_ out: Outgoing, on transport: inout some MQTTTransport) -> Bool {
    switch transport.publish(out.message) {
    case .sent(let mid):
      track(out, mid: mid)
      handedOver(out.message)
      return true
    case .noConnection(let mid):
      // libmosquitto still keeps a QoS ≥ 1 message and sends it after the reconnect: it is in
      // flight, not ours to queue again. QoS 0 stays with us.
      guard out.message.qos != .atMostOnce else { return false }
      track(out, mid: mid)
      handedOver(out.message)
      return true
    case .refused(let error):
      logger.error(
        "MQTT publish refused: \(error.message)", metadata: ["mqtt.topic": "\(out.message.topic)"])
      answer(
        out.waiter,
        MQTTError(.invalidArgument, "publish to '\(out.message.topic)': \(error.message)"))
      return true
    }
  }

  private mutating func track(_ out: Outgoing, mid: Int32) {
    inflight[mid] = out
    if out.message.qos != .atMostOnce { inflightReliable += 1 }
  }

  private mutating func updateDepths() {
    counters.queued = pending.count + ahead.count
    counters.inflight = inflight.count
  }
}
