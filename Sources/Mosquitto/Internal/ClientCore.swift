import Backoff
internal import CMosquitto
import DequeModule
import Foundation
import Glibc
import Logging
import OrderedCollections
import Synchronization

/// A waiter for the outcome of one client operation. Resuming it more than once is harmless:
/// the first outcome wins, so a cancelled caller and the loop thread may both answer it.
final class Waiter: Sendable {
  private let continuation: Mutex<CheckedContinuation<Void, any Error>?>

  init(_ continuation: CheckedContinuation<Void, any Error>) {
    self.continuation = Mutex(continuation)
  }

  func resume() { take()?.resume() }

  func resume(throwing error: any Error) { take()?.resume(throwing: error) }

  private func take() -> CheckedContinuation<Void, any Error>? {
    continuation.withLock { value in
      defer { value = nil }
      return value
    }
  }
}

/// Where ``MQTTClient`` keeps the waiter of an operation its caller may cancel.
final class WaiterSlot: Sendable {
  private let state = Mutex<(waiter: Waiter?, cancelled: Bool)>((nil, false))

  /// Keeps `waiter`; false when the caller was cancelled already (then it is answered).
  func install(_ waiter: Waiter) -> Bool {
    let cancelled = state.withLock { state in
      state.waiter = waiter
      return state.cancelled
    }
    if cancelled { waiter.resume(throwing: MQTTError(.cancelled, "cancelled")) }
    return !cancelled
  }

  /// Answers the waiter with ``MQTTError/Code/cancelled``, now or when it is installed.
  func cancel() {
    let waiter = state.withLock { state in
      state.cancelled = true
      return state.waiter
    }
    waiter?.resume(throwing: MQTTError(.cancelled, "cancelled"))
  }
}

/// Requests from any thread to the loop thread.
enum Command: Sendable {
  case publish(MQTTMessage, Waiter?)
  case subscribe(String, MQTTQoS, Waiter?)
  case unsubscribe(String, Waiter?)
  case retain(MQTTMessage)
  case forgetRetained(String)
  case shutdown([MQTTMessage], timeout: Double, Waiter)
  /// The owning client is gone: disconnect at once and end the thread.
  case stop
}

/// What a C callback saw, recorded for the loop to process once the C call has returned.
enum CallbackRecord {
  case connack(reasonCode: Int32, sessionPresent: Bool)
  case disconnected(rc: Int32)
  case published(mid: Int32, reasonCode: Int32)
  case subscribed(mid: Int32, granted: [Int32])
  case unsubscribed(mid: Int32)
  case message(MQTTMessage)
  case log(String)
}

/// The engine behind ``MQTTClient``: owns the libmosquitto handle and runs the loop thread.
///
/// Every libmosquitto call happens on the loop thread, which polls the broker socket and an
/// `eventfd` that other threads signal after putting a ``Command`` in the inbox. libmosquitto's
/// own `loop_start` thread is not used: it exits for good on fatal errors and MQTT 5 CONNACK
/// refusals, whereas this loop treats every failure alike — close, back off, reconnect.
///
/// The offline queue is ours, not libmosquitto's: a message is handed to libmosquitto only
/// while connected and while fewer than `maxInflight` QoS ≥ 1 messages await their
/// acknowledgement. Whatever libmosquitto accepted stays its responsibility (it re-sends
/// unacknowledged messages after a reconnect), so nothing is queued twice.
final class ClientCore: @unchecked Sendable {
  // Safety: the properties under "loop thread state" are read and written only on the loop
  // thread (runLoop and the callbacks it triggers); `inbox` and `stats` are Mutex-protected;
  // the rest is immutable after init.

  let configuration: MQTTClientConfiguration
  let logger: Logger
  let messages: AsyncStream<MQTTMessage>.Continuation
  let events: AsyncStream<MQTTClientEvent>.Continuation
  /// Commands for the loop thread; `closed` once the thread has ended.
  let inbox = Mutex<(commands: [Command], closed: Bool)>(([], false))
  let stats = Mutex(MQTTStatistics())
  let started = Mutex(false)
  /// Read and write ends of the wake-up pipe (other threads write, the loop polls).
  private let wakeFD: Int32
  private let wakeWriteFD: Int32
  private let mosq: OpaquePointer
  private let connectProperties: PropertyList?

  // MARK: loop thread state

  private enum Phase {
    case idle(retryAt: Double)
    case awaitingConnack(since: Double)
    case connected
    case draining(deadline: Double)
    case disconnecting(deadline: Double)
    case stopped
  }

  private struct Outgoing {
    var message: MQTTMessage
    var waiter: Waiter?
  }

  private var phase: Phase = .idle(retryAt: 0)
  private var initialised = false
  private var everConnected = false
  private var backoff: Backoff
  private var pending = Deque<Outgoing>()
  private var inflight: [Int32: Outgoing] = [:]
  private var inflightReliable = 0
  private var subscriptions: [String: MQTTQoS] = [:]
  private var subscribeWaiters: [String: [Waiter]] = [:]
  private var subackFilters: [Int32: String] = [:]
  private var unsubackWaiters: [Int32: Waiter] = [:]
  /// The newest retained message of every topic this client published retained, in the order
  /// the topics first appeared: re-published after every accepted connection.
  private var retained = OrderedDictionary<String, MQTTMessage>()
  private var records: [CallbackRecord] = []
  private var lastLibraryError: String?
  private var shutdownWaiter: Waiter?
  private var needsResync = false
  private var lostThisRound = false

  init(
    configuration: MQTTClientConfiguration, logger: Logger,
    messages: AsyncStream<MQTTMessage>.Continuation,
    events: AsyncStream<MQTTClientEvent>.Continuation
  ) throws(MQTTError) {
    self.configuration = configuration
    self.logger = logger
    self.messages = messages
    self.events = events
    self.backoff = Backoff(
      minimum: configuration.minReconnectDelay, maximum: configuration.maxReconnectDelay)
    MosquittoLibrary.initialiseOnce()
    guard let handle = mosquitto_new(configuration.clientID, configuration.cleanSession, nil)
    else {
      throw MQTTError(.invalidConfiguration, "libmosquitto refused client id or session settings")
    }
    self.mosq = handle
    var fds: [Int32] = [-1, -1]
    guard pipe(&fds) == 0 else {
      mosquitto_destroy(handle)
      throw MQTTError(.invalidConfiguration, "pipe failed: \(String(cString: strerror(errno)))")
    }
    for fd in fds {
      _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
      _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
    }
    self.wakeFD = fds[0]
    self.wakeWriteFD = fds[1]
    if configuration.protocolVersion == .v5 && !configuration.cleanSession {
      connectProperties = PropertyList(int32: MQTT_PROP_SESSION_EXPIRY_INTERVAL, UInt32.max)
    } else {
      connectProperties = nil
    }
    mosquitto_user_data_set(handle, Unmanaged.passUnretained(self).toOpaque())
    try configureHandle()
  }

  deinit {
    mosquitto_destroy(mosq)
    close(wakeFD)
    close(wakeWriteFD)
  }

  private func configureHandle() throws(MQTTError) {
    let c = configuration
    try check(
      mosquitto_int_option(
        mosq, MOSQ_OPT_PROTOCOL_VERSION,
        c.protocolVersion == .v5 ? MQTT_PROTOCOL_V5 : MQTT_PROTOCOL_V311), "protocol version")
    if c.username != nil || c.password != nil {
      try check(mosquitto_username_pw_set(mosq, c.username, c.password), "username/password")
    }
    if let tls = c.tls {
      if (tls.certFile == nil) != (tls.keyFile == nil) {
        throw MQTTError(.invalidConfiguration, "TLS client certificate and key must come together")
      }
      for file in [tls.caFile, tls.certFile, tls.keyFile].compactMap({ $0 })
      where access(file, R_OK) != 0 {
        throw MQTTError(.invalidConfiguration, "TLS file is not readable: \(file)")
      }
      let caPath: String? = tls.caFile == nil ? "/etc/ssl/certs" : nil
      try check(
        mosquitto_tls_set(mosq, tls.caFile, caPath, tls.certFile, tls.keyFile, nil), "TLS files")
      if tls.insecure {
        try check(mosquitto_tls_opts_set(mosq, 0, nil, nil), "TLS verification off")
        try check(mosquitto_tls_insecure_set(mosq, true), "TLS host-name check off")
      }
    }
    if let will = c.will {
      let list = c.protocolVersion == .v5 ? PropertyList(will.properties) : nil
      let rc = will.payload.withUnsafeBytes { bytes in
        mosquitto_will_set_v5(
          mosq, will.topic, Int32(bytes.count), bytes.baseAddress, Int32(will.qos.rawValue),
          will.retain, list?.head)
      }
      // libmosquitto takes ownership of the will's property list on success.
      if rc == MOSQ_ERR_SUCCESS.rawValue { list?.disown() }
      try check(rc, "last will")
    }
    mosquitto_connect_v5_callback_set(mosq, mosquittoOnConnect)
    mosquitto_disconnect_v5_callback_set(mosq, mosquittoOnDisconnect)
    mosquitto_publish_v5_callback_set(mosq, mosquittoOnPublish)
    mosquitto_subscribe_v5_callback_set(mosq, mosquittoOnSubscribe)
    mosquitto_unsubscribe_v5_callback_set(mosq, mosquittoOnUnsubscribe)
    mosquitto_message_v5_callback_set(mosq, mosquittoOnMessage)
    mosquitto_log_callback_set(mosq, mosquittoOnLog)
  }

  private func check(_ rc: Int32, _ what: String) throws(MQTTError) {
    guard rc != MOSQ_ERR_SUCCESS.rawValue else { return }
    throw MQTTError(.invalidConfiguration, "\(what): \(String(cString: mosquitto_strerror(rc)))")
  }

  // MARK: entry points from other threads

  /// Starts the loop thread once.
  func start() {
    let first = started.withLock { value in
      defer { value = true }
      return !value
    }
    guard first else { return }
    let thread = Thread { [self] in self.runLoop() }
    thread.name = "mqtt-loop"
    thread.start()
  }

  /// Queues a command for the loop thread and wakes it.
  func send(_ command: Command) {
    let accepted = inbox.withLock { inbox in
      if !inbox.closed { inbox.commands.append(command) }
      return !inbox.closed
    }
    guard accepted else {
      ClientCore.refuse(command)
      return
    }
    var one: UInt8 = 1
    _ = write(wakeWriteFD, &one, 1)  // a full pipe already means "wake up"
  }

  /// Called by the C callbacks (loop thread only).
  func record(_ record: CallbackRecord) {
    records.append(record)
  }

  // MARK: the loop

  private func runLoop() {
    while true {
      drainInbox()
      connectIfDue()
      settle()
      if case .stopped = phase { break }
      pollOnce()
      settle()
      if case .stopped = phase { break }
    }
    finish()
  }

  /// Processes what callbacks recorded (C calls made by commands can complete writes at once),
  /// re-synchronises after a new connection and moves a shutdown forward.
  private func settle() {
    processRecords()
    if needsResync {
      resync()
      processRecords()
    }
    advanceShutdown()
    processRecords()
  }

  private func pollOnce() {
    lostThisRound = false
    let socket = mosquitto_socket(mosq)
    var fds = [pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0)]
    if socket >= 0 {
      let events = Int16(POLLIN) | (mosquitto_want_write(mosq) ? Int16(POLLOUT) : 0)
      fds.append(pollfd(fd: socket, events: events, revents: 0))
    }
    let timeout = pollTimeoutMilliseconds()
    let ready = poll(&fds, nfds_t(fds.count), timeout)
    if ready > 0 && fds[0].revents != 0 {
      var buffer = [UInt8](repeating: 0, count: 256)
      while read(wakeFD, &buffer, buffer.count) > 0 {}
    }
    guard socket >= 0 else { return }
    var rc = MOSQ_ERR_SUCCESS.rawValue
    if ready > 0 && fds[1].revents != 0 {
      // Reading first also drives a pending TLS handshake forward.
      rc = mosquitto_loop_read(mosq, 1)
      if rc == MOSQ_ERR_SUCCESS.rawValue && mosquitto_socket(mosq) >= 0
        && fds[1].revents & Int16(POLLOUT) != 0
      {
        rc = mosquitto_loop_write(mosq, 1)
      }
    }
    if rc == MOSQ_ERR_SUCCESS.rawValue && mosquitto_socket(mosq) >= 0 {
      rc = mosquitto_loop_misc(mosq)
    }
    if rc == MOSQ_ERR_SUCCESS.rawValue, case .awaitingConnack(let since) = phase,
      now() - since > Double(max(10, configuration.keepalive))
    {
      rc = MOSQ_ERR_CONN_LOST.rawValue
      lastLibraryError = "no CONNACK from the broker within \(max(10, configuration.keepalive)) s"
    }
    if rc != MOSQ_ERR_SUCCESS.rawValue {
      // Errors that libmosquitto reports through on_disconnect are handled with the records;
      // the others (TLS handshake failures among them) close the socket silently.
      processRecords()
      if !lostThisRound { connectionLost(rc: rc) }
    }
  }

  private func pollTimeoutMilliseconds() -> Int32 {
    let t = now()
    var deadline = t + 1
    switch phase {
    case .idle(let retryAt): deadline = min(deadline, retryAt)
    case .draining(let d), .disconnecting(let d): deadline = min(deadline, d)
    default: break
    }
    return Int32(max(0, min(1000, (deadline - t) * 1000)).rounded(.up))
  }

  private func connectIfDue() {
    guard case .idle(let retryAt) = phase, now() >= retryAt else { return }
    let c = configuration
    let rc: Int32
    if initialised {
      rc = mosquitto_reconnect(mosq)
    } else {
      rc = mosquitto_connect_bind_v5(
        mosq, c.host, Int32(clamping: c.port), Int32(clamping: c.keepalive), nil,
        connectProperties?.head)
      if rc == MOSQ_ERR_INVAL.rawValue {
        fail(
          MQTTError(
            .invalidConfiguration,
            "libmosquitto refused host '\(c.host)', port \(c.port) or keepalive \(c.keepalive)"))
        return
      }
      initialised = true
    }
    if rc == MOSQ_ERR_SUCCESS.rawValue {
      phase = .awaitingConnack(since: now())
      logger.debug("MQTT connecting", metadata: ["mqtt.broker": "\(c.host):\(c.port)"])
    } else {
      let error = describe(rc: rc, errno: errno)
      scheduleRetry(after: error, wasConnected: false)
    }
  }

  private func connectionLost(rc: Int32) {
    lostThisRound = true
    let wasConnected: Bool
    switch phase {
    case .connected, .draining: wasConnected = true
    case .disconnecting:
      phase = .stopped
      return
    case .stopped, .idle: return
    case .awaitingConnack: wasConnected = false
    }
    if case .draining = phase {
      // The connection died while we were flushing before a shutdown: stop now.
      phase = .stopped
      return
    }
    stats.withLock { $0.connected = false }
    // QoS 0 packets libmosquitto had not written yet are gone with the socket.
    for (mid, out) in inflight where out.message.qos == .atMostOnce {
      inflight[mid] = nil
      out.waiter?.resume(throwing: MQTTError(.network, "connection lost before the write"))
    }
    updateDepths()
    let error = classify(rc: rc)
    scheduleRetry(after: error, wasConnected: wasConnected)
  }

  private func scheduleRetry(after error: MQTTError, wasConnected: Bool) {
    let delay = backoff.nextDelay()
    phase = .idle(retryAt: now() + delay)
    stats.withLock { $0.connectionFailures += 1 }
    let retry = (delay * 100).rounded() / 100
    if wasConnected {
      logger.warning(
        "MQTT connection lost: \(error.message); reconnecting in \(retry) s",
        metadata: ["mqtt.error": "\(error.code.rawValue)"])
      events.yield(.disconnected(error, retryIn: retry))
    } else {
      logger.error(
        "MQTT connection to \(configuration.host):\(configuration.port) failed: \(error.message); retrying in \(retry) s",
        metadata: ["mqtt.error": "\(error.code.rawValue)"])
      events.yield(.connectionFailed(error, retryIn: retry))
    }
  }

  private func fail(_ error: MQTTError) {
    logger.critical("MQTT client stopped: \(error.message)")
    events.yield(.connectionFailed(error, retryIn: .infinity))
    phase = .stopped
  }

  // MARK: callback records

  private func processRecords() {
    while !records.isEmpty {
      let batch = records
      records.removeAll(keepingCapacity: true)
      for record in batch { process(record) }
    }
  }

  private func process(_ record: CallbackRecord) {
    switch record {
    case .log(let text):
      lastLibraryError = text
    case .connack(let code, let sessionPresent):
      guard code == 0 else {
        lastLibraryError = refusalText(code)
        return
      }
      let reconnect = everConnected
      everConnected = true
      backoff.reset()
      phase = .connected
      lastLibraryError = nil
      stats.withLock {
        $0.connected = true
        if reconnect { $0.reconnects += 1 }
      }
      logger.info(
        "MQTT connected",
        metadata: [
          "mqtt.broker": "\(configuration.host):\(configuration.port)",
          "mqtt.session_present": "\(sessionPresent)",
        ])
      events.yield(.connected(sessionPresent: sessionPresent, reconnect: reconnect))
      needsResync = true
    case .disconnected(let rc):
      if rc == MOSQ_ERR_SUCCESS.rawValue, case .disconnecting = phase {
        phase = .stopped
      } else {
        connectionLost(rc: rc == MOSQ_ERR_SUCCESS.rawValue ? MOSQ_ERR_CONN_LOST.rawValue : rc)
      }
    case .published(let mid, let reason):
      guard let out = inflight.removeValue(forKey: mid) else { return }
      if out.message.qos != .atMostOnce { inflightReliable -= 1 }
      if reason < 0x80 { stats.withLock { $0.published += 1 } }
      // Refill the window (and the depth counters) before anyone waiting looks at them.
      flushPending()
      if reason >= 0x80 {
        let text = String(cString: mosquitto_reason_string(reason))
        out.waiter?.resume(throwing: MQTTError(.publishRefused, "\(out.message.topic): \(text)"))
      } else {
        out.waiter?.resume()
      }
    case .subscribed(let mid, let granted):
      guard let filter = subackFilters.removeValue(forKey: mid) else { return }
      let waiters = subscribeWaiters.removeValue(forKey: filter) ?? []
      if let code = granted.first, code >= 0x80 {
        logger.error("MQTT broker refused subscription", metadata: ["mqtt.topic": "\(filter)"])
        let error = MQTTError(.subscriptionRefused, "broker refused subscription to \(filter)")
        for waiter in waiters { waiter.resume(throwing: error) }
      } else {
        for waiter in waiters { waiter.resume() }
      }
    case .unsubscribed(let mid):
      unsubackWaiters.removeValue(forKey: mid)?.resume()
    case .message(var message):
      // Count first: whoever sees the message must also see it counted. The buffer is bounded
      // in bytes as well as in messages: a payload that does not fit is left out.
      let size = message.payload.count
      let budget = configuration.incomingBufferBytes
      let fits = stats.withLock { stats in
        stats.received += 1
        guard message.discarded == nil, stats.incomingBytes + size <= budget else {
          stats.receivedDiscarded += 1
          return false
        }
        stats.incomingBytes += size
        return true
      }
      if !fits && message.discarded == nil {
        message.discarded = .bufferFull(bytes: size)
        message.payload = []
      }
      if case .dropped = messages.yield(message) {
        stats.withLock {
          $0.receivedDropped += 1
          $0.incomingBytes -= message.payload.count
        }
      }
    }
  }

  /// After each accepted connection: subscribe again, re-publish retained state, flush.
  private func resync() {
    needsResync = false
    guard case .connected = phase else { return }
    for (filter, qos) in subscriptions.sorted(by: { $0.key < $1.key }) {
      sendSubscribe(filter, qos)
    }
    // Always, even when the broker reports a present session: state set while disconnected
    // is only here, and a broker restarted without persistence (mosquitto's default) has lost
    // the rest. Re-publishing a retained message the broker still holds changes nothing.
    for message in retained.values { hand(Outgoing(message: message, waiter: nil)) }
    flushPending()
  }

  /// Keeps `message` as its topic's retained state; an empty retained payload clears it.
  private func remember(_ message: MQTTMessage) {
    if message.payload.isEmpty {
      retained[message.topic] = nil
    } else {
      retained[message.topic] = message
    }
  }

  // MARK: commands

  private func drainInbox() {
    let commands = inbox.withLock { inbox in
      defer { inbox.commands.removeAll() }
      return inbox.commands
    }
    for command in commands { execute(command) }
  }

  private func execute(_ command: Command) {
    if case .stopped = phase {
      ClientCore.refuse(command)
      return
    }
    switch command {
    case .publish(let message, let waiter):
      if message.retain { remember(message) }
      enqueue(Outgoing(message: message, waiter: waiter))
      flushPending()
    case .subscribe(let filter, let qos, let waiter):
      subscriptions[filter] = qos
      if let waiter { subscribeWaiters[filter, default: []].append(waiter) }
      if case .connected = phase { sendSubscribe(filter, qos) }
    case .unsubscribe(let filter, let waiter):
      subscriptions[filter] = nil
      guard case .connected = phase else {
        waiter?.resume()
        return
      }
      var mid: Int32 = 0
      let rc = mosquitto_unsubscribe_v5(mosq, &mid, filter, nil)
      if rc == MOSQ_ERR_SUCCESS.rawValue, let waiter {
        unsubackWaiters[mid] = waiter
      } else {
        waiter?.resume()
      }
    case .retain(let message):
      remember(message)
      // While disconnected, the next connection's resync publishes it.
      if case .connected = phase {
        enqueue(Outgoing(message: message, waiter: nil))
        flushPending()
      }
    case .forgetRetained(let topic):
      retained[topic] = nil
    case .stop:
      phase = .stopped
    case .shutdown(let finals, let timeout, let waiter):
      shutdownWaiter = waiter
      guard case .connected = phase else {
        phase = .stopped
        return
      }
      for message in finals { hand(Outgoing(message: message, waiter: nil)) }
      phase = .draining(deadline: now() + max(0, timeout))
    }
  }

  private func sendSubscribe(_ filter: String, _ qos: MQTTQoS) {
    var mid: Int32 = 0
    let rc = mosquitto_subscribe_v5(mosq, &mid, filter, Int32(qos.rawValue), 0, nil)
    if rc == MOSQ_ERR_SUCCESS.rawValue {
      subackFilters[mid] = filter
    } else {
      let text = String(cString: mosquitto_strerror(rc))
      logger.error("MQTT subscribe failed: \(text)", metadata: ["mqtt.topic": "\(filter)"])
      let error = MQTTError(
        rc == MOSQ_ERR_NO_CONN.rawValue ? .network : .invalidArgument,
        "subscribe to '\(filter)': \(text)")
      if rc != MOSQ_ERR_NO_CONN.rawValue { subscriptions[filter] = nil }
      for waiter in subscribeWaiters.removeValue(forKey: filter) ?? [] {
        waiter.resume(throwing: error)
      }
    }
  }

  private func enqueue(_ out: Outgoing) {
    if pending.count >= configuration.offlineQueueCapacity {
      let victim: Outgoing
      switch configuration.dropPolicy {
      case .dropOldest:
        victim = pending.removeFirst()
        pending.append(out)
      case .dropNewest:
        victim = out
      }
      stats.withLock { $0.dropped += 1 }
      victim.waiter?.resume(
        throwing: MQTTError(
          .dropped, "offline queue full; dropped a message to '\(victim.message.topic)'"))
    } else {
      pending.append(out)
    }
    updateDepths()
  }

  private func flushPending() {
    defer { updateDepths() }
    switch phase {
    case .connected, .draining: break
    default: return
    }
    while let next = pending.first {
      if next.message.qos != .atMostOnce && inflightReliable >= configuration.maxInflight {
        return
      }
      pending.removeFirst()
      if !hand(next) {
        pending.prepend(next)
        return
      }
    }
  }

  /// Hands a message to libmosquitto. Returns false when it must stay in our queue.
  @discardableResult
  private func hand(_ out: Outgoing) -> Bool {
    let message = out.message
    let list = configuration.protocolVersion == .v5 ? PropertyList(message.properties) : nil
    var mid: Int32 = 0
    let rc = message.payload.withUnsafeBytes { bytes in
      mosquitto_publish_v5(
        mosq, &mid, message.topic, Int32(bytes.count), bytes.baseAddress,
        Int32(message.qos.rawValue), message.retain, list?.head)
    }
    let accepted =
      rc == MOSQ_ERR_SUCCESS.rawValue
      || (rc == MOSQ_ERR_NO_CONN.rawValue && message.qos != .atMostOnce)
    if accepted {
      // On NO_CONN libmosquitto still keeps a QoS ≥ 1 message and sends it after the
      // reconnect: it is in flight, not ours to queue again.
      inflight[mid] = out
      if message.qos != .atMostOnce { inflightReliable += 1 }
      return true
    }
    if rc == MOSQ_ERR_NO_CONN.rawValue { return false }
    let text = String(cString: mosquitto_strerror(rc))
    logger.error("MQTT publish refused: \(text)", metadata: ["mqtt.topic": "\(message.topic)"])
    out.waiter?.resume(
      throwing: MQTTError(.invalidArgument, "publish to '\(message.topic)': \(text)"))
    return true
  }

  private func updateDepths() {
    let queued = pending.count
    let flying = inflight.count
    stats.withLock {
      $0.queued = queued
      $0.inflight = flying
    }
  }

  // MARK: shutdown

  private func advanceShutdown() {
    switch phase {
    case .draining(let deadline):
      let done = pending.isEmpty && inflight.isEmpty
      if done || now() >= deadline {
        if !done {
          logger.warning(
            "MQTT shutdown: \(pending.count + inflight.count) message(s) not acknowledged in time")
        }
        mosquitto_disconnect_v5(mosq, 0, nil)
        phase = .disconnecting(deadline: now() + 2)
      }
    case .disconnecting(let deadline):
      if now() >= deadline || mosquitto_socket(mosq) < 0 { phase = .stopped }
    default: break
    }
  }

  private func finish() {
    if mosquitto_socket(mosq) >= 0 { mosquitto_disconnect_v5(mosq, 0, nil) }
    let stopped = MQTTError(.stopped, "the MQTT client has stopped")
    for out in pending { out.waiter?.resume(throwing: stopped) }
    for out in inflight.values { out.waiter?.resume(throwing: stopped) }
    for waiters in subscribeWaiters.values { for w in waiters { w.resume(throwing: stopped) } }
    for waiter in unsubackWaiters.values { waiter.resume() }
    pending.removeAll()
    inflight.removeAll()
    subscribeWaiters.removeAll()
    unsubackWaiters.removeAll()
    stats.withLock { $0.connected = false }
    updateDepths()
    events.yield(.stopped)
    events.finish()
    messages.finish()
    shutdownWaiter?.resume()
    shutdownWaiter = nil
    // Answer whatever arrived while stopping; later commands are refused by `send`.
    let rest = inbox.withLock { inbox in
      inbox.closed = true
      defer { inbox.commands.removeAll() }
      return inbox.commands
    }
    for command in rest { ClientCore.refuse(command) }
  }

  /// Answers a command that arrives after the loop thread has ended.
  private static func refuse(_ command: Command) {
    switch command {
    case .publish(_, let waiter), .subscribe(_, _, let waiter), .unsubscribe(_, let waiter):
      waiter?.resume(throwing: MQTTError(.stopped, "the MQTT client has stopped"))
    case .shutdown(_, _, let waiter): waiter.resume()
    case .retain, .forgetRetained, .stop: break
    }
  }

  // MARK: errors

  private func refusalText(_ code: Int32) -> String {
    if configuration.protocolVersion == .v5 {
      return String(cString: mosquitto_reason_string(code))
    }
    return String(cString: mosquitto_connack_string(code))
  }

  private func classify(rc: Int32) -> MQTTError {
    let detail = lastLibraryError
    lastLibraryError = nil
    if let detail {
      let lower = detail.lowercased()
      if lower.contains("not authori") || lower.contains("bad user name")
        || lower.contains("username or password")
      {
        return MQTTError(.notAuthorized, "broker refused the credentials (\(detail))")
      }
      if lower.contains("ssl") || lower.contains("tls") || lower.contains("certificate") {
        return MQTTError(.tls, detail)
      }
    }
    var error = describe(rc: rc, errno: 0)
    if let detail { error.message += " (\(detail))" }
    return error
  }

  private func describe(rc: Int32, errno code: Int32) -> MQTTError {
    let text: String
    if rc == MOSQ_ERR_ERRNO.rawValue && code != 0 {
      text = String(cString: strerror(code))
    } else {
      text = String(cString: mosquitto_strerror(rc))
    }
    switch rc {
    case MOSQ_ERR_TLS.rawValue, MOSQ_ERR_TLS_HANDSHAKE.rawValue: return MQTTError(.tls, text)
    case MOSQ_ERR_CONN_REFUSED.rawValue: return MQTTError(.connectionRefused, text)
    case MOSQ_ERR_AUTH.rawValue, MOSQ_ERR_NOT_SUPPORTED.rawValue:
      return MQTTError(.notAuthorized, text)
    case MOSQ_ERR_PROTOCOL.rawValue, MOSQ_ERR_MALFORMED_PACKET.rawValue:
      return MQTTError(.protocolError, text)
    default: return MQTTError(.network, text)
    }
  }

  private func now() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
  }
}

/// `mosquitto_lib_init` exactly once per process.
enum MosquittoLibrary {
  private static let initialised: Bool = {
    mosquitto_lib_init()
    return true
  }()

  static func initialiseOnce() { _ = initialised }

  /// The linked libmosquitto version, e.g. `2.0.11`.
  static var version: String {
    var major: Int32 = 0
    var minor: Int32 = 0
    var revision: Int32 = 0
    mosquitto_lib_version(&major, &minor, &revision)
    return "\(major).\(minor).\(revision)"
  }
}
