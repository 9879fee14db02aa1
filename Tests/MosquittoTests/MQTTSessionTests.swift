import Glibc
import Logging
import Testing

@testable import Mosquitto

/// A transport that answers with literal results and records what the session sent.
private struct FakeTransport: MQTTTransport {
  var connectResults: [MQTTTransportStatus] = []
  /// While false, publications answer `noConnection` (libmosquitto between a loss and its
  /// callback).
  var linkUp = true
  var refusedTopics: Set<String> = []
  var open = false
  var nextMid: Int32 = 1
  var connects = 0
  var disconnects = 0
  var published: [MQTTMessage] = []
  var subscribed: [String] = []
  var unsubscribed: [String] = []

  mutating func connect() -> MQTTTransportStatus {
    connects += 1
    let result = connectResults.isEmpty ? .started : connectResults.removeFirst()
    if result == .started { open = true }
    return result
  }

  mutating func publish(_ message: MQTTMessage) -> MQTTSendResult {
    if refusedTopics.contains(message.topic) {
      return .refused(MQTTError(.invalidArgument, "Invalid topic"))
    }
    defer { nextMid += 1 }
    guard linkUp else { return .noConnection(mid: nextMid) }
    published.append(message)
    return .sent(mid: nextMid)
  }

  mutating func subscribe(_ filter: String, qos: MQTTQoS) -> MQTTSendResult {
    defer { nextMid += 1 }
    guard linkUp else { return .noConnection(mid: nextMid) }
    subscribed.append(filter)
    return .sent(mid: nextMid)
  }

  mutating func unsubscribe(_ filter: String) -> MQTTSendResult {
    defer { nextMid += 1 }
    unsubscribed.append(filter)
    return .sent(mid: nextMid)
  }

  mutating func disconnect() {
    disconnects += 1
    open = false
  }

  var isOpen: Bool { open }
}

@Suite("MQTT session: the client's logic with literal event sequences")
struct MQTTSessionTests {
  static func configuration(
    queue: Int = 100, policy: MQTTClientConfiguration.DropPolicy = .dropOldest,
    inflight: Int = 100
  ) -> MQTTClientConfiguration {
    MQTTClientConfiguration(
      host: "broker", clientID: "test", minReconnectDelay: 1, maxReconnectDelay: 8,
      offlineQueueCapacity: queue, dropPolicy: policy, maxInflight: inflight)
  }

  static func message(_ topic: String, qos: MQTTQoS = .atLeastOnce, retain: Bool = false)
    -> MQTTMessage
  {
    MQTTMessage(topic: topic, payload: Array(topic.utf8), qos: qos, retain: retain)
  }

  static var logger: Logger {
    var logger = Logger(label: "test.session")
    logger.logLevel = .critical
    return logger
  }

  /// A session connected through `transport` at time 0.
  fileprivate static func connected(
    _ configuration: MQTTClientConfiguration = configuration(), _ transport: inout FakeTransport
  ) -> MQTTSession {
    var session = MQTTSession(configuration: configuration, logger: logger)
    session.tick(now: 0, on: &transport)
    session.connack(refusal: nil, sessionPresent: false, on: &transport)
    return session
  }

  @Test(
    "offline queue: kept while disconnected, sent in order at the connection; drop_oldest drops the oldest, drop_newest the newest, both counted",
    arguments: [
      (MQTTClientConfiguration.DropPolicy.dropOldest, ["m3", "m4", "m5"]),
      (.dropNewest, ["m1", "m2", "m3"]),
    ])
  func offlineQueue(policy: MQTTClientConfiguration.DropPolicy, sent: [String]) {
    var transport = FakeTransport()
    var session = MQTTSession(
      configuration: Self.configuration(queue: 3, policy: policy), logger: Self.logger)
    for index in 1...5 {
      session.execute(.publish(Self.message("m\(index)"), nil), now: 0, on: &transport)
    }
    #expect(transport.published.isEmpty)
    #expect(session.counters.queued == 3)
    #expect(session.counters.dropped == 2)
    session.tick(now: 0, on: &transport)
    #expect(session.phase == .awaitingConnack(since: 0))
    session.connack(refusal: nil, sessionPresent: false, on: &transport)
    #expect(transport.published.map(\.topic) == sent)
    #expect(session.counters.queued == 0 && session.counters.inflight == 3)
    #expect(session.takeEvents() == [.connected(sessionPresent: false, reconnect: false)])
  }

  @Test(
    "connected and idle, the loop wakes for the keepalive every tenth of it (at least every second); otherwise within a second"
  )
  func idleDeadline() {
    var transport = FakeTransport()
    var configuration = Self.configuration()
    var idle = MQTTSession(configuration: configuration, logger: Self.logger)
    #expect(idle.nextDeadline(now: 100) <= 100)  // the first attempt is due at once
    idle.tick(now: 100, on: &transport)
    #expect(idle.nextDeadline(now: 100) == 101)  // awaiting the CONNACK
    #expect(Self.connected(configuration, &transport).nextDeadline(now: 100) == 106)
    configuration.keepalive = 5
    #expect(Self.connected(configuration, &transport).nextDeadline(now: 100) == 101)
    configuration.keepalive = 0  // none: nothing to look at but once a minute
    #expect(Self.connected(configuration, &transport).nextDeadline(now: 100) == 160)
  }

  @Test("in-flight window: at most max_inflight QoS 1 unacknowledged; each PUBACK lets one more go")
  func inflightWindow() {
    var transport = FakeTransport()
    var session = Self.connected(Self.configuration(inflight: 2), &transport)
    for index in 1...5 {
      session.execute(.publish(Self.message("q\(index)"), nil), now: 1, on: &transport)
    }
    #expect(transport.published.map(\.topic) == ["q1", "q2"])
    #expect(session.counters.inflight == 2 && session.counters.queued == 3)
    session.published(mid: 1, refusal: nil, on: &transport)
    #expect(transport.published.map(\.topic) == ["q1", "q2", "q3"])
    session.published(mid: 2, refusal: nil, on: &transport)
    session.published(mid: 3, refusal: "Quota exceeded", on: &transport)
    #expect(transport.published.map(\.topic) == ["q1", "q2", "q3", "q4", "q5"])
    #expect(session.counters.published == 2)
    // QoS 0 is not held back by the window.
    session.execute(
      .publish(Self.message("fast", qos: .atMostOnce), nil), now: 1, on: &transport)
    #expect(transport.published.last?.topic == "fast")
  }

  @Test(
    "answers go out ahead of queued publications, in their own order, with the next room in the window"
  )
  func answersAhead() {
    var transport = FakeTransport()
    var session = Self.connected(Self.configuration(inflight: 2), &transport)
    for index in 1...4 {
      session.execute(.publish(Self.message("v\(index)"), nil), now: 1, on: &transport)
    }
    session.execute(.publishAhead(Self.message("r1")), now: 1, on: &transport)
    session.execute(.publishAhead(Self.message("r2")), now: 1, on: &transport)
    #expect(transport.published.map(\.topic) == ["v1", "v2"])
    #expect(session.counters.queued == 4 && session.needsAcknowledgements)
    // Mids: v1 1, v2 2, then each one handed over takes the next.
    for mid in Int32(1)...4 { session.published(mid: mid, refusal: nil, on: &transport) }
    #expect(transport.published.map(\.topic) == ["v1", "v2", "r1", "r2", "v3", "v4"])
    #expect(session.counters.queued == 0)
    // With room in the window an answer goes at once, like any publication.
    for mid in Int32(5)...6 { session.published(mid: mid, refusal: nil, on: &transport) }
    session.execute(.publishAhead(Self.message("r3")), now: 1, on: &transport)
    #expect(transport.published.last?.topic == "r3")
  }

  @Test(
    "a full queue: an answer takes the room of the oldest other publication (drop_oldest), or is itself dropped (drop_newest); answers alone drop the oldest answer",
    arguments: [
      (MQTTClientConfiguration.DropPolicy.dropOldest, ["r1", "v2", "v3"]),
      (.dropNewest, ["v1", "v2", "v3"]),
    ])
  func answersInAFullQueue(policy: MQTTClientConfiguration.DropPolicy, sent: [String]) {
    var transport = FakeTransport()
    var session = MQTTSession(
      configuration: Self.configuration(queue: 3, policy: policy), logger: Self.logger)
    for index in 1...3 {
      session.execute(.publish(Self.message("v\(index)"), nil), now: 0, on: &transport)
    }
    session.execute(.publishAhead(Self.message("r1")), now: 0, on: &transport)
    #expect(session.counters.queued == 3 && session.counters.dropped == 1)
    session.tick(now: 0, on: &transport)
    session.connack(refusal: nil, sessionPresent: false, on: &transport)
    #expect(transport.published.map(\.topic) == sent)

    var answersOnly = FakeTransport()
    var second = MQTTSession(
      configuration: Self.configuration(queue: 2, policy: .dropOldest), logger: Self.logger)
    for index in 1...3 {
      second.execute(.publishAhead(Self.message("a\(index)")), now: 0, on: &answersOnly)
    }
    second.tick(now: 0, on: &answersOnly)
    second.connack(refusal: nil, sessionPresent: false, on: &answersOnly)
    #expect(answersOnly.published.map(\.topic) == ["a2", "a3"])
  }

  @Test(
    "after every reconnect: subscriptions sent again, the newest retained message of each topic re-published, cleared topics not"
  )
  func resubscribeAndRepublishAfterReconnect() {
    var transport = FakeTransport()
    var session = Self.connected(Self.configuration(), &transport)
    session.execute(.subscribe("cmd/#", .atLeastOnce, nil), now: 1, on: &transport)
    session.execute(
      .publish(MQTTMessage(topic: "state", text: "one", qos: .atLeastOnce, retain: true), nil),
      now: 1, on: &transport)
    session.execute(
      .publish(MQTTMessage(topic: "state", text: "two", qos: .atLeastOnce, retain: true), nil),
      now: 1, on: &transport)
    session.execute(
      .publish(MQTTMessage(topic: "gone", text: "x", qos: .atLeastOnce, retain: true), nil),
      now: 1, on: &transport)
    session.execute(
      .publish(MQTTMessage(topic: "gone", payload: [], qos: .atLeastOnce, retain: true), nil),
      now: 1, on: &transport)
    session.execute(
      .retain(MQTTMessage(topic: "online", text: "yes", qos: .atLeastOnce, retain: true)),
      now: 1, on: &transport)
    #expect(transport.subscribed == ["cmd/#"])
    #expect(session.retainedTopics == ["state", "online"])
    _ = session.takeEvents()

    // The connection drops; QoS 1 still in flight stays with the library.
    transport.linkUp = false
    session.disconnected(MQTTError(.network, "The connection was lost."), now: 2)
    guard case .idle(let retryAt) = session.phase else {
      Issue.record("expected idle after the loss, got \(session.phase)")
      return
    }
    #expect(retryAt >= 2.5 && retryAt <= 3)  // 1 s nominal, equal jitter
    #expect(
      session.takeEvents().first.map { event in
        if case .disconnected(let error, _) = event { error.code == .network } else { false }
      } == true)
    transport.linkUp = true
    let before = transport.published.count
    session.tick(now: retryAt, on: &transport)
    session.connack(refusal: nil, sessionPresent: true, on: &transport)
    #expect(transport.connects == 2)
    #expect(transport.subscribed == ["cmd/#", "cmd/#"])
    let again = transport.published.dropFirst(before).map {
      String(decoding: $0.payload, as: UTF8.self)
    }
    #expect(again == ["two", "yes"])
    #expect(session.counters.reconnects == 1)
    #expect(session.takeEvents() == [.connected(sessionPresent: true, reconnect: true)])
  }

  @Test(
    "a retained clear made while disconnected survives the offline queue dropping it: sent at the reconnect, then forgotten"
  )
  func clearSurvivesOverflow() {
    var transport = FakeTransport()
    var session = Self.connected(Self.configuration(queue: 2), &transport)
    session.execute(
      .publish(MQTTMessage(topic: "dev/a", text: "on", qos: .atLeastOnce, retain: true), nil),
      now: 1, on: &transport)
    transport.linkUp = false
    session.disconnected(MQTTError(.network, "The connection was lost."), now: 2)
    session.execute(
      .publish(MQTTMessage(topic: "dev/a", payload: [], qos: .atLeastOnce, retain: true), nil),
      now: 3, on: &transport)
    for index in 1...3 {
      session.execute(.publish(Self.message("adv/\(index)"), nil), now: 3, on: &transport)
    }
    #expect(session.counters.dropped == 2)  // the clear among them
    transport.linkUp = true
    let before = transport.published.count
    session.tick(now: 10, on: &transport)
    session.connack(refusal: nil, sessionPresent: false, on: &transport)
    let sent = transport.published.dropFirst(before)
    #expect(sent.contains { $0.topic == "dev/a" && $0.payload.isEmpty && $0.retain })
    #expect(!sent.contains { $0.topic == "dev/a" && !$0.payload.isEmpty })
    #expect(!session.retainedTopics.contains("dev/a"))

    // Once sent, it is not sent again at the next connection.
    transport.linkUp = false
    session.disconnected(MQTTError(.network, "The connection was lost."), now: 11)
    transport.linkUp = true
    let later = transport.published.count
    session.tick(now: 20, on: &transport)
    session.connack(refusal: nil, sessionPresent: false, on: &transport)
    #expect(!transport.published.dropFirst(later).contains { $0.topic == "dev/a" })

    // A clear of a topic without a state here adds nothing to the table while disconnected
    // (phones rotating their addresses during an outage would grow it without end).
    transport.linkUp = false
    session.disconnected(MQTTError(.network, "The connection was lost."), now: 21)
    let tableSize = session.retainedTopics.count
    for index in 1...100 {
      session.execute(
        .publish(
          MQTTMessage(topic: "gone/\(index)", payload: [], qos: .atLeastOnce, retain: true), nil),
        now: 22, on: &transport)
    }
    #expect(session.retainedTopics.count == tableSize)
  }

  @Test("a QoS 1 message the library takes while the link is down is in flight; QoS 0 stays queued")
  func noConnection() {
    var transport = FakeTransport()
    var session = Self.connected(Self.configuration(), &transport)
    transport.linkUp = false
    session.execute(.publish(Self.message("reliable"), nil), now: 1, on: &transport)
    session.execute(
      .publish(Self.message("best-effort", qos: .atMostOnce), nil), now: 1, on: &transport)
    #expect(session.counters.inflight == 1 && session.counters.queued == 1)
  }

  @Test("connection failures back off (1, 2, 4, 8 s nominal, equal jitter); a CONNACK resets it")
  func backoff() {
    var transport = FakeTransport(
      connectResults: Array(
        repeating: .failed(MQTTError(.connectionRefused, "Connection refused")), count: 5))
    var session = MQTTSession(configuration: Self.configuration(), logger: Self.logger)
    var now = 0.0
    var delays: [Double] = []
    for _ in 0..<5 {
      session.tick(now: now, on: &transport)
      guard case .idle(let retryAt) = session.phase else {
        Issue.record("expected a retry, got \(session.phase)")
        return
      }
      delays.append(retryAt - now)
      // Nothing happens before the retry time.
      session.tick(now: retryAt - 0.01, on: &transport)
      now = retryAt
    }
    for (delay, nominal) in zip(delays, [1.0, 2, 4, 8, 8]) {
      #expect(delay >= nominal / 2 && delay <= nominal)
    }
    #expect(session.counters.connectionFailures == 5)
    #expect(transport.connects == 5)
    session.tick(now: now, on: &transport)
    session.connack(refusal: nil, sessionPresent: false, on: &transport)
    transport.linkUp = false
    session.disconnected(nil, now: now + 1)
    guard case .idle(let retryAt) = session.phase else {
      Issue.record("expected a retry after the loss, got \(session.phase)")
      return
    }
    #expect(retryAt - (now + 1) <= 1)
  }

  @Test("a refused CONNACK explains the loss that follows: not_authorized, not a network error")
  func refusedConnack() {
    var transport = FakeTransport()
    var session = MQTTSession(configuration: Self.configuration(), logger: Self.logger)
    session.tick(now: 0, on: &transport)
    session.connack(
      refusal: MosquittoHandle.connackRefusal(
        5, v5: false, text: "Connection Refused: not authorised."),
      sessionPresent: false, on: &transport)
    session.disconnected(MQTTError(.network, "The connection was lost."), now: 0.1)
    let events = session.takeEvents()
    guard case .connectionFailed(let error, _) = events.first else {
      Issue.record("expected connectionFailed, got \(events)")
      return
    }
    #expect(error.code == .notAuthorized)
    #expect(error.message == "broker refused the credentials (Connection Refused: not authorised.)")
    #expect(session.counters.connected == false)
  }

  @Test(
    "errors are classified by their codes, never by text: CONNACK reason codes, and EPROTO with TLS"
  )
  func classifiedByCode() {
    // MQTT 3.1.1 return codes: 4 bad user name or password, 5 not authorised; the others
    // (1 protocol version, 2 identifier, 3 server unavailable) refuse the connection.
    let v3 = (1...5).map { MosquittoHandle.connackRefusal($0, v5: false, text: "t").code }
    #expect(
      v3 == [
        .connectionRefused, .connectionRefused, .connectionRefused, .notAuthorized, .notAuthorized,
      ])
    // MQTT 5 reason codes.
    let v5: [Int32: MQTTError.Code] = [
      0x80: .connectionRefused, 0x84: .connectionRefused, 0x86: .notAuthorized,
      0x87: .notAuthorized, 0x88: .connectionRefused, 0x8A: .notAuthorized, 0x8C: .notAuthorized,
      0x9F: .connectionRefused,
    ]
    for (code, expected) in v5 {
      #expect(MosquittoHandle.connackRefusal(code, v5: true, text: "t").code == expected, "\(code)")
    }
    // libmosquitto reports a TLS failure on an open connection as MOSQ_ERR_ERRNO (14) with EPROTO.
    #expect(MosquittoHandle.error(14, errno: EPROTO, tls: true).code == .tls)
    #expect(MosquittoHandle.error(14, errno: EPROTO, tls: false).code == .network)
    #expect(MosquittoHandle.error(14, errno: ECONNRESET, tls: true).code == .network)

    // What libmosquitto logged adds detail; it does not change the kind.
    var transport = FakeTransport()
    var session = MQTTSession(configuration: Self.configuration(), logger: Self.logger)
    session.tick(now: 0, on: &transport)
    session.libraryMessage("Connection Refused: not authorised. (and an SSL word)")
    session.connectionLost(MQTTError(.network, "The connection was lost."), now: 0.1)
    guard case .connectionFailed(let error, _) = session.takeEvents().first else {
      Issue.record("expected connectionFailed")
      return
    }
    #expect(error.code == .network)
    #expect(
      error.message
        == "The connection was lost. (Connection Refused: not authorised. (and an SSL word))")
  }

  @Test(
    "the last will: the retained state the broker's will overwrote goes again after a reconnect; a clean shutdown publishes the will itself, last, when asked"
  )
  func lastWill() async throws {
    var configuration = Self.configuration()
    let will = MQTTMessage(topic: "gw/state", text: "offline", qos: .atLeastOnce, retain: true)
    configuration.will = will
    let online = MQTTMessage(topic: "gw/state", text: "online", qos: .atLeastOnce, retain: true)
    for announce in [true, false] {
      var transport = FakeTransport()
      var session = Self.connected(configuration, &transport)
      session.execute(.retain(online), now: 0, on: &transport)
      #expect(transport.published == [online])
      // The connection is lost (the broker publishes the will); after the reconnect the
      // retained state goes again.
      session.disconnected(MQTTError(.network, "The connection was lost."), now: 1)
      guard case .idle(let retryAt) = session.phase else {
        Issue.record("expected idle, got \(session.phase)")
        return
      }
      session.tick(now: retryAt, on: &transport)
      session.connack(refusal: nil, sessionPresent: true, on: &transport)
      #expect(transport.published == [online, online])
      try await withCheckedThrowingContinuation {
        (continuation: CheckedContinuation<Void, any Error>) in
        session.execute(
          .shutdown(
            [Self.message("final")], will: announce, timeout: 5, Waiter(continuation)),
          now: retryAt, on: &transport)
        for mid in Int32(1)...4 { session.published(mid: mid, refusal: nil, on: &transport) }
        session.tick(now: retryAt, on: &transport)
        #expect(transport.disconnects == 1)
        session.finish(on: &transport)
        session.deliverAnswers()
      }
      let expected =
        announce
        ? [online, online, Self.message("final"), will] : [online, online, Self.message("final")]
      #expect(transport.published == expected, "announce \(announce)")
    }
  }

  @Test("no CONNACK within the keepalive (at least 10 s): the attempt is given up and retried")
  func missingConnack() {
    var transport = FakeTransport()
    var session = MQTTSession(configuration: Self.configuration(), logger: Self.logger)
    session.tick(now: 0, on: &transport)
    session.tick(now: 59, on: &transport)
    #expect(session.phase == .awaitingConnack(since: 0))
    session.tick(now: 61, on: &transport)
    guard case .idle = session.phase else {
      Issue.record("expected a retry, got \(session.phase)")
      return
    }
  }

  @Test(
    "shutdown: the final messages go out, then DISCONNECT; the waiter is answered; later commands are refused"
  )
  func shutdown() async throws {
    var transport = FakeTransport()
    var session = Self.connected(Self.configuration(), &transport)
    session.execute(.publish(Self.message("last-value"), nil), now: 1, on: &transport)
    try await withCheckedThrowingContinuation {
      (continuation: CheckedContinuation<Void, any Error>) in
      session.execute(
        .shutdown(
          [Self.message("offline", retain: true)], will: false, timeout: 5, Waiter(continuation)),
        now: 1, on: &transport)
      #expect(session.phase == .draining(deadline: 6))
      // Not acknowledged yet: still draining.
      session.tick(now: 2, on: &transport)
      #expect(transport.disconnects == 0)
      session.published(mid: 1, refusal: nil, on: &transport)
      session.published(mid: 2, refusal: nil, on: &transport)
      session.tick(now: 2, on: &transport)
      #expect(transport.disconnects == 1)
      #expect(session.phase == .disconnecting(deadline: 4))
      session.tick(now: 2, on: &transport)  // the socket is closed
      #expect(session.isStopped)
      session.finish(on: &transport)
      session.deliverAnswers()
    }
    #expect(transport.published.map(\.topic) == ["last-value", "offline"])
    #expect(session.takeEvents().last == .stopped)
    await #expect(throws: MQTTError.self) {
      try await withCheckedThrowingContinuation {
        (continuation: CheckedContinuation<Void, any Error>) in
        session.execute(
          .publish(Self.message("late"), Waiter(continuation)), now: 3, on: &transport)
      }
    }
  }

  @Test(
    "a publication the library refuses is answered invalid_argument and does not block the queue")
  func refusedPublication() async throws {
    var transport = FakeTransport(refusedTopics: ["bad"])
    var session = Self.connected(Self.configuration(), &transport)
    let error = await #expect(throws: MQTTError.self) {
      try await withCheckedThrowingContinuation {
        (continuation: CheckedContinuation<Void, any Error>) in
        session.execute(.publish(Self.message("bad"), Waiter(continuation)), now: 1, on: &transport)
        session.deliverAnswers()
      }
    }
    #expect(error?.code == .invalidArgument)
    session.execute(.publish(Self.message("good"), nil), now: 1, on: &transport)
    #expect(transport.published.map(\.topic) == ["good"])
  }
}

@Suite("MosquittoHandle: MQTT 5 property lists")
struct MosquittoHandlePropertyTests {
  @Test(
    "a publication whose MQTT 5 properties MQTT cannot carry is refused with invalid_argument, never cut (libmosquitto 2.0.11 cuts a long user property value and a string at U+0000)"
  )
  func refusedProperties() throws {
    let configuration = MQTTClientConfiguration(
      host: "127.0.0.1", clientID: "props", protocolVersion: .v5)
    let handle = try MosquittoHandle(configuration: configuration)
    let long = String(repeating: "x", count: 70_000)
    let refused: [MQTTPublishProperties] = [
      MQTTPublishProperties(correlationData: Array(repeating: 1, count: 70_000)),
      MQTTPublishProperties(responseTopic: long),
      MQTTPublishProperties(userProperties: [MQTTUserProperty("k", long)]),
      MQTTPublishProperties(contentType: long),
      // 65,536 bytes: libmosquitto's own check lets one byte too many through.
      MQTTPublishProperties(responseTopic: String(repeating: "x", count: 65_536)),
      MQTTPublishProperties(userProperties: [MQTTUserProperty("k\u{0}v", "w")]),
      MQTTPublishProperties(contentType: "text/\u{0}plain"),
    ]
    for properties in refused {
      let result = handle.publish(
        MQTTMessage(topic: "t", payload: [1], qos: .atLeastOnce, properties: properties))
      guard case .refused(let error) = result else {
        Issue.record("expected a refusal, got \(result)")
        continue
      }
      #expect(error.code == .invalidArgument)
      #expect(error.message.hasPrefix("MQTT 5 "), "\(error.message)")
    }
    // The largest correlation data MQTT allows is carried (not connected: kept for later).
    let fits = MQTTPublishProperties(
      responseTopic: "r", correlationData: Array(repeating: 1, count: 65_535),
      userProperties: [MQTTUserProperty("k", "v")], contentType: "text/plain")
    let result = handle.publish(
      MQTTMessage(topic: "t", payload: [1], qos: .atLeastOnce, properties: fits))
    guard case .noConnection = result else {
      Issue.record("expected noConnection, got \(result)")
      return
    }
  }
}
