internal import CMosquitto
import Foundation
import Glibc
import Logging
import LoopSupport
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
  /// Publish without waiting, ahead of the messages still queued (``MQTTClient/answer(_:)``).
  case publishAhead(MQTTMessage)
  case subscribe(String, MQTTQoS, Waiter?)
  case unsubscribe(String, Waiter?)
  case retain(MQTTMessage)
  case forgetRetained(String)
  /// Forget the retained state of every topic that starts with the prefix.
  case forgetRetainedBelow(String)
  /// Publish the final messages (then the last will, when `will`), drain, disconnect, stop.
  case shutdown([MQTTMessage], will: Bool, timeout: Double, Waiter)
  /// Answer at once: proves the loop thread takes commands (a watchdog's liveness check).
  case ping(Waiter)
  /// The owning client is gone: disconnect at once and end the thread.
  case stop

  /// Whether the broker answers it and someone waits for the answer.
  var awaitsBrokerAnswer: Bool {
    switch self {
    case .publish(_, let waiter): waiter != nil
    case .subscribe, .unsubscribe, .shutdown: true
    case .publishAhead, .retain, .forgetRetained, .forgetRetainedBelow, .ping, .stop: false
    }
  }

  /// Whether a publishing thread may carry it out itself (``ClientCore/send(contentsOf:)``):
  /// the session's queue and retained state, nothing that changes its phase.
  var isDirect: Bool {
    switch self {
    case .publish, .publishAhead, .retain, .forgetRetained, .forgetRetainedBelow: true
    case .subscribe, .unsubscribe, .shutdown, .ping, .stop: false
    }
  }
}

/// What a C callback saw, recorded for the loop to process once the C call has returned.
enum CallbackRecord {
  case connack(reasonCode: Int32, sessionPresent: Bool)
  /// `errno` is its value when the callback ran (it tells a TLS failure from others).
  case disconnected(rc: Int32, errno: Int32)
  case published(mid: Int32, reasonCode: Int32)
  case subscribed(mid: Int32, granted: [Int32])
  case unsubscribed(mid: Int32)
  case message(MQTTMessage)
  case log(String)
}

/// The engine behind ``MQTTClient``: the loop thread, which owns the libmosquitto handle
/// (``MosquittoHandle``) and the session logic (``MQTTSession``).
///
/// The loop thread polls the broker socket and a pipe that other threads write to after posting
/// a ``Command`` to its mailbox. libmosquitto's own `loop_start` thread is not used: it exits for
/// good on fatal errors and MQTT 5 CONNACK refusals, whereas this loop treats every failure
/// alike — close, back off, reconnect.
///
/// Publications take a shorter way: the thread that has them (the bridge's, with a batch of
/// values) takes the loop's lock and hands them to the session and libmosquitto itself, which
/// writes them to the socket at once — no wake-up of the loop thread per batch, the largest
/// cost of a value on its way before (issue 14's profile: the scheduler). Whoever holds the lock
/// first carries out what waits in the mailbox, so commands keep their order; the loop thread
/// holds the lock while it works and lets go of it while it polls, and is woken when the
/// publisher left it something to do (a socket to write when it is writable, a new deadline).
///
/// While batches come less than ``publisherReadWindow`` apart, the thread that hands one over also
/// reads what the broker sent (acknowledgements, anything else) before it writes, and for that
/// window after such a read the loop thread does not poll the socket for input: with QoS 1, each
/// acknowledgement used to wake the loop thread, a second thread wake-up per value on BlueZ's
/// socket path (issue 14's lab profile: the scheduler). What arrives while publications flow waits
/// at most that window or until the next batch; a burst that a few reads do not take, an answer a
/// caller awaits (an acknowledgement, a SUBACK), acknowledgements the in-flight window needs and
/// the broker closing the connection are the loop thread's at once. The window's end is a kernel
/// timer that each publisher's read pushes back, so the loop thread sleeps while batches flow and
/// wakes once when they stop.
///
/// The offline queue is the session's, not libmosquitto's: a message is handed to libmosquitto
/// only while connected and while fewer than `maxInflight` QoS ≥ 1 messages await their
/// acknowledgement. Whatever libmosquitto accepted stays its responsibility (it re-sends
/// unacknowledged messages after a reconnect), so nothing is queued twice.
final class ClientCore: @unchecked Sendable {
  // Safety: `handle`, `session` and `records` are read and written only with `loopLock` held
  // (by the loop thread while it works, by a publishing thread in `send(contentsOf:)`, and by
  // the C callbacks that libmosquitto calls within those); `mailbox` and `stats` are
  // thread-safe; the rest is immutable after init.

  let configuration: MQTTClientConfiguration
  let logger: Logger
  let messages: AsyncStream<MQTTMessage>.Continuation
  /// Messages that did not fit in `messages`, without their payload.
  let overflow: AsyncStream<MQTTMessage>.Continuation
  let events: AsyncStream<MQTTClientEvent>.Continuation
  /// Commands for the loop thread; closed once the thread has ended.
  let mailbox: LoopMailbox<Command>
  let stats = Mutex(MQTTStatistics())
  let started = Mutex(false)
  /// Held while `handle`, `session` or `records` are used.
  private let loopLock = Mutex(())
  /// Seconds after a publishing thread read the socket during which the loop thread leaves
  /// reading it to publishers (``MQTTClientConfiguration/publisherReadWindow``).
  let publisherReadWindow: Double

  // MARK: loop thread state

  private var handle: MosquittoHandle
  private var session: MQTTSession
  private var records: [CallbackRecord] = []
  /// When a publishing thread last read the socket (monotonic seconds).
  private var publisherReadAt = -Double.infinity
  /// When the last batch was handed over directly (monotonic seconds).
  private var lastBatchAt = -Double.infinity
  /// Whether the loop thread's current `poll` includes input from the broker.
  private var loopPollsInput = true
  /// A kernel timer (`timerfd`, monotonic clock) that ends the publishers' read window: each
  /// publisher's read pushes it back, so the loop thread, which polls it, wakes once when
  /// batches stop instead of once per batch at the end of the window the previous one opened.
  /// -1 when the kernel gave none: the loop then wakes at the window's end by its timeout.
  private let windowTimer: Int32
  /// The window end the timer is armed for (monotonic seconds).
  private var windowTimerAt = -Double.infinity

  init(
    configuration: MQTTClientConfiguration, logger: Logger,
    messages: AsyncStream<MQTTMessage>.Continuation,
    overflow: AsyncStream<MQTTMessage>.Continuation,
    events: AsyncStream<MQTTClientEvent>.Continuation
  ) throws(MQTTError) {
    self.configuration = configuration
    self.logger = logger
    self.messages = messages
    self.overflow = overflow
    self.events = events
    publisherReadWindow = max(0, configuration.publisherReadWindow)
    handle = try MosquittoHandle(configuration: configuration)
    session = MQTTSession(configuration: configuration, logger: logger)
    do {
      mailbox = try LoopMailbox()
    } catch {
      throw MQTTError(.invalidConfiguration, error.description)
    }
    // Last: nothing after it throws (`deinit` closes it).
    windowTimer = timerfd_create(CLOCK_MONOTONIC, Int32(TFD_NONBLOCK) | Int32(TFD_CLOEXEC))
    if windowTimer < 0 {
      logger.warning(
        "MQTT loop: no window timer (\(LoopError("timerfd_create", errno: errno))); the loop thread wakes once per batch instead"
      )
    }
    handle.setUserData(Unmanaged.passUnretained(self).toOpaque())
  }

  deinit {
    // The loop thread holds the core while it runs: nobody polls or arms the timer now.
    if windowTimer >= 0 { Glibc.close(windowTimer) }
  }

  // MARK: entry points from other threads

  /// Starts the loop thread once. When the system refuses the thread, the client ends as it
  /// does when its loop thread ends: the refusal is logged, waiting commands are refused and
  /// the event and message streams finish.
  func start() {
    let first = started.withLock { value in
      defer { value = true }
      return !value
    }
    guard first else { return }
    do throws(LoopError) {
      try startThread(named: "mqtt-loop") { [self] in self.runLoop() }
    } catch {
      logger.critical("MQTT: no thread for the client's loop (\(error)); the client stops")
      loopLock.withLock { _ in finish() }
    }
  }

  /// Carries out a command as ``send(contentsOf:)`` does.
  func send(_ command: Command) {
    guard command.isDirect else {
      if !mailbox.post(command) { MQTTSession.refuse(command) }
      return
    }
    send(contentsOf: [command])
  }

  /// Carries out commands in order: publications and retained-state changes on the calling
  /// thread, with the loop's lock (after whatever waits in the mailbox); anything else, or
  /// before the loop thread runs, through the mailbox.
  func send(contentsOf commands: [Command]) {
    guard commands.allSatisfy(\.isDirect), started.withLock({ $0 }) else {
      if !mailbox.post(contentsOf: commands) { commands.forEach(MQTTSession.refuse) }
      return
    }
    let (carriedOut, wakeLoop) = loopLock.withLock { _ in
      guard !session.isStopped else { return (false, false) }
      let before = (phase: session.phase, wantsWrite: handle.wantsWrite)
      let t = now()
      drainInbox(now: t)
      // While batches come less than a read window apart: what the broker sent since the
      // last one first (acknowledgements that free the in-flight window, messages), so that
      // the loop thread need not wake for it. Batches further apart leave reading to the loop
      // thread as before (a read here would find nothing, and the window's end would wake
      // the loop thread once more).
      let flowing = t - lastBatchAt < publisherReadWindow
      lastBatchAt = t
      if flowing && session.phase == .connected { readAsPublisher(now: t) }
      // A caller that awaits its acknowledgement gets it from the loop thread at once.
      if commands.contains(where: \.awaitsBrokerAnswer) { publisherReadAt = -.infinity }
      // Several publications leave in as few TCP segments as fit (one wake-up of the broker
      // per batch); one goes out alone.
      let socket = handle.socket
      let corked =
        commands.count > 1 && session.phase == .connected
        && handle.holdWrites(true, socket: socket)
      for command in commands { session.execute(command, now: t, on: &handle) }
      // A write that failed meanwhile closed the socket: nothing to send then.
      if corked && handle.socket == socket { handle.holdWrites(false, socket: socket) }
      settle()
      // The loop thread polls with what it knew before: wake it when that changed, or when
      // it left input to publishers and must read it now (acknowledgements needed before the
      // next batch: a batch larger than the in-flight window waits for them; an awaited one;
      // more input than a publisher reads).
      let wake =
        session.phase != before.phase || (handle.wantsWrite && !before.wantsWrite)
        || session.isStopped || (!loopPollsInput && !leavesInputToPublishers(now: t))
      return (true, wake)
    }
    if !carriedOut {
      commands.forEach(MQTTSession.refuse)
    } else if wakeLoop {
      mailbox.wake()
    }
  }

  /// The broker socket now (-1 while there is none).
  var socketDescriptor: Int32 { loopLock.withLock { _ in handle.socket } }

  /// Reads what the broker sent, on a publishing thread (with the loop's lock held): the loop
  /// thread then leaves input to publishers for ``publisherReadWindow``, unless more is
  /// waiting than a few reads took (a burst of messages: the loop thread reads it at once).
  private func readAsPublisher(now t: Double) {
    // libmosquitto reads as many packets per call as messages it has in flight (at least
    // one), so a burst of incoming messages can outlast a call.
    for _ in 0..<Self.publisherReads {
      let socket = handle.socket
      guard socket >= 0 else { return }
      if let failure = handle.read() {
        settle()
        session.connectionLost(failure, now: t)
        return
      }
      guard handle.socket == socket, handle.inputWaiting else {
        publisherReadAt = t
        armWindowTimer(at: t + publisherReadWindow)
        return
      }
    }
    publisherReadAt = -.infinity
  }

  /// Arms the window timer to fire at `deadline` (monotonic seconds), a microsecond late at
  /// most, never early: the loop thread, woken by it, must find the window over.
  private func armWindowTimer(at deadline: Double) {
    guard windowTimer >= 0, deadline.isFinite, deadline > 0 else { return }
    let seconds = deadline.rounded(.down)
    var spec = itimerspec()
    spec.it_value.tv_sec = Int(seconds)
    spec.it_value.tv_nsec = min(999_999_999, Int(((deadline - seconds) * 1e9).rounded(.up)) + 1000)
    if timerfd_settime(windowTimer, Int32(TFD_TIMER_ABSTIME), &spec, nil) == 0 {
      windowTimerAt = deadline
    } else {
      // The loop thread then ends the window by its timeout (`step`).
      logger.debug("MQTT loop: \(LoopError("timerfd_settime", errno: errno))")
    }
  }

  /// Calls of libmosquitto's read a publishing thread makes before it leaves the rest of the
  /// input to the loop thread.
  private static let publisherReads = 4

  /// Whether the loop thread leaves input to publishers now: connected, a publisher read it
  /// less than ``publisherReadWindow`` ago, and no acknowledgement is needed soon.
  private func leavesInputToPublishers(now t: Double) -> Bool {
    session.phase == .connected && t - publisherReadAt < publisherReadWindow
      && !session.needsAcknowledgements
  }

  /// Called by the C callbacks (with the loop's lock held).
  func record(_ record: CallbackRecord) {
    records.append(record)
  }

  // MARK: the loop

  private func runLoop() {
    // One clock reading and one turn of the lock per wake-up (both cost a system call or
    // more where the clock is slow to read, as in the lab's emulated machine).
    var next = loopLock.withLock { _ in step(now: now()) }
    while let plan = next {
      let revents = poll(plan)
      let t = now()
      next = loopLock.withLock { _ in
        if plan.socket >= 0 { serve(plan.socket, revents) }
        return step(now: t)
      }
    }
    loopLock.withLock { _ in finish() }
  }

  /// `POLLRDHUP` (Linux; glibc declares it only for `_GNU_SOURCE`): the peer closed its end.
  private static let pollPeerClosed: Int16 = 0x2000

  /// What the loop thread polls for next.
  private struct PollPlan {
    var socket: Int32
    var events: Int16
    /// Milliseconds.
    var timeout: Int32
    /// Whether the window timer ends the wait (instead of the timeout).
    var windowTimer = false
  }

  /// With the loop's lock held: carries out what waits in the mailbox, lets the session act
  /// on the time, and says what to poll for next (`nil` once the session has stopped).
  private func step(now t: Double) -> PollPlan? {
    drainInbox(now: t)
    session.tick(now: t, on: &handle)
    settle()
    guard !session.isStopped else { return nil }
    if session.phase != .connected { publisherReadAt = -.infinity }
    // While publishers read the socket, input waits for them or for the window's end; the
    // broker closing its end (`POLLRDHUP`) or a failed socket (`POLLERR`, `POLLHUP`, always
    // reported) still wakes the loop thread at once.
    let publishersRead = leavesInputToPublishers(now: t)
    loopPollsInput = !publishersRead
    var deadline = session.nextDeadline(now: t)
    // The window's end: the timer armed for it, or the timeout.
    let windowEnd = publisherReadAt + publisherReadWindow
    let timed = publishersRead && windowTimer >= 0 && windowTimerAt >= windowEnd
    if publishersRead && !timed { deadline = min(deadline, windowEnd) }
    return PollPlan(
      socket: handle.socket,
      events: (publishersRead ? Self.pollPeerClosed : Int16(POLLIN))
        | (handle.wantsWrite ? Int16(POLLOUT) : 0),
      timeout: Self.pollTimeout(until: deadline, now: t), windowTimer: timed)
  }

  /// Milliseconds from `t` to `deadline` for `poll`: 0 once it has passed, at most a minute.
  private static func pollTimeout(until deadline: Double, now t: Double) -> Int32 {
    guard deadline > t else { return 0 }
    return Int32(min(60_000, (deadline - t) * 1000).rounded(.up))
  }

  /// Processes what callbacks recorded (C calls made by the session can complete writes at
  /// once), then publishes the session's figures and events.
  private func settle() {
    while !records.isEmpty {
      let batch = records
      records.removeAll(keepingCapacity: true)
      for record in batch { process(record) }
    }
    handle.libraryLog = session.phase != .connected
    let counters = session.counters
    stats.withLock { stats in
      stats.connected = counters.connected
      stats.published = counters.published
      stats.dropped = counters.dropped
      stats.reconnects = counters.reconnects
      stats.connectionFailures = counters.connectionFailures
      stats.queued = counters.queued
      stats.inflight = counters.inflight
    }
    for event in session.takeEvents() { events.yield(event) }
    session.deliverAnswers()
  }

  /// Polls without the lock; returns what `poll` reported for the plan's socket (0 when
  /// nothing, or only the wake-up pipe, was ready).
  private func poll(_ plan: PollPlan) -> Int16 {
    var fds = [mailbox.wakePollFD]
    if plan.windowTimer { fds.append(pollfd(fd: windowTimer, events: Int16(POLLIN), revents: 0)) }
    let socketIndex = fds.count
    if plan.socket >= 0 { fds.append(pollfd(fd: plan.socket, events: plan.events, revents: 0)) }
    let ready: Int
    do {
      ready = try pollDescriptors(&fds, timeout: plan.timeout)
    } catch {
      logger.error("MQTT loop: \(error)")
      ready = 0
    }
    let woken = ready > 0 && fds[0].revents != 0
    if woken { mailbox.drainWakeUps() }
    if plan.windowTimer && ready > 0 && fds[1].revents != 0 {
      // Its expirations, so that it is not readable again until armed anew.
      var expirations: UInt64 = 0
      // EAGAIN when a publisher armed it anew meanwhile: nothing to take then.
      if Glibc.read(windowTimer, &expirations, 8) < 0 && errno != EAGAIN {
        logger.debug("MQTT loop: \(LoopError("reading the window timer", errno: errno))")
      }
    }
    stats.withLock {
      $0.loopTurns += 1
      if woken { $0.loopWakeUps += 1 }
    }
    return ready > 0 && plan.socket >= 0 ? fds[socketIndex].revents : 0
  }

  /// Reads and writes what `poll` reported for `socket` (`revents`), and lets libmosquitto
  /// keep the connection alive (with the loop's lock held).
  private func serve(_ socket: Int32, _ revents: Int16) {
    // A publisher's write may have closed the socket meanwhile.
    guard handle.socket == socket else { return }
    var failure: MQTTError?
    if revents != 0 {
      if revents & Int16(POLLIN) != 0 { stats.withLock { $0.loopReads += 1 } }
      // Reading first also drives a pending TLS handshake forward.
      failure = handle.read()
      if failure == nil && handle.socket >= 0 && revents & Int16(POLLOUT) != 0 {
        failure = handle.write()
      }
    }
    if failure == nil && handle.socket >= 0 { failure = handle.misc() }
    if let failure {
      // Errors that libmosquitto reports through on_disconnect are handled with the records
      // (the session then ignores this one); the others (TLS handshake failures among them)
      // close the socket silently.
      settle()
      session.connectionLost(failure, now: now())
    }
  }

  // MARK: callback records

  private func process(_ record: CallbackRecord) {
    switch record {
    case .log(let text):
      session.libraryMessage(text)
    case .connack(let code, let sessionPresent):
      session.connack(
        refusal: handle.connackRefusal(code), sessionPresent: sessionPresent, on: &handle)
    case .disconnected(let rc, let code):
      session.disconnected(handle.disconnection(rc, errno: code), now: now())
    case .published(let mid, let reason):
      session.published(mid: mid, refusal: handle.publishRefusal(reason), on: &handle)
    case .subscribed(let mid, let granted):
      session.subscribed(mid: mid, granted: granted)
    case .unsubscribed(let mid):
      session.unsubscribed(mid: mid)
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
        // Past the message count: the sender is told through `overflow` while it has room.
        let bytes = message.payload.count
        var stripped = message
        stripped.payload = []
        if stripped.discarded == nil { stripped.discarded = .bufferFull(bytes: bytes) }
        let kept: Bool
        if case .dropped = overflow.yield(stripped) { kept = false } else { kept = true }
        stats.withLock { stats in
          stats.incomingBytes -= bytes
          if kept {
            if message.discarded == nil { stats.receivedDiscarded += 1 }
          } else {
            stats.receivedDropped += 1
          }
        }
      }
    }
  }

  // MARK: commands

  /// Carries out the mailbox's commands (with the loop's lock held), at the time the caller
  /// read (one clock reading per wake-up or hand-off: where the clock is slow to read, as in
  /// the lab's emulated machine, each costs a system call).
  private func drainInbox(now t: Double) {
    for command in mailbox.take() {
      // A subscription's or an awaited publication's answer is read by the loop thread at
      // once, not left to publishers.
      if command.awaitsBrokerAnswer { publisherReadAt = -.infinity }
      session.execute(command, now: t, on: &handle)
    }
  }

  // MARK: shutdown

  private func finish() {
    session.finish(on: &handle)
    settle()
    events.finish()
    messages.finish()
    overflow.finish()
    // Answer whatever arrived while stopping; later commands are refused by `send`.
    for command in mailbox.close() { MQTTSession.refuse(command) }
  }

  /// The client's time (monotonic), read once per batch and per wake-up.
  private func now() -> Double { clockSeconds() }
}
