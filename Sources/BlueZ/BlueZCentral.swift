public import BridgeCore
import DBus
public import Logging
import LoopSupport

/// The ``BLECentral`` and ``GATTCentral`` ports over BlueZ's D-Bus API: an incremental mirror of
/// BlueZ's objects (remote GATT objects included), LE discovery, connections and GATT operations,
/// recovery after bluetoothd restarts and lost bus connections, and a scanner watchdog.
///
/// It runs on a ``BlueZSession`` (shared with the peripheral role, or its own): the session
/// subscribes to BlueZ's signals and `NameOwnerChanged` of `org.bluez`, then takes **one**
/// `GetManagedObjects` snapshot; after that the model changes only through `InterfacesAdded`,
/// `InterfacesRemoved` and `PropertiesChanged`. A new snapshot is taken only when `org.bluez`
/// gets a new owner (bluetoothd restarted) or the connection was reopened. Run the central as a
/// long-running service (``run()``, e.g. as a swift-service-lifecycle `Service`).
///
/// Events (``attach(_:)``) reach their sinks with no buffer in between, one batch per turn of the
/// bus thread's BlueZ signals on this actor (``BlueZSessionEvent/signals(_:)``), notifications of
/// acquired sockets on the notification reader's thread, and with
/// ``BlueZCentralConfiguration/ScanMethod/management`` advertisements on the management scanner's
/// thread; every adapter and device event carries the full current state.
///
/// - Important: All state lives in this actor; BlueZ calls run concurrently with signal handling
///   (actor reentrancy), and discovery operations on one adapter are serialised.
public actor BlueZCentral: BLECentral {
  /// Counters for health reports and tests.
  public struct Statistics: Sendable, Hashable {
    /// `GetManagedObjects` calls made (one per start, bluetoothd restart or reconnection).
    public var snapshots = 0
    /// Bus connections opened.
    public var connections = 0
    /// Adapters in the model now.
    public var adapters = 0
    /// Devices in the model now.
    public var devices = 0
    /// Devices forgotten to keep the model bounded.
    public var evictedDevices = 0
    /// Remote GATT services, characteristics and descriptors in the model now.
    public var gattObjects = 0
    /// Malformed objects or signals ignored.
    public var malformed = 0
    /// Whether the model mirrors a running bluetoothd now.
    public var synced = false
    /// Notification sockets acquired (`AcquireNotify`).
    public var notifyAcquired = 0
    /// Notification sessions started with `StartNotify`.
    public var notifyStarted = 0
    /// Characteristics whose notifications come through an acquired socket now.
    public var acquiredSockets = 0
    /// Reads of an acquired socket that found a backlog (half of what bluetoothd's end of the
    /// socket holds, 139 short values at Linux's default buffer): the reader fell behind, and
    /// bluetoothd may have dropped values.
    public var notifyBacklogs = 0
  }

  struct DiscoverySession: Sendable {
    var filter: DiscoveryFilter
    var started: Bool
  }

  struct WatchdogState: Sendable {
    enum Stage: Sendable { case watching, restarted, powerCycled }
    var stage: Stage = .watching
    /// When the stage began (or the last advertisement arrived).
    var since: ContinuousClock.Instant
    /// When the last advertisement arrived, or discovery started.
    var silentSince: ContinuousClock.Instant
    var powerCycleAllowed = true
  }

  /// The settings.
  public nonisolated let configuration: BlueZCentralConfiguration
  let logger: Logger
  let hub: EventHub<CentralEvent>
  let clock = ContinuousClock()

  /// The session the central made for itself, which ``run()`` runs; `nil` when it shares one.
  let ownSession: BlueZSession?
  var connection: DBusConnection?
  /// The unique name owning `org.bluez`, `nil` while bluetoothd is not running.
  var owner: String?
  var model: BlueZObjectModel
  var synced = false
  /// Whether events of the current stack were delivered (so its loss must be reported).
  var announced = false
  /// Increases whenever the model is dropped, so late replies of an old stack are ignored.
  var epoch = 0
  var startupSettled = false
  /// Why the stack refuses the gateway, since it was reported (``CentralEvent/stackRefused(_:)``)
  /// and until the stack serves it; ``adapters()`` throws it to a subscriber that came later.
  var refusal: CentralError?
  /// Whether the bus's refusal to let us reach bluetoothd was reported (once until it serves us).
  var refusalReported: Bool { refusal != nil }
  var sessions: [String: DiscoverySession] = [:]
  var watchdogs: [String: WatchdogState] = [:]
  /// Adapters with a discovery operation under way, with the operations waiting for them.
  var adapterLocks: [String: TurnQueue] = [:]
  var relearning: Set<DBusObjectPath> = []
  var counters = Statistics()
  /// Characteristics whose notifications come through an acquired socket.
  var acquiredNotify: [GATTCharacteristicID: AcquiredNotify] = [:]
  /// Characteristics moved to `StartNotify` because their socket ended at once
  /// (``NotifyMethod/auto``).
  var startNotifyOnly: Set<GATTCharacteristicID> = []
  /// Characteristics with a `StartNotify` session of ours (or one that may have started: the
  /// call timed out); only these are stopped with `StopNotify`.
  var startedNotify: Set<GATTCharacteristicID> = []
  /// Characteristics whose `StartNotify` is under way, and those of them to stop once it has
  /// started (``setNotify(_:enabled:method:timeout:)`` off meanwhile).
  var startingNotify: Set<GATTCharacteristicID> = []
  var stopAfterStart: Set<GATTCharacteristicID> = []
  /// Reads the acquired sockets; started with the first.
  var notifyReader: DatagramReader?
  /// Deep backlogs found in acquired sockets, counted on the reader thread.
  let backlogs = AcquiredNotify.Backlogs()
  /// Discovery through the kernel (``BlueZCentralConfiguration/ScanMethod/management``), made
  /// at the first start.
  var scanner: ManagementScanner?
  /// Why scanning through the kernel was refused (then discovery goes through bluetoothd).
  var scannerRefusal: CentralError?

  /// Makes a central with its own ``BlueZSession`` (from the configuration's bus settings),
  /// which ``run()`` runs; nothing happens until then.
  ///
  /// - Parameters:
  ///   - configuration: The settings.
  ///   - logger: Where to log (metadata keys `ble.adapter`, `dbus.error`).
  public init(
    configuration: BlueZCentralConfiguration = BlueZCentralConfiguration(), logger: Logger
  ) {
    let session = BlueZSession(configuration: configuration.bus, logger: logger)
    self.init(session: session, owning: true, configuration: configuration, logger: logger)
  }

  /// Makes a central on a shared session; run the session as long as the central runs.
  ///
  /// - Parameters:
  ///   - session: The session (one bus connection for the central and the peripheral).
  ///   - configuration: The settings (its bus settings are the session's, not these).
  ///   - logger: Where to log (metadata keys `ble.adapter`, `dbus.error`).
  public init(
    session: BlueZSession, configuration: BlueZCentralConfiguration = BlueZCentralConfiguration(),
    logger: Logger
  ) {
    self.init(session: session, owning: false, configuration: configuration, logger: logger)
  }

  private init(
    session: BlueZSession, owning: Bool, configuration: BlueZCentralConfiguration, logger: Logger
  ) {
    self.configuration = configuration
    self.logger = logger
    hub = EventHub(bufferSize: 1)  // sinks only: streams come from `events(bufferSize:)`
    model = BlueZObjectModel(maxDevices: configuration.maxDevices, adapter: configuration.adapter)
    ownSession = owning ? session : nil
    session.register(self)
  }

  deinit {
    notifyReader?.stop()
    scanner?.close()
  }

  // MARK: port

  /// Delivers everything the stack reports from now on to `sink`: on this actor, one batch per
  /// batch of BlueZ signals (``BlueZSessionEvent/signals(_:)``); ``EventSink/finish`` is called
  /// when ``run()`` returns.
  ///
  /// - Parameter sink: The receiver.
  /// - Returns: The attachment.
  public nonisolated func attach(_ sink: EventSink<CentralEvent>) -> EventSubscription {
    hub.attach(sink)
  }

  /// The counters now.
  public var statistics: Statistics {
    var result = counters
    result.adapters = model.adapters.count
    result.devices = model.devices.count
    result.evictedDevices = model.evicted
    result.gattObjects = model.gatt.count
    result.malformed = model.malformed
    result.synced = synced
    result.acquiredSockets = acquiredNotify.count
    result.notifyBacklogs = backlogs.count.load(ordering: .relaxed)
    return result
  }

  /// The adapters BlueZ reports now. Right after ``run()`` starts it waits up to
  /// ``BlueZCentralConfiguration/startupWait`` for the first snapshot.
  ///
  /// - Returns: Every adapter's state, sorted by id.
  /// - Throws: ``CentralError`` `unavailable` while bluetoothd or the bus cannot be reached.
  public func adapters() async throws(CentralError) -> [AdapterInfo] {
    await settleStartup(within: configuration.startupWait)
    guard synced else {
      if let refusal { throw refusal }
      throw CentralError(.unavailable, message: "bluetoothd (org.bluez) is not available")
    }
    return model.adapterInfos.map(withKernelDiscovery)
  }

  /// Right after ``run()`` starts, waits until the first snapshot is taken or bluetoothd is
  /// known to be absent, at most `limit`; at once afterwards. A call made at start (a
  /// connection to a device an earlier run left, ``adapters()``) then meets the stack instead
  /// of failing `unavailable` while the session is still opening.
  func settleStartup(within limit: Duration) async {
    let deadline = clock.now + limit
    while !startupSettled && clock.now < deadline {
      do {
        try await Task.sleep(for: .milliseconds(20))
      } catch {
        return  // cancelled: the caller checks
      }
    }
  }

  // MARK: events

  /// Delivers events and keeps the discovery bookkeeping in step with them.
  func deliver(_ events: [CentralEvent]) {
    for event in events {
      switch event {
      case .adapterChanged(let info) where !info.powered:
        // BlueZ drops every discovery session of an adapter that powers off.
        sessions[info.id]?.started = false
      case .adapterRemoved(let id):
        sessions[id] = nil
        watchdogs[id] = nil
        if let index = ManagementPacket.index(of: id) { scanner?.stopAll(only: index) }
      case .connectionChanged(let address, connected: false):
        // The values the device's sockets still hold go out before the disconnection.
        releaseAcquired(address: address)
      case .deviceRemoved(let address):
        releaseAcquired(address: address)
        // Its objects are gone, and bluetoothd's notify sessions with them.
        startedNotify = startedNotify.filter { $0.address != address }
      default:
        break
      }
    }
    guard scansThroughKernel else {
      hub.yield(contentsOf: events)
      return
    }
    // Advertisements come from the kernel's reports: bluetoothd's view of devices (its cache,
    // the temporary devices it makes while discovering for a connection) is not reported, and
    // an adapter discovers when the kernel's discovery runs there (bluetoothd's `Discovering`
    // says only whether its own clients discover).
    hub.yield(
      contentsOf: events.compactMap { event in
        switch event {
        case .deviceAppeared, .deviceUpdated, .deviceRemoved: nil
        case .adapterChanged(let info): .adapterChanged(withKernelDiscovery(info))
        default: event
        }
      })
  }

  /// An adapter's state with `discovering` as the scan method in use says it.
  func withKernelDiscovery(_ info: AdapterInfo) -> AdapterInfo {
    guard scansThroughKernel, let index = ManagementPacket.index(of: info.id) else { return info }
    var info = info
    info.discovering = info.powered && scanner?.isScanning(index: index) == true
    return info
  }

}
