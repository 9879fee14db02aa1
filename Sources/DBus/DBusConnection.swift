import Glibc
import LoopSupport
import Synchronization

/// A connection to a D-Bus message bus: method calls, signal subscriptions and exported objects.
///
/// Open one with ``system()``, ``session()`` or ``init(address:)`` and keep it for the life of
/// the program; it is cheap to share. It closes with ``close()``, when the bus goes away, or
/// when the last reference is dropped. After that every operation throws
/// ``DBusError/Code/disconnected``; open a new connection to carry on.
///
/// - Important: All libdbus calls happen on one private bus thread owned by the connection;
///   every method here is safe to call from any thread or task. Handlers of exported objects
///   run in tasks of their own, never on the bus thread.
public final class DBusConnection: Sendable {
  private let core: BusCore
  /// Told of every finished method call (``observeCalls(_:)``).
  private let callObserver = Mutex<(@Sendable (DBusCallRecord) -> Void)?>(nil)

  /// The connection's unique name on the bus, e.g. `:1.42`.
  public var uniqueName: String { core.uniqueName }

  /// Whether the connection can pass Unix file descriptors (`h` values).
  public var canPassFileDescriptors: Bool { core.canPassFDs }

  /// A snapshot of the connection's counters.
  public var statistics: DBusStatistics { core.stats.withLock { $0 } }

  /// Whether the connection is still open.
  public var isConnected: Bool { statistics.connected }

  /// The default system bus address.
  public static let defaultSystemBusAddress = "unix:path=/run/dbus/system_bus_socket"

  /// Connects to the bus at `address` and registers with it (`Hello`).
  ///
  /// - Parameters:
  ///   - address: a D-Bus address such as `unix:path=/run/dbus/system_bus_socket`.
  ///   - gathering: While signals arrive more than once per this interval, the bus thread
  ///     reads the connection once per interval (one wake-up of it and of the subscribers for
  ///     several signals), each signal delivered at most an interval later. Replies to calls
  ///     of this connection are read at once; a call made *to* an exported object can wait up
  ///     to the interval. `.zero` (the default) reads everything at once.
  /// - Throws: ``DBusError`` `connection_failed` when the bus cannot be reached or refuses us.
  public init(address: String, gathering: Duration = .zero) async throws(DBusError) {
    guard !address.isEmpty, !address.utf8.contains(0) else {
      throw DBusError(.invalidArgument, "empty or invalid bus address")
    }
    core = try await BusCore.open(address: address, gathering: gathering.seconds).get()
  }

  deinit {
    core.send(.close)
  }

  /// Connects to the system bus, at `DBUS_SYSTEM_BUS_ADDRESS` when that is set.
  ///
  /// - Parameter gathering: As in ``init(address:gathering:)``.
  /// - Returns: the open connection.
  /// - Throws: ``DBusError`` `connection_failed` when the bus cannot be reached.
  public static func system(gathering: Duration = .zero) async throws(DBusError) -> DBusConnection {
    let address = environment("DBUS_SYSTEM_BUS_ADDRESS") ?? defaultSystemBusAddress
    return try await DBusConnection(address: address, gathering: gathering)
  }

  /// Connects to the session bus at `DBUS_SESSION_BUS_ADDRESS`.
  ///
  /// - Returns: the open connection.
  /// - Throws: ``DBusError`` `connection_failed` when the variable is unset or the bus cannot be
  ///   reached.
  public static func session() async throws(DBusError) -> DBusConnection {
    guard let address = environment("DBUS_SESSION_BUS_ADDRESS") else {
      throw DBusError(.connectionFailed, "DBUS_SESSION_BUS_ADDRESS is not set")
    }
    return try await DBusConnection(address: address)
  }

  private static func environment(_ name: String) -> String? {
    guard let value = getenv(name) else { return nil }
    let text = String(cString: value)
    return text.isEmpty ? nil : text
  }

  /// Closes the connection and waits until the bus thread has finished. Pending calls fail
  /// with ``DBusError/Code/disconnected`` and signal streams finish.
  public func close() async {
    core.send(.close)
    await closed()
  }

  /// Waits until the connection is closed, by ``close()`` or because the bus went away.
  public func closed() async {
    await withCheckedContinuation { waiter in core.send(.awaitClose(waiter)) }
  }

  // MARK: method calls

  /// Tells `observer` of every method call this connection makes, once it has its reply (or
  /// failed): which method, how long it took, whether it succeeded. For latency metrics; it
  /// runs on the caller's task and must be quick. `nil` stops it.
  ///
  /// - Parameter observer: The observer, or `nil`.
  public func observeCalls(_ observer: (@Sendable (DBusCallRecord) -> Void)?) {
    callObserver.withLock { $0 = observer }
  }

  /// Calls a method and waits for its reply.
  ///
  /// - Parameters:
  ///   - destination: the bus name of the peer, e.g. `org.bluez`; nil for a peer-to-peer call.
  ///   - path: the object path.
  ///   - interface: the interface of the method; nil lets the peer pick.
  ///   - member: the method name.
  ///   - arguments: the arguments.
  ///   - timeout: how long to wait for the reply (libdbus's default is 25 s).
  /// - Returns: the reply's values.
  /// - Throws: ``DBusError`` with the peer's error name for error replies;
  ///   ``DBusError/Code/noReply`` when no reply came in time; `invalid_argument` for invalid
  ///   names or values; `cancelled` when the task was cancelled; `disconnected`.
  public func call(
    destination: String?, path: DBusObjectPath, interface: String?, member: String,
    arguments: [DBusValue] = [], timeout: Duration = .seconds(25)
  ) async throws(DBusError) -> [DBusValue] {
    try await orderedCall(
      destination: destination, path: path, interface: interface, member: member,
      arguments: arguments, timeout: timeout
    ).values
  }

  /// Calls a method as ``call(destination:path:interface:member:arguments:timeout:)`` does,
  /// and also returns the serial the peer gave its reply: a peer's signals with a lower serial
  /// (``DBusSignal/serial``, ``DBusSerial/isAfter(_:_:)``) were sent before the reply, so what
  /// they said is already in it (a snapshot such as `GetManagedObjects`).
  ///
  /// - Parameters:
  ///   - destination: the bus name of the peer; nil for a peer-to-peer call.
  ///   - path: the object path.
  ///   - interface: the interface of the method; nil lets the peer pick.
  ///   - member: the method name.
  ///   - arguments: the arguments.
  ///   - timeout: how long to wait for the reply.
  /// - Returns: The reply's values and its serial.
  /// - Throws: ``DBusError`` as ``call(destination:path:interface:member:arguments:timeout:)``
  ///   throws it.
  public func orderedCall(
    destination: String?, path: DBusObjectPath, interface: String?, member: String,
    arguments: [DBusValue] = [], timeout: Duration = .seconds(25)
  ) async throws(DBusError) -> (values: [DBusValue], serial: UInt32) {
    if let destination, !NameRules.isValidBusName(destination) {
      throw DBusError(.invalidArgument, "invalid destination '\(destination)'")
    }
    if let interface, !NameRules.isValidInterfaceName(interface) {
      throw DBusError(.invalidArgument, "invalid interface '\(interface)'")
    }
    guard NameRules.isValidMemberName(member) else {
      throw DBusError(.invalidArgument, "invalid member '\(member)'")
    }
    for argument in arguments { try argument.validate() }
    let request = OutgoingCall(
      destination: destination, path: path, interface: interface, member: member,
      arguments: arguments)
    let milliseconds = Int32(clamping: max(1, timeout.milliseconds))
    let token = core.nextToken()
    let core = self.core
    let started = ContinuousClock.now
    let result = await withTaskCancellationHandler {
      await withCheckedContinuation { (waiter: ResultWaiter<CallReply>) in
        if Task.isCancelled {
          waiter.resume(returning: .failure(DBusError(.cancelled, "the call was cancelled")))
        } else {
          core.send(.call(token: token, request, timeoutMilliseconds: milliseconds, waiter))
        }
      }
    } onCancel: {
      core.send(.cancelCall(token: token))
    }
    if let observer = callObserver.withLock({ $0 }) {
      let elapsed = (ContinuousClock.now - started).seconds
      let succeeded: Bool = if case .success = result { true } else { false }
      observer(
        DBusCallRecord(
          interface: interface, member: member,
          seconds: elapsed,
          succeeded: succeeded))
    }
    let reply = try result.get()
    return (reply.arguments, reply.serial)
  }

  // MARK: signals

  /// Subscribes to signals: installs `rule` on the bus and returns the matching signals.
  ///
  /// The rule is active on the bus when this returns, so a snapshot taken afterwards misses
  /// nothing. The subscription ends (and the rule is removed) when the stream's consumer
  /// stops iterating or the stream is dropped; the stream finishes when the connection closes.
  ///
  /// - Parameters:
  ///   - rule: which signals to receive.
  ///   - bufferSize: how many undelivered signals the stream holds; when full, newer signals are
  ///     dropped (keeping the oldest, so state is not skipped silently) and counted in
  ///     ``DBusStatistics/signalsDropped``.
  /// - Returns: the signals, in arrival order.
  /// - Throws: ``DBusError`` `invalid_argument` for an invalid rule, or the bus's error reply to
  ///   `AddMatch`.
  public func signals(
    matching rule: DBusMatchRule, bufferSize: Int = 1024
  ) async throws(DBusError) -> AsyncStream<DBusSignal> {
    let (stream, continuation) = AsyncStream.makeStream(
      of: DBusSignal.self, bufferingPolicy: .bufferingOldest(max(1, bufferSize)))
    let core = self.core
    try await subscribe(rule, .stream(continuation)) { id in
      continuation.onTermination = { _ in core.send(.unsubscribe(id: id)) }
    }
    return stream
  }

  /// Subscribes to signals matching `rule`, handed over a bus-thread turn at a time: one wake-up
  /// of the consumer for every signal the turn read (with a gathering connection, every signal
  /// of an interval), where ``signals(matching:bufferSize:)`` wakes it once per signal.
  ///
  /// - Parameters:
  ///   - rule: which signals to receive.
  ///   - bufferSize: how many signals the consumer has not taken are held; when full, newer
  ///     signals are dropped (keeping the oldest) and counted in
  ///     ``DBusStatistics/signalsDropped``.
  /// - Returns: the signals in batches, in arrival order.
  /// - Throws: ``DBusError`` as for ``signals(matching:bufferSize:)``.
  public func signalBatches(
    matching rule: DBusMatchRule, bufferSize: Int = 1024
  ) async throws(DBusError) -> DBusSignalBatches {
    let core = self.core
    let id = core.nextToken()
    let queue = SignalQueue(capacity: bufferSize) { core.send(.unsubscribe(id: id)) }
    do {
      try await subscribe(rule, .batches(queue), id: id)
    } catch {
      // Nobody will iterate it: the subscription ends here (as a stream's does when finished).
      queue.terminate()
      throw error
    }
    return DBusSignalBatches(queue)
  }

  /// Registers a subscription with the bus thread and adds its match rule to the bus.
  private func subscribe(
    _ rule: DBusMatchRule, _ sink: SignalSink, id: UInt64? = nil,
    registered: (UInt64) -> Void = { _ in }
  ) async throws(DBusError) {
    try rule.validate()
    if let sender = rule.sender, !sender.hasPrefix(":"), sender != "org.freedesktop.DBus" {
      core.send(.trackName(sender))
      let owner = try? await nameOwner(of: sender)
      core.send(.initialOwner(name: sender, owner: owner ?? nil))
    }
    let id = id ?? core.nextToken()
    registered(id)
    core.send(.subscribe(id: id, rule, sink))
    do {
      _ = try await callBus("AddMatch", [.string(rule.description)])
    } catch {
      sink.finish()
      throw error
    }
  }

  /// Subscribes to owner changes of one bus name (or of all names when `name` is nil).
  ///
  /// - Parameters:
  ///   - name: the name to watch, e.g. `org.bluez`.
  ///   - bufferSize: as for ``signals(matching:bufferSize:)``.
  /// - Returns: the changes, in order.
  /// - Throws: ``DBusError`` as for ``signals(matching:bufferSize:)``.
  public func nameOwnerChanges(
    of name: String? = nil, bufferSize: Int = 256
  ) async throws(DBusError) -> AsyncCompactMapSequence<AsyncStream<DBusSignal>, DBusNameOwnerChange>
  {
    if let name, !NameRules.isValidBusName(name) {
      throw DBusError(.invalidArgument, "invalid bus name '\(name)'")
    }
    var rule = DBusMatchRule(
      sender: "org.freedesktop.DBus", interface: "org.freedesktop.DBus",
      member: "NameOwnerChanged", path: "/org/freedesktop/DBus")
    if let name { rule.arguments[0] = name }
    return try await signals(matching: rule, bufferSize: bufferSize).compactMap {
      DBusNameOwnerChange($0)
    }
  }

  /// Emits a signal from one of our objects.
  ///
  /// - Parameters:
  ///   - path: the emitting object.
  ///   - interface: the signal's interface.
  ///   - member: the signal name.
  ///   - arguments: the arguments.
  ///   - destination: a unique name for a unicast signal; nil broadcasts.
  /// - Throws: ``DBusError`` `invalid_argument` for invalid names or values; `disconnected`.
  public func emitSignal(
    path: DBusObjectPath, interface: String, member: String, arguments: [DBusValue] = [],
    destination: String? = nil
  ) async throws(DBusError) {
    guard NameRules.isValidInterfaceName(interface) else {
      throw DBusError(.invalidArgument, "invalid interface '\(interface)'")
    }
    guard NameRules.isValidMemberName(member) else {
      throw DBusError(.invalidArgument, "invalid member '\(member)'")
    }
    if let destination, !NameRules.isValidBusName(destination) {
      throw DBusError(.invalidArgument, "invalid destination '\(destination)'")
    }
    for argument in arguments { try argument.validate() }
    let signal = OutgoingSignal(
      path: path, interface: interface, member: member, arguments: arguments,
      destination: destination)
    let core = self.core
    let result = await withCheckedContinuation { (waiter: ResultWaiter<Void>) in
      core.send(.emit(signal, waiter))
    }
    try result.get()
  }

  /// Emits `org.freedesktop.DBus.Properties.PropertiesChanged` for one of our objects.
  ///
  /// - Parameters:
  ///   - path: the object.
  ///   - interface: the interface whose properties changed.
  ///   - changed: new values by property name.
  ///   - invalidated: names of properties that changed without their value being sent.
  /// - Throws: ``DBusError`` as for ``emitSignal(path:interface:member:arguments:destination:)``.
  public func emitPropertiesChanged(
    path: DBusObjectPath, interface: String, changed: [String: DBusValue],
    invalidated: [String] = []
  ) async throws(DBusError) {
    try await emitSignal(
      path: path, interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged",
      arguments: [.string(interface), .properties(changed), .strings(invalidated)])
  }

  // MARK: names

  /// Asks the bus for a well-known name.
  ///
  /// - Parameters:
  ///   - name: the name, e.g. `com.example.Gateway`.
  ///   - allowReplacement: let another connection take the name over (flag 0x1).
  ///   - replaceExisting: take the name from its owner if that allowed replacement (flag 0x2).
  ///   - queue: wait in the queue when the name is taken (without flag 0x4).
  /// - Returns: the bus's answer.
  /// - Throws: ``DBusError`` from the bus (e.g. `access_denied` by policy).
  public func requestName(
    _ name: String, allowReplacement: Bool = false, replaceExisting: Bool = false,
    queue: Bool = false
  ) async throws(DBusError) -> DBusRequestNameReply {
    guard NameRules.isValidBusName(name), !name.hasPrefix(":") else {
      throw DBusError(.invalidArgument, "invalid well-known name '\(name)'")
    }
    var flags: UInt32 = 0
    if allowReplacement { flags |= 1 }
    if replaceExisting { flags |= 2 }
    if !queue { flags |= 4 }
    let reply = try await callBus("RequestName", [.string(name), .uint32(flags)])
    guard case .uint32(let code)? = reply.first, let answer = DBusRequestNameReply(rawValue: code)
    else { throw DBusError(.unexpectedReply, "RequestName answered \(reply)") }
    return answer
  }

  /// Gives up a well-known name.
  ///
  /// - Parameter name: the name.
  /// - Returns: whether we owned it (`1` released, `2` non-existent, `3` not owner → false).
  /// - Throws: ``DBusError`` from the bus.
  @discardableResult
  public func releaseName(_ name: String) async throws(DBusError) -> Bool {
    guard NameRules.isValidBusName(name) else {
      throw DBusError(.invalidArgument, "invalid bus name '\(name)'")
    }
    let reply = try await callBus("ReleaseName", [.string(name)])
    return reply.first == .uint32(1)
  }

  /// The unique name owning `name`, or nil when it has no owner.
  ///
  /// - Parameter name: a well-known name, e.g. `org.bluez`.
  /// - Returns: the owner's unique name.
  /// - Throws: ``DBusError`` for invalid names or bus failures.
  public func nameOwner(of name: String) async throws(DBusError) -> String? {
    do {
      let reply = try await callBus("GetNameOwner", [.string(name)])
      return reply.first?.stringValue
    } catch  where error.code == .nameHasNoOwner {
      return nil
    }
  }

  private func callBus(_ member: String, _ arguments: [DBusValue]) async throws(DBusError)
    -> [DBusValue]
  {
    try await call(
      destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
      interface: "org.freedesktop.DBus", member: member, arguments: arguments)
  }

  // MARK: exported objects

  /// Serves `object` at `path` until ``unexport(at:)``.
  ///
  /// If an object manager (``addObjectManager(at:)``) is above `path`, it emits
  /// `InterfacesAdded` with the object's properties (read through their getters first).
  ///
  /// - Parameters:
  ///   - object: the interfaces to serve.
  ///   - path: where to serve them.
  /// - Throws: ``DBusError`` `invalid_argument` for an invalid interface or a path already in
  ///   use; `disconnected`.
  public func export(_ object: DBusExportedObject, at path: DBusObjectPath)
    async throws(DBusError)
  {
    for interface in object.interfaces { try interface.validate() }
    var properties: [String: [String: DBusValue]] = [:]
    for interface in object.interfaces {
      if case .dictionary(_, _, let entries) = await BusCore.propertiesValue(interface) {
        for (key, value) in entries {
          if let name = key.stringValue {
            properties[interface.name, default: [:]][name] = value.unwrapped
          }
        }
      }
    }
    let core = self.core
    let result = await withCheckedContinuation { (waiter: ResultWaiter<Void>) in
      core.send(.export(path, object, properties: properties, waiter))
    }
    try result.get()
  }

  /// Stops serving the object at `path`, emitting `InterfacesRemoved` if a manager is above it.
  ///
  /// - Parameter path: the object's path.
  /// - Throws: ``DBusError`` `unknown_object` when nothing is exported there; `disconnected`.
  public func unexport(at path: DBusObjectPath) async throws(DBusError) {
    let core = self.core
    let result = await withCheckedContinuation { (waiter: ResultWaiter<Void>) in
      core.send(.unexport(path, waiter))
    }
    try result.get()
  }

  /// Serves `org.freedesktop.DBus.ObjectManager` at `path` for the objects below it.
  ///
  /// - Parameter path: the manager's path (an object may or may not be exported there too).
  /// - Throws: ``DBusError`` `disconnected`.
  public func addObjectManager(at path: DBusObjectPath) async throws(DBusError) {
    let core = self.core
    let result = await withCheckedContinuation { (waiter: ResultWaiter<Void>) in
      core.send(.addObjectManager(path, waiter))
    }
    try result.get()
  }
}
