internal import CDBus
import Foundation
import Glibc
import LoopSupport
import Synchronization

/// What the filter saw, recorded for the loop to process after `dbus_connection_dispatch`.
enum BusRecord {
  case signal(DBusSignal)
  case methodCall(MessagePointer, IncomingMessage)
}

/// The engine behind ``DBusConnection``: owns the libdbus connection and runs the bus thread.
///
/// Every libdbus call happens on the bus thread. It polls the connection's watches (from
/// `dbus_connection_set_watch_functions`) and a wake-up pipe that other threads write to after
/// posting a ``BusCommand`` to its mailbox, fires libdbus timeouts (which is what times out
/// pending calls), dispatches incoming messages through one filter, and completes pending calls.
final class BusCore: @unchecked Sendable {
  // Safety: the properties under "bus thread state" are read and written only on the bus thread
  // (the loop and the libdbus callbacks it triggers); `mailbox`, `stats` and `tokens` are
  // thread-safe; the rest is immutable after init. The connection pointer is used only on the
  // bus thread, and in `deinit` after that thread has ended (it holds a strong reference).

  let uniqueName: String
  /// Commands for the bus thread; closed once the thread has ended.
  let mailbox: LoopMailbox<BusCommand>
  let stats = Mutex(DBusStatistics())
  private let tokens = Mutex<UInt64>(0)
  private let connection: OpaquePointer
  let canPassFDs: Bool
  /// Seconds over which incoming messages gather while signals come fast (0: read at once).
  let gathering: Double

  // MARK: bus thread state

  struct PendingCall {
    var pending: OpaquePointer
    var waiter: ResultWaiter<CallReply>
  }

  struct Subscription {
    var rule: DBusMatchRule
    var sink: SignalSink
  }

  struct TrackedName {
    var uses: Int
    var owner: String?
    var changeSeen: Bool
  }

  var watches = Set<OpaquePointer>()
  /// Enabled timeouts with their next deadline (monotonic seconds); disabled ones are absent.
  var timeouts: [OpaquePointer: Double] = [:]
  var records: [BusRecord] = []
  private var pendingCalls: [UInt64: PendingCall] = [:]
  private var subscriptions: [UInt64: Subscription] = [:]
  private var trackedNames: [String: TrackedName] = [:]
  private var closeWaiters: [CheckedContinuation<Void, Never>] = []
  private var stopped = false
  /// Batch queues given signals since they were last flushed (``flushBatches()``).
  private var unflushed: [SignalQueue] = []
  /// Signals delivered since the last turn that delivered any (``paceSignals()``).
  private var signalsThisTurn = 0
  /// When the socket is left unread while signals come fast.
  private var pace: GatheringPace
  /// Exported objects by path.
  var objects: [DBusObjectPath: DBusExportedObject] = [:]
  /// Paths serving `org.freedesktop.DBus.ObjectManager`.
  var managers = Set<DBusObjectPath>()
  /// Received method calls whose handler is still running, by token.
  var incomingCalls: [UInt64: MessagePointer] = [:]
  var nextIncomingToken: UInt64 = 0

  /// At most this many exported method calls run at once; more get `LimitsExceeded`.
  static let maxConcurrentIncomingCalls = 512

  private init(
    connection: OpaquePointer, uniqueName: String, mailbox: LoopMailbox<BusCommand>,
    gathering: Double
  ) {
    self.connection = connection
    self.uniqueName = uniqueName
    self.mailbox = mailbox
    self.gathering = gathering.isFinite ? max(0, gathering) : 0
    self.pace = GatheringPace(interval: self.gathering, ceiling: Self.gatheringCeiling)
    self.canPassFDs = dbus_connection_can_send_type(connection, CDBUS_TYPE_UNIX_FD) != 0
  }

  deinit {
    dbus_connection_unref(connection)
  }

  // MARK: opening

  private static let threadsInitialised: Bool = {
    dbus_threads_init_default()
    return true
  }()

  /// Starts a bus thread that connects to `address`, registers with the bus (`Hello`) and then
  /// serves the connection until it is closed or lost.
  static func open(address: String, gathering: Double = 0) async -> Result<BusCore, DBusError> {
    await withCheckedContinuation { (waiter: ResultWaiter<BusCore>) in
      do throws(LoopError) {
        try startThread(named: "dbus") {
          BusCore.threadMain(address: address, gathering: gathering, waiter: waiter)
        }
      } catch {
        waiter.resume(
          returning: .failure(DBusError(.connectionFailed, "no thread for the bus: \(error)")))
      }
    }
  }

  private static func threadMain(
    address: String, gathering: Double, waiter: ResultWaiter<BusCore>
  ) {
    _ = threadsInitialised
    var error = CDBus.DBusError()
    dbus_error_init(&error)
    defer { dbus_error_free(&error) }
    guard let connection = dbus_connection_open_private(address, &error) else {
      waiter.resume(returning: .failure(makeError(&error, .connectionFailed, address)))
      return
    }
    dbus_connection_set_exit_on_disconnect(connection, 0)
    guard dbus_bus_register(connection, &error) != 0,
      let name = dbus_bus_get_unique_name(connection)
    else {
      let failure = makeError(&error, .connectionFailed, address)
      dbus_connection_close(connection)
      dbus_connection_unref(connection)
      waiter.resume(returning: .failure(failure))
      return
    }
    let mailbox: LoopMailbox<BusCommand>
    do {
      mailbox = try LoopMailbox()
    } catch {
      dbus_connection_close(connection)
      dbus_connection_unref(connection)
      waiter.resume(returning: .failure(DBusError(.connectionFailed, error.description)))
      return
    }
    let core = BusCore(
      connection: connection, uniqueName: String(cString: name), mailbox: mailbox,
      gathering: gathering)
    guard core.installCallbacks() else {
      core.teardown()
      waiter.resume(returning: .failure(DBusError(.noMemory, "cannot install libdbus callbacks")))
      return
    }
    waiter.resume(returning: .success(core))
    core.runLoop()
  }

  private static func makeError(
    _ error: inout CDBus.DBusError, _ code: DBusError.Code, _ address: String
  ) -> DBusError {
    guard dbus_error_is_set(&error) != 0 else {
      return DBusError(code, "cannot connect to \(address)")
    }
    var result = DBusError(
      code, "\(address): " + (error.message.map { String(cString: $0) } ?? "unknown error"))
    if let name = error.name { result.name = String(cString: name) }
    return result
  }

  private func installCallbacks() -> Bool {
    let me = Unmanaged.passUnretained(self).toOpaque()
    guard
      dbus_connection_set_watch_functions(
        connection, dbusAddWatch, dbusRemoveWatch, dbusToggleWatch, me, nil) != 0,
      dbus_connection_set_timeout_functions(
        connection, dbusAddTimeout, dbusRemoveTimeout, dbusToggleTimeout, me, nil) != 0,
      dbus_connection_add_filter(connection, dbusFilter, me, nil) != 0
    else { return false }
    return true
  }

  /// Detaches the callbacks (so that nothing calls into this object again) and closes.
  private func teardown() {
    dbus_connection_remove_filter(connection, dbusFilter, Unmanaged.passUnretained(self).toOpaque())
    dbus_connection_set_watch_functions(connection, nil, nil, nil, nil, nil)
    dbus_connection_set_timeout_functions(connection, nil, nil, nil, nil, nil)
    dbus_connection_close(connection)
    watches.removeAll()
    timeouts.removeAll()
  }

  // MARK: entry points from other threads

  /// A fresh token for calls and subscriptions.
  func nextToken() -> UInt64 {
    tokens.withLock { value in
      value += 1
      return value
    }
  }

  /// Queues a command for the bus thread and wakes it; answers it at once if the bus thread
  /// has ended.
  func send(_ command: BusCommand) {
    if !mailbox.post(command) { BusCore.refuse(command) }
  }

  // MARK: callbacks (bus thread)

  func timeoutChanged(_ timeout: OpaquePointer) {
    if dbus_timeout_get_enabled(timeout) != 0 {
      timeouts[timeout] = now() + Double(dbus_timeout_get_interval(timeout)) / 1000
    } else {
      timeouts[timeout] = nil
    }
  }

  /// Records signals and method calls; returns true for method calls (we answer all of them).
  func filter(_ raw: OpaquePointer) -> Bool {
    let type = dbus_message_get_type(raw)
    if type == DBUS_MESSAGE_TYPE_SIGNAL {
      let message = MessagePointer(retaining: raw)
      if let signal = message.read().signal { records.append(.signal(signal)) }
      return false
    }
    if type == DBUS_MESSAGE_TYPE_METHOD_CALL {
      let message = MessagePointer(retaining: raw)
      records.append(.methodCall(message, message.read()))
      return true
    }
    return false
  }

  // MARK: the loop

  private func runLoop() {
    while !stopped {
      drainInbox()
      dispatchAll()
      flushBatches()
      if stopped { break }
      pollOnce()
      fireTimeouts()
      dispatchAll()
      flushBatches()
      paceSignals()
    }
    finish()
  }

  /// Hands the signals queued for batch subscribers during a dispatch over, one batch each.
  private func flushBatches() {
    guard !unflushed.isEmpty else { return }
    var seen = Set<ObjectIdentifier>()
    for queue in unflushed where seen.insert(ObjectIdentifier(queue)).inserted { queue.flush() }
    unflushed.removeAll(keepingCapacity: true)
  }

  /// Signals in one turn from which the socket is read at once again, gathering or not (the
  /// subscribers' buffers must keep room).
  static let gatheringCeiling = 256

  /// With ``gathering``: after a turn that delivered signals, whether they came more than once per
  /// interval since the previous such turn (``GatheringPace``); if so the socket is left unread
  /// until the interval ends, so that one wake-up of this thread (and of the tasks that consume the
  /// signals) takes several. The bluetoothd signal stream of advertisements and `StartNotify`
  /// values is what comes this fast.
  private func paceSignals() {
    guard signalsThisTurn > 0 else { return }
    stats.withLock { $0.signalTurns += 1 }
    defer { signalsThisTurn = 0 }
    guard gathering > 0 else { return }
    pace.record(signalsThisTurn, at: now())
  }

  private func pollOnce() {
    // Gathering holds back input only while no reply of ours is awaited (a caller waits for
    // it) and until the interval ends; a hang-up or an error is still seen at once.
    let t = now()
    let gathers = pace.gathers(at: t) && pendingCalls.isEmpty
    var fds = [mailbox.wakePollFD]
    var polled: [OpaquePointer] = []
    for watch in watches where dbus_watch_get_enabled(watch) != 0 {
      let flags = dbus_watch_get_flags(watch)
      var events: Int16 = 0
      if flags & DBUS_WATCH_READABLE.rawValue != 0 && !gathers { events |= Int16(POLLIN) }
      if flags & DBUS_WATCH_WRITABLE.rawValue != 0 { events |= Int16(POLLOUT) }
      fds.append(pollfd(fd: dbus_watch_get_unix_fd(watch), events: events, revents: 0))
      polled.append(watch)
    }
    var deadline = timeouts.values.min() ?? .infinity
    if gathers { deadline = min(deadline, pace.gatherUntil) }
    var timeout: Int32 = -1
    if deadline.isFinite {
      timeout = Int32(max(0, min(60_000, (deadline - t) * 1000)).rounded(.up))
    }
    let ready: Int
    do {
      ready = try pollDescriptors(&fds, timeout: timeout)
    } catch {
      // Nothing the thread can mend: a descriptor closed under it. The watches change with the
      // next dispatch; waiting a moment keeps a broken descriptor from spinning the thread.
      usleep(10_000)
      return
    }
    guard ready > 0 else { return }
    if fds[0].revents != 0 { mailbox.drainWakeUps() }
    for (index, watch) in polled.enumerated() {
      let revents = fds[index + 1].revents
      // An earlier dbus_watch_handle may have removed this watch.
      guard revents != 0, watches.contains(watch) else { continue }
      var flags: UInt32 = 0
      if revents & Int16(POLLIN) != 0 { flags |= DBUS_WATCH_READABLE.rawValue }
      if revents & Int16(POLLOUT) != 0 { flags |= DBUS_WATCH_WRITABLE.rawValue }
      if revents & Int16(POLLERR) != 0 { flags |= DBUS_WATCH_ERROR.rawValue }
      if revents & Int16(POLLHUP) != 0 { flags |= DBUS_WATCH_HANGUP.rawValue }
      _ = dbus_watch_handle(watch, flags)
    }
  }

  private func fireTimeouts() {
    let t = now()
    for (timeout, deadline) in timeouts where deadline <= t {
      guard timeouts[timeout] != nil else { continue }
      // libdbus timeouts repeat until removed or disabled.
      timeouts[timeout] = t + Double(dbus_timeout_get_interval(timeout)) / 1000
      _ = dbus_timeout_handle(timeout)
    }
  }

  /// Dispatches every queued message, then processes what the filter recorded and completes
  /// pending calls.
  private func dispatchAll() {
    while true {
      while dbus_connection_get_dispatch_status(connection) == DBUS_DISPATCH_DATA_REMAINS {
        _ = dbus_connection_dispatch(connection)
        processRecords()
      }
      processRecords()
      completePendingCalls()
      if stopped || dbus_connection_get_dispatch_status(connection) != DBUS_DISPATCH_DATA_REMAINS {
        break
      }
    }
    if dbus_connection_get_is_connected(connection) == 0 { stopped = true }
  }

  private func processRecords() {
    while !records.isEmpty {
      let batch = records
      records.removeAll()
      for record in batch {
        switch record {
        case .signal(let signal): route(signal)
        case .methodCall(let message, let call): handleMethodCall(message, call)
        }
      }
    }
  }

  private func completePendingCalls() {
    for (token, call) in pendingCalls where dbus_pending_call_get_completed(call.pending) != 0 {
      pendingCalls[token] = nil
      let result: Result<CallReply, DBusError>
      if let raw = dbus_pending_call_steal_reply(call.pending) {
        let reply = MessagePointer(owning: raw).read()
        if let error = reply.error {
          result = .failure(error)
        } else {
          result = .success(CallReply(arguments: reply.arguments, serial: reply.serial))
        }
      } else {
        result = .failure(DBusError(.disconnected, "no reply"))
      }
      dbus_pending_call_unref(call.pending)
      updatePendingCount()
      call.waiter.resume(returning: result)
    }
  }

  private func updatePendingCount() {
    let count = pendingCalls.count
    stats.withLock { $0.pendingCalls = count }
  }

  // MARK: signals

  private func route(_ signal: DBusSignal) {
    if signal.interface == "org.freedesktop.DBus.Local" && signal.member == "Disconnected" {
      stopped = true
      return
    }
    if signal.sender == "org.freedesktop.DBus", let change = DBusNameOwnerChange(signal),
      trackedNames[change.name] != nil
    {
      trackedNames[change.name]?.owner = change.newOwner
      trackedNames[change.name]?.changeSeen = true
    }
    var delivered = 0
    var dropped = 0
    for subscription in subscriptions.values {
      let owner = subscription.rule.sender.flatMap { trackedNames[$0]?.owner }
      guard subscription.rule.matches(signal, senderOwner: owner) else { continue }
      if subscription.sink.offer(signal) {
        delivered += 1
        if case .batches(let queue) = subscription.sink, unflushed.last !== queue {
          unflushed.append(queue)
        }
      } else {
        dropped += 1
      }
    }
    signalsThisTurn += delivered
    if delivered + dropped > 0 {
      stats.withLock {
        $0.signalsDelivered += delivered
        $0.signalsDropped += dropped
      }
    }
  }

  private static func nameOwnerRule(_ name: String) -> DBusMatchRule {
    DBusMatchRule(
      sender: "org.freedesktop.DBus", interface: "org.freedesktop.DBus",
      member: "NameOwnerChanged", path: "/org/freedesktop/DBus", arguments: [0: name])
  }

  /// Sends `AddMatch`/`RemoveMatch` without waiting for the reply.
  private func sendMatch(_ member: String, _ rule: DBusMatchRule) {
    let call = OutgoingCall(
      destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
      interface: "org.freedesktop.DBus", member: member, arguments: [.string(rule.description)],
      noReply: true)
    _ = try? sendNoReply(call)
  }

  // MARK: commands

  private func drainInbox() {
    for command in mailbox.take() { execute(command) }
  }

  private func execute(_ command: BusCommand) {
    switch command {
    case .call(let token, let call, let timeout, let waiter):
      do throws(DBusError) {
        let message = try makeMethodCall(call)
        var pending: OpaquePointer?
        guard dbus_connection_send_with_reply(connection, message.raw, &pending, timeout) != 0
        else { throw DBusError(.noMemory, "cannot send the method call") }
        guard let pending else { throw DBusError(.disconnected, "the connection is closed") }
        pendingCalls[token] = PendingCall(pending: pending, waiter: waiter)
        updatePendingCount()
      } catch {
        waiter.resume(returning: .failure(error))
      }
    case .cancelCall(let token):
      guard let call = pendingCalls.removeValue(forKey: token) else { return }
      dbus_pending_call_cancel(call.pending)
      dbus_pending_call_unref(call.pending)
      updatePendingCount()
      call.waiter.resume(returning: .failure(DBusError(.cancelled, "the call was cancelled")))
    case .emit(let signal, let waiter):
      do throws(DBusError) {
        try emit(signal)
        waiter?.resume(returning: .success(()))
      } catch {
        waiter?.resume(returning: .failure(error))
      }
    case .subscribe(let id, let rule, let sink):
      subscriptions[id] = Subscription(rule: rule, sink: sink)
    case .unsubscribe(let id):
      guard let subscription = subscriptions.removeValue(forKey: id) else { return }
      sendMatch("RemoveMatch", subscription.rule)
      if let sender = subscription.rule.sender, var tracked = trackedNames[sender] {
        tracked.uses -= 1
        trackedNames[sender] = tracked.uses > 0 ? tracked : nil
        if tracked.uses == 0 { sendMatch("RemoveMatch", Self.nameOwnerRule(sender)) }
      }
    case .trackName(let name):
      if var tracked = trackedNames[name] {
        tracked.uses += 1
        trackedNames[name] = tracked
      } else {
        trackedNames[name] = TrackedName(uses: 1, owner: nil, changeSeen: false)
        sendMatch("AddMatch", Self.nameOwnerRule(name))
      }
    case .initialOwner(let name, let owner):
      if let tracked = trackedNames[name], !tracked.changeSeen {
        trackedNames[name]?.owner = owner
      }
    case .export(let path, let object, let properties, let waiter):
      waiter.resume(returning: export(object, at: path, properties: properties))
    case .unexport(let path, let waiter):
      waiter.resume(returning: unexport(at: path))
    case .addObjectManager(let path, let waiter):
      managers.insert(path)
      waiter.resume(returning: .success(()))
    case .reply(let token, let result):
      sendReply(token: token, result)
    case .awaitClose(let waiter):
      closeWaiters.append(waiter)
    case .close:
      stopped = true
    }
  }

  func makeMethodCall(_ call: OutgoingCall) throws(DBusError) -> MessagePointer {
    let message = try MessagePointer.methodCall(
      destination: call.destination, path: call.path, interface: call.interface,
      member: call.member)
    try message.append(call.arguments, allowFDs: canPassFDs)
    return message
  }

  func sendNoReply(_ call: OutgoingCall) throws(DBusError) {
    let message = try makeMethodCall(call)
    message.setNoReply()
    try send(message)
  }

  func emit(_ signal: OutgoingSignal) throws(DBusError) {
    let message = try MessagePointer.signal(
      path: signal.path, interface: signal.interface, member: signal.member,
      destination: signal.destination)
    try message.append(signal.arguments, allowFDs: canPassFDs)
    try send(message)
  }

  func send(_ message: MessagePointer) throws(DBusError) {
    guard dbus_connection_send(connection, message.raw, nil) != 0 else {
      throw DBusError(.noMemory, "cannot queue the message")
    }
  }

  // MARK: shutting down

  private func finish() {
    let disconnected = DBusError(.disconnected, "the D-Bus connection is closed")
    for call in pendingCalls.values {
      dbus_pending_call_cancel(call.pending)
      dbus_pending_call_unref(call.pending)
      call.waiter.resume(returning: .failure(disconnected))
    }
    pendingCalls.removeAll()
    updatePendingCount()
    flushBatches()
    for subscription in subscriptions.values { subscription.sink.finish() }
    subscriptions.removeAll()
    incomingCalls.removeAll()
    records.removeAll()
    teardown()
    stats.withLock { $0.connected = false }
    for command in mailbox.close() { BusCore.refuse(command) }
    for waiter in closeWaiters { waiter.resume() }
    closeWaiters.removeAll()
  }

  /// Answers a command that arrives after the bus thread has ended.
  private static func refuse(_ command: BusCommand) {
    let error = DBusError(.disconnected, "the D-Bus connection is closed")
    switch command {
    case .call(_, _, _, let waiter): waiter.resume(returning: .failure(error))
    case .emit(_, let waiter): waiter?.resume(returning: .failure(error))
    case .subscribe(_, _, let sink): sink.finish()
    case .export(_, _, _, let waiter), .unexport(_, let waiter),
      .addObjectManager(_, let waiter):
      waiter.resume(returning: .failure(error))
    case .awaitClose(let waiter): waiter.resume()
    case .cancelCall, .unsubscribe, .trackName, .initialOwner, .reply, .close: break
    }
  }

  func now() -> Double { clockSeconds() }
}
