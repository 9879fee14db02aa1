public import BridgeCore
import DBus
public import Logging
import LoopSupport

/// The ``BLEPeripheral`` port over BlueZ's D-Bus API: a GATT application registered with
/// `GattManager1.RegisterApplication` and an LE advertisement registered with
/// `LEAdvertisingManager1.RegisterAdvertisement`, kept registered across bluetoothd restarts,
/// adapter power cycles, refusals and lost bus connections.
///
/// Run it as a long-running service (``run()``, e.g. as a swift-service-lifecycle `Service`): it
/// opens its **own** system bus connection, follows `NameOwnerChanged` of `org.bluez`, mirrors
/// the adapters (one `GetManagedObjects` per bluetoothd instance, then `InterfacesAdded`,
/// `InterfacesRemoved` and the adapters' `PropertiesChanged`), and registers whenever a
/// definition is set (``startPeripheral(_:)``), bluetoothd runs and the chosen adapter (or the
/// first powered one) is powered. Everything it does to BlueZ happens in one place, one step
/// at a time, so a change that arrives mid-registration is handled by the next step:
///
/// - registering exports `<root>/app` (ObjectManager) with `service0` (`GattService1`),
///   `char0` (the transfer characteristic: read, notify) and optionally `char1` (write), calls
///   `RegisterApplication`, then exports `<root>/advertisement0` (`LEAdvertisement1`, type
///   `peripheral`, the service UUID, the local name when it fits 31 bytes) and calls
///   `RegisterAdvertisement`; both succeeded → ``PeripheralState/advertising``;
/// - any refusal (`AlreadyExists`, `Failed to register advertisement`, a timeout, …) undoes what
///   was registered and exported, reports ``PeripheralState/unavailable(reason:)`` and retries
///   after ``BlueZPeripheralConfiguration/retryDelay``, doubled up to
///   ``BlueZPeripheralConfiguration/maxRetryDelay``;
/// - bluetoothd gone, the adapter powered off or removed → unregister what is left, unexport,
///   ``PeripheralState/unavailable(reason:)``; back → registered again at once;
/// - `LEAdvertisement1.Release` (bluetoothd dropped the advertisement) → the advertisement is
///   registered again.
///
/// Centrals: `ReadValue` serves the value of ``setReadValue(_:)`` from the requested offset
/// (`org.bluez.Error.InvalidOffset` past the end) and reports the central's MTU from the call's
/// options; centrals outside ``PeripheralService/allowedCentrals`` get
/// `org.bluez.Error.NotAuthorized` (reads and writes: BlueZ 5.66 tells no central on
/// `StartNotify`). ``notify(_:)`` emits `PropertiesChanged(Value)` on the characteristic, which
/// bluetoothd sends to every subscribed central. Subscriptions: BlueZ 5.66 calls `StartNotify`
/// (no options) for every central that subscribes and `StopNotify` only when the last one has
/// left, so each `StartNotify` reports ``PeripheralEvent/subscribed(central:mtu:)`` with no
/// central, and `StopNotify` (or the loss of the registration) reports one
/// ``PeripheralEvent/unsubscribed(central:)`` per subscription still counted. With
/// ``BlueZPeripheralConfiguration/notifySocket`` the characteristic also offers bluetoothd a
/// socket (`NotifyAcquired`, `AcquireNotify`), which ``notify(_:)`` uses while one device is
/// connected (see `BlueZPeripheral+NotifySocket.swift`). Only the current owner of `org.bluez`
/// may call our methods.
///
/// Events (``peripheralEvents()``): each subscriber buffers at most
/// ``BlueZPeripheralConfiguration/eventBufferSize`` events and drops its **oldest** when full
/// (counted in ``Statistics/droppedEvents``).
///
/// - Important: All state lives in this actor. ``run()`` is meant to be called once; the event
///   streams finish when it returns. Closing the connection (cancelling ``run()``) makes
///   bluetoothd drop our registrations by itself; call ``stopPeripheral()`` first for an
///   orderly unregistration.
public actor BlueZPeripheral: BLEPeripheral {
  /// Counters for health reports and tests.
  public struct Statistics: Sendable, Hashable {
    /// Bus connections opened.
    public var connections = 0
    /// Successful `RegisterApplication` calls.
    public var applicationRegistrations = 0
    /// Successful `RegisterAdvertisement` calls.
    public var advertisementRegistrations = 0
    /// Registration attempts that failed (each retried with backoff).
    public var failedRegistrations = 0
    /// `LEAdvertisement1.Release` calls: bluetoothd dropped our advertisement.
    public var releases = 0
    /// Notifications sent.
    public var notifications = 0
    /// Reads and writes refused because the central is not allowed.
    public var refused = 0
    /// Events dropped because a subscriber fell behind.
    public var droppedEvents = 0
    /// Whether the application and the advertisement are registered now.
    public var registered = false
    /// The local name advertised now, `nil` for none.
    public var advertisedLocalName: String?
    /// A local name that was asked for but left out because it does not fit the 31-byte legacy
    /// advertising data.
    public var droppedLocalName: String?
  }

  /// What a registration depends on: the definition without the allow-list (which changes
  /// nothing registered).
  struct RegistrationKey: Sendable, Hashable {
    let definition: PeripheralService

    init(_ definition: PeripheralService) {
      var shape = definition
      shape.allowedCentrals = []
      self.definition = shape
    }
  }

  /// What should be registered now, from the definition, the stack and the adapters.
  enum Target: Sendable, Hashable {
    case stopped
    case unavailable(String)
    case publish(RegistrationKey, adapter: DBusObjectPath, epoch: Int)
  }

  /// What is registered, step by step, so that undoing it undoes exactly that.
  struct Registration: Sendable {
    let epoch: Int
    let adapter: DBusObjectPath
    let key: RegistrationKey
    /// The connection the objects are exported on.
    let connection: DBusConnection
    /// Application objects exported, in export order.
    var exported: [DBusObjectPath] = []
    var applicationRegistered = false
    var advertisementExported = false
    var advertisementRegistered = false

    var complete: Bool { applicationRegistered && advertisementRegistered }

    func serves(_ target: Target) -> Bool {
      guard case .publish(let key, let adapter, let epoch) = target else { return false }
      return key == self.key && adapter == self.adapter && epoch == self.epoch
    }
  }

  /// The settings.
  public nonisolated let configuration: BlueZPeripheralConfiguration
  let logger: Logger
  let hub: EventHub<PeripheralEvent>
  let paths: PeripheralPaths
  let clock = ContinuousClock()
  /// Wakes the registration loop; holds at most one pending wake-up.
  let kicks: AsyncStream<Void>
  let kicker: AsyncStream<Void>.Continuation

  var definition: PeripheralService?
  var readValue: [UInt8] = []
  var state: PeripheralState = .stopped

  /// The session the peripheral made for itself, which ``run()`` runs; `nil` when it shares
  /// one.
  let ownSession: BlueZSession?
  var connection: DBusConnection?
  /// The unique name owning `org.bluez`, `nil` while bluetoothd is not running.
  var owner: String?
  /// Increases whenever the stack (or the connection) is lost, so that registrations and
  /// snapshots of an old stack are recognised.
  var epoch = 0
  var adapters = PeripheralAdapters()
  var synced = false

  var registration: Registration?
  /// The target of the last registration round, to reset the backoff when it changes.
  var lastTarget: Target?
  var failures = 0
  var retryAt: ContinuousClock.Instant?
  /// The turn of the registration steps (taken by the loop and by ``stopPeripheral()``).
  var registrationTurn = TurnQueue()

  /// Subscriptions since the last `StopNotify` (or the hang-up of the acquired socket), with
  /// the central when BlueZ said which (`AcquireNotify`), `nil` when not (`StartNotify`):
  /// BlueZ 5.66 calls `StartNotify` for every central that subscribes but `StopNotify` only
  /// when the last one leaves, so each subscription reported is matched by one `unsubscribed`
  /// then.
  var subscribed: [BluetoothAddress?] = []
  var notifying: Bool { !subscribed.isEmpty }
  /// The socket bluetoothd took for the transfer characteristic's notifications, while it
  /// holds it (see `BlueZPeripheral+NotifySocket.swift`).
  var acquired: AcquiredNotify?
  /// Numbers the acquired sockets, so that a late hang-up of an old one is recognised.
  var acquisitions = 0
  /// Watches acquired sockets for bluetoothd's hang-up; made at the first `AcquireNotify`.
  var hangUpWatcher: DatagramReader?
  /// Subscriptions bluetoothd told us of (`StartNotify`, `AcquireNotify`) since the start.
  var subscriptionsSeen = 0
  /// How many times bluetoothd's count of subscriptions dropped to zero (`StopNotify`, the
  /// socket's hang-up, the stack's loss).
  var subscriptionEnds = 0
  /// Whether a retirement of the socket is waiting for bluetoothd to read what is queued.
  var retiring = false
  /// Devices counted as subscribers of the shared socket (`several_centrals: socket`; see
  /// ``presumeSubscribers()``).
  var presumed: Set<DBusObjectPath> = []
  /// Devices waiting out the grace before they are counted, with the serial of the socket
  /// they would share.
  var presuming: [DBusObjectPath: Int] = [:]
  /// The last MTU reported per central, so each change is reported once.
  var knownMTU: [BluetoothAddress: Int] = [:]
  var counters = Statistics()

  /// Makes a peripheral with its own ``BlueZSession`` (from the configuration's bus settings),
  /// which ``run()`` runs; nothing happens until then.
  ///
  /// - Parameters:
  ///   - configuration: The settings.
  ///   - logger: Where to log (metadata keys `ble.adapter`, `ble.address`, `dbus.error`).
  public init(
    configuration: BlueZPeripheralConfiguration = BlueZPeripheralConfiguration(), logger: Logger
  ) {
    let session = BlueZSession(configuration: configuration.bus, logger: logger)
    self.init(session: session, owning: true, configuration: configuration, logger: logger)
  }

  /// Makes a peripheral on a shared session; run the session as long as the peripheral runs.
  ///
  /// - Parameters:
  ///   - session: The session (one bus connection for the central and the peripheral).
  ///   - configuration: The settings (its bus settings are the session's, not these).
  ///   - logger: Where to log (metadata keys `ble.adapter`, `ble.address`, `dbus.error`).
  public init(
    session: BlueZSession,
    configuration: BlueZPeripheralConfiguration = BlueZPeripheralConfiguration(), logger: Logger
  ) {
    self.init(session: session, owning: false, configuration: configuration, logger: logger)
  }

  private init(
    session: BlueZSession, owning: Bool, configuration: BlueZPeripheralConfiguration,
    logger: Logger
  ) {
    self.configuration = configuration
    ownSession = owning ? session : nil
    self.logger = logger
    hub = EventHub(bufferSize: configuration.eventBufferSize)
    if let root = try? DBusObjectPath(configuration.objectRoot),
      let paths = try? PeripheralPaths(root: root)
    {
      self.paths = paths
    } else {
      logger.warning(
        "invalid peripheral object root; using the default",
        metadata: ["dbus.path": "\(configuration.objectRoot)"])
      paths = PeripheralPaths.standard
    }
    (kicks, kicker) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    session.register(self)
  }

  // MARK: port

  /// A stream of everything the peripheral reports from now on; it finishes when ``run()``
  /// returns.
  ///
  /// Buffering: the newest ``BlueZPeripheralConfiguration/eventBufferSize`` events per
  /// subscriber.
  ///
  /// - Returns: The events.
  public nonisolated func peripheralEvents() -> AsyncStream<PeripheralEvent> {
    hub.subscribe()
  }

  /// Sets (or replaces) what to publish; registration happens in ``run()`` as soon as
  /// bluetoothd and an adapter allow, and is reported as
  /// ``PeripheralEvent/stateChanged(_:)``. A new definition that differs only in
  /// ``PeripheralService/allowedCentrals`` applies at once without registering again.
  ///
  /// - Parameter service: What to publish and advertise.
  /// - Throws: ``CentralError`` `not_permitted` when the characteristic UUIDs are not distinct
  ///   from each other and from the service's, or the local name contains NUL;
  ///   `unknown_adapter` for an adapter name that is not a D-Bus path segment.
  public func startPeripheral(_ service: PeripheralService) async throws(CentralError) {
    try Self.validate(service)
    if definition.map(RegistrationKey.init) != RegistrationKey(service) {
      failures = 0
      retryAt = nil
    }
    definition = service
    logger.info(
      "peripheral role started",
      metadata: [
        "ble.service": "\(service.service.longForm)",
        "ble.adapter": "\(service.adapter ?? "any")",
      ])
    kick()
  }

  /// Withdraws the advertisement and the application (`UnregisterAdvertisement`,
  /// `UnregisterApplication`), unexports our objects and reports
  /// ``PeripheralState/stopped``. Waits for a registration step under way to finish first.
  public func stopPeripheral() async {
    definition = nil
    await lock()
    if let registration {
      await teardown(registration)
      self.registration = nil
    }
    failures = 0
    retryAt = nil
    setState(.stopped)
    unlock()
    kick()
  }

  /// The value `ReadValue` serves from now on (with offsets, for long reads).
  ///
  /// - Parameter value: The current text's bytes.
  public func setReadValue(_ value: [UInt8]) async {
    readValue = value
  }

  /// Sends one notification to every subscribed central: through the socket bluetoothd
  /// acquired (`AcquireNotify`) when it holds one, waiting while the socket is full; otherwise
  /// as `PropertiesChanged(org.bluez.GattCharacteristic1, {Value: value})` on the transfer
  /// characteristic, without back-pressure (the caller paces). bluetoothd cuts each value at
  /// the central's MTU − 3 bytes.
  ///
  /// - Parameter value: The notification's bytes.
  /// - Returns: ``NotificationPath/flowControlled`` through the socket,
  ///   ``NotificationPath/unpaced`` as a signal.
  /// - Throws: ``CentralError`` `unavailable` when the application is not registered,
  ///   `not_connected` when no central is subscribed (no `StartNotify` since the last
  ///   `StopNotify`, or bluetoothd hung the socket up), `timeout` when the socket stayed full
  ///   for ``BlueZPeripheralConfiguration/callTimeout``, or the bus's error.
  @discardableResult
  public func notify(_ value: [UInt8]) async throws(CentralError) -> NotificationPath {
    _ = try notifiableConnection()
    if acquired != nil {
      // Values queued in the socket must reach bluetoothd before any value goes as a signal.
      await retireSocketIfShared()
      while retiring { try? await Task.sleep(for: .milliseconds(2)) }
    }
    // (an empty value would read as the end of the socket to bluetoothd: it goes as a signal)
    if let acquired, !value.isEmpty {
      if let path = try await send(value, through: acquired) { return path }
    }
    // Checked again: the socket's end or the stack's may have come while this call waited.
    let connection = try notifiableConnection()
    do {
      try await connection.emitPropertiesChanged(
        path: paths.characteristic, interface: BlueZNames.gattCharacteristic,
        changed: ["Value": .bytes(value)])
    } catch {
      throw CentralError.bluez(error, operation: "notify")
    }
    counters.notifications += 1
    return .unpaced
  }

  /// The connection to notify on, when the application is registered on it and a central is
  /// subscribed.
  private func notifiableConnection() throws(CentralError) -> DBusConnection {
    guard let registration, registration.applicationRegistered, registration.epoch == epoch,
      let connection, connection === registration.connection
    else {
      throw CentralError(.unavailable, message: "the peripheral service is not registered")
    }
    guard notifying else {
      throw CentralError(.notConnected, message: "no central is subscribed")
    }
    return connection
  }

  /// The counters now.
  public var statistics: Statistics {
    var result = counters
    result.droppedEvents = hub.dropped
    result.registered = registration?.complete == true && registration?.epoch == epoch
    return result
  }

  /// The role's state now (the last ``PeripheralEvent/stateChanged(_:)`` reported).
  public var currentState: PeripheralState { state }

  // MARK: helpers

  /// Checks a definition for what BlueZ would refuse for good.
  static func validate(_ service: PeripheralService) throws(CentralError) {
    var uuids: Set<BluetoothUUID> = [service.service, service.characteristic]
    guard uuids.count == 2 else {
      throw CentralError(
        .notPermitted, message: "the service and the characteristic need different UUIDs")
    }
    if let write = service.writeCharacteristic {
      uuids.insert(write)
      guard uuids.count == 3 else {
        throw CentralError(
          .notPermitted, message: "the writable characteristic needs a UUID of its own")
      }
    }
    if let name = service.localName, name.utf8.contains(0) {
      throw CentralError(.notPermitted, message: "the local name contains NUL")
    }
    if let adapter = service.adapter {
      guard !adapter.isEmpty,
        adapter.utf8.allSatisfy({
          ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A)
            || $0 == 0x5F
        })
      else {
        throw CentralError(.unknownAdapter, message: "'\(adapter)' is not an adapter name")
      }
    }
  }

  /// Reports a new state once.
  func setState(_ newState: PeripheralState) {
    guard newState != state else { return }
    state = newState
    switch newState {
    case .advertising: logger.info("peripheral role advertising")
    case .stopped: logger.info("peripheral role stopped")
    case .unavailable(let reason):
      logger.notice("peripheral role unavailable", metadata: ["reason": "\(reason)"])
    }
    hub.yield(.stateChanged(newState))
  }

  /// Wakes the registration loop.
  func kick() {
    kicker.yield()
  }

  /// Waits until no registration step runs, then holds the steps (not cancellable:
  /// ``stopPeripheral()`` must tear down even when its task is cancelled).
  func lock() async {
    guard let ticket = registrationTurn.take() else { return }
    _ = await withCheckedContinuation { registrationTurn.wait(ticket, $0) }
  }

  /// Hands the steps to the next waiter, or frees them.
  func unlock() {
    registrationTurn.release()
  }
}
