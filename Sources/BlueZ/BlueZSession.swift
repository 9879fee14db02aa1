import Backoff
import DBus
public import Logging
import Synchronization

/// What a ``BlueZSession`` tells the parts that share it, in order.
enum BlueZSessionEvent: Sendable {
  /// A new bus connection, before any signal: serve objects on it, make calls through it.
  case opened(DBusConnection)
  /// The owner of `org.bluez` changed (`nil`: bluetoothd is not running): what belonged to the
  /// old stack is gone. Always sent once after ``opened(_:)``.
  case ownerChanged(String?)
  /// The owner's objects (`GetManagedObjects`); the signals held back while it was taken follow
  /// as ``signals(_:)``. Sent again after an owner change, a reconnection, when too many
  /// signals arrived during the snapshot, or when the connection dropped signals (the same
  /// owner then: a client tells what changed since its mirror).
  case snapshot([DBusValue], owner: String)
  /// Taking the snapshot failed (`attempt` times in a row, the last time with `error`); it is
  /// retried with backoff.
  case snapshotFailed(attempt: Int, error: DBusError?)
  /// Signals from the current owner, after its snapshot, in order: what the bus thread read
  /// since the session last took some (about a turn's: with
  /// ``BlueZSessionConfiguration/signalGathering``, an interval's; after a snapshot, the
  /// signals held back meanwhile), so that a client takes them in one hop and hands on what
  /// they mean at once. Never empty.
  case signals([DBusSignal])
  /// The connection is gone (closed or lost); a new one is being opened.
  case closed
}

/// A part of the gateway that runs on a ``BlueZSession`` (the central, the peripheral).
protocol BlueZSessionClient: Actor {
  /// Takes one session event. Throwing on ``BlueZSessionEvent/opened(_:)`` closes the
  /// connection (retried with backoff); on ``BlueZSessionEvent/snapshot(_:owner:)`` retries
  /// the snapshot; elsewhere it is logged.
  func session(_ event: BlueZSessionEvent) async throws

  /// Whether the client acts on `signal` at all; a signal it does not want is not handed to it
  /// (no hop onto its actor for each advertisement of every device). Answered on the session's
  /// executor, from the signal alone.
  nonisolated func wants(_ signal: DBusSignal) -> Bool
}

extension BlueZSessionClient {
  /// Every signal.
  nonisolated func wants(_ signal: DBusSignal) -> Bool { true }
}

/// One connection to bluetoothd, shared by the central and the peripheral roles.
///
/// It connects to the system bus, subscribes to every signal of `org.bluez` and to its
/// `NameOwnerChanged` **before** taking a `GetManagedObjects` snapshot of the owner's objects
/// (so nothing falls between the two), holds back the signals that arrive during the snapshot
/// (at most ``BlueZSessionConfiguration/signalBufferSize``, else it takes another), then hands
/// every later signal of the current owner to its clients in order. A new owner (bluetoothd
/// restarted), or signals the connection dropped while the session fell behind, mean a new
/// snapshot; a lost connection means a new connection with one
/// ``Backoff`` policy. Signals of an old owner are dropped here, so no client needs to check.
///
/// - Important: Make it, make its clients (``BlueZCentral/init(session:configuration:logger:)``,
///   ``BlueZPeripheral/init(session:configuration:logger:)``), then ``run()`` it as long as
///   either client runs.
public actor BlueZSession {
  /// Counters for health reports and tests.
  public struct Statistics: Sendable, Hashable {
    /// Bus connections opened.
    public var connections = 0
    /// `GetManagedObjects` snapshots taken.
    public var snapshots = 0
    /// Whether the session mirrors a running bluetoothd now.
    public var synced = false
    /// Snapshots taken again because the connection dropped signals (its buffer was full):
    /// the clients' mirror would have missed what they said.
    public var snapshotsAfterLoss = 0
  }

  /// The settings.
  public nonisolated let configuration: BlueZSessionConfiguration
  private let logger: Logger
  private let clients = Mutex<[any BlueZSessionClient]>([])
  private let connect: @Sendable (String?) async throws(DBusError) -> DBusConnection

  private var connection: DBusConnection?
  private var owner: String?
  private var synced = false {
    didSet { counters.withLock { $0.synced = synced } }
  }
  private var snapshotting = false
  /// Signals held back while a snapshot is being taken.
  private var pending: [DBusSignal]?
  private var pendingOverflow = false
  /// The serial bluetoothd gave the last snapshot's reply: its signals numbered lower were
  /// sent before it, and what they said is in the snapshot (a signal the session handles late,
  /// from a backlog, must not undo it).
  private var snapshotSerial: UInt32?
  /// The connection's count of dropped signals when last looked at.
  private var droppedSeen = 0
  /// Asks the running session for a new snapshot (see ``handle(_:)``).
  private var resyncRequest: AsyncStream<Void>.Continuation?
  /// Kept apart from the actor's state so that health reports read them without a hop.
  private let counters = Mutex(Statistics())

  /// Makes a session; nothing happens until ``run()``.
  ///
  /// - Parameters:
  ///   - configuration: The settings.
  ///   - logger: Where to log (metadata key `dbus.error`).
  ///   - callObserver: Told of every D-Bus method call the session's connections make (the
  ///     method's name, its seconds, whether it succeeded; the gateway's `/metrics`), if
  ///     anything.
  public init(
    configuration: BlueZSessionConfiguration = BlueZSessionConfiguration(), logger: Logger,
    callObserver: (@Sendable (_ method: String, _ seconds: Double, _ succeeded: Bool) -> Void)? =
      nil
  ) {
    self.configuration = configuration
    self.logger = logger
    let gathering = configuration.signalGathering
    connect = { address throws(DBusError) in
      let connection =
        if let address {
          try await DBusConnection(address: address, gathering: gathering)
        } else {
          try await DBusConnection.system(gathering: gathering)
        }
      if let callObserver {
        connection.observeCalls { callObserver($0.member, $0.seconds, $0.succeeded) }
      }
      return connection
    }
  }

  /// The counters now (read from any thread).
  public nonisolated var statistics: Statistics { counters.withLock { $0 } }

  /// Adds a client; call it before ``run()`` (clients do it in their initialiser).
  nonisolated func register(_ client: any BlueZSessionClient) {
    clients.withLock { $0.append(client) }
  }

  /// Whether the bus thread and the bus answer: `org.freedesktop.DBus.GetId` of the bus daemon
  /// within `timeout` (a service manager's watchdog; the system bus refuses `Peer.Ping` to
  /// every user but root). Without a connection (the bus is
  /// being reconnected with backoff) that is no hang: `true`.
  ///
  /// - Parameter timeout: The longest wait.
  /// - Returns: `false` when a connection exists and the ping failed or did not come back.
  public func ping(timeout: Duration) async -> Bool {
    guard let connection else { return true }
    do {
      // `GetId` of the bus itself: the system bus's policy lets every user call the
      // org.freedesktop.DBus interface, not `Peer.Ping` (refused to anyone but root).
      _ = try await connection.call(
        destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
        interface: "org.freedesktop.DBus", member: "GetId", timeout: timeout)
      return true
    } catch {
      return self.connection !== connection  // the connection closed meanwhile: not a hang
    }
  }

  /// Runs until the task is cancelled: connects, follows bluetoothd, reconnects with backoff.
  /// Tells the clients ``BlueZSessionEvent/closed`` when a connection ends.
  public func run() async {
    var backoff = Backoff(
      minimum: configuration.reconnectDelay.seconds,
      maximum: configuration.maxReconnectDelay.seconds)
    while !Task.isCancelled {
      do {
        let connection = try await connect(configuration.busAddress)
        counters.withLock { $0.connections += 1 }
        backoff.reset()
        await runSession(connection)
      } catch {
        logger.warning("cannot connect to the system bus", metadata: ["dbus.error": "\(error)"])
      }
      connection = nil
      owner = nil
      synced = false
      pending = nil
      await broadcast(.closed)
      guard !Task.isCancelled else { break }
      try? await Task.sleep(for: backoff.nextDuration())
    }
  }

  /// One bus connection: subscribe first, then snapshot, then follow signals until it closes.
  private func runSession(_ connection: DBusConnection) async {
    self.connection = connection
    droppedSeen = 0
    snapshotSerial = nil
    let (requests, request) = AsyncStream.makeStream(
      of: Void.self, bufferingPolicy: .bufferingNewest(1))
    resyncRequest = request
    defer {
      request.finish()
      resyncRequest = nil
    }
    do {
      let batches = try await connection.signalBatches(
        matching: DBusMatchRule(sender: BlueZNames.service),
        bufferSize: configuration.signalBufferSize)
      let owners = try await connection.nameOwnerChanges(of: BlueZNames.service)
      for client in clients.withLock({ $0 }) {
        try await client.session(.opened(connection))
      }
      let initial = try await connection.nameOwner(of: BlueZNames.service)
      owner = initial
      if initial == nil { logger.info("bluetoothd (org.bluez) is not running; waiting for it") }
      await broadcast(.ownerChanged(initial))
      await withTaskGroup(of: Void.self) { group in
        group.addTask { await self.resync() }
        group.addTask {
          for await change in owners { await self.ownerChanged(change.newOwner) }
        }
        group.addTask {
          // At most one snapshot a second for lost signals: under a flood that outlasts it,
          // the mirror is mended once a second instead of taking snapshots back to back.
          for await _ in requests {
            await self.resync()
            try? await Task.sleep(for: .seconds(1))
          }
        }
        for await batch in batches { await handle(batch) }
        group.cancelAll()
      }
    } catch {
      logger.warning("cannot follow BlueZ on this connection", metadata: ["dbus.error": "\(error)"])
    }
    self.connection = nil
    if connection.isConnected {
      await connection.close()
    } else {
      logger.warning("lost the system bus connection; reconnecting")
    }
  }

  /// The owner of `org.bluez` changed: the clients drop the old stack, a new one is mirrored
  /// afresh.
  private func ownerChanged(_ newOwner: String?) async {
    guard newOwner != owner else { return }
    if owner != nil { logger.warning("bluetoothd (org.bluez) went away") }
    owner = newOwner
    synced = false
    pending = nil
    snapshotSerial = nil  // another process numbers its messages afresh
    await broadcast(.ownerChanged(newOwner))
    await resync()
  }

  /// Takes a snapshot of the current owner's objects (`GetManagedObjects`, addressed to the
  /// owner's unique name), delivers it, then replays the signals held back meanwhile. Repeats
  /// while the owner changes under it; retries with backoff while the owner does not answer or
  /// a client cannot read the answer.
  private func resync() async {
    guard !snapshotting else { return }
    snapshotting = true
    defer { snapshotting = false }
    var failures = 0
    var backoff = Backoff(minimum: 0.1, maximum: 10)
    while let target = owner, !synced, let connection, !Task.isCancelled {
      pending = []
      pendingOverflow = false
      // Signals dropped before now are covered by this snapshot.
      droppedSeen = connection.statistics.signalsDropped
      do {
        let (reply, serial) = try await connection.orderedCall(
          destination: target, path: .root, interface: BlueZNames.objectManager,
          member: "GetManagedObjects", timeout: configuration.callTimeout)
        counters.withLock { $0.snapshots += 1 }
        guard owner == target else { continue }
        for client in clients.withLock({ $0 }) {
          try await client.session(.snapshot(reply, owner: target))
        }
        guard owner == target else { continue }
        synced = true
        snapshotSerial = serial
        let held = pending ?? []
        pending = nil
        let replayed = held.filter { $0.sender == target && isNewerThanSnapshot($0) }
        if !replayed.isEmpty { await broadcast(.signals(replayed)) }
        if pendingOverflow {
          logger.warning("too many BlueZ signals during the snapshot; taking another")
          synced = false
          try? await Task.sleep(for: backoff.nextDuration())
        }
      } catch {
        pending = nil
        failures += 1
        logger.warning(
          "BlueZ snapshot failed", metadata: ["dbus.error": "\(error)", "attempt": "\(failures)"])
        await broadcast(.snapshotFailed(attempt: failures, error: error as? DBusError))
        guard owner == target else { continue }
        try? await Task.sleep(for: backoff.nextDuration())
      }
    }
  }

  /// Signals from `org.bluez`, one turn of the bus thread's: held back during a snapshot,
  /// ignored from an old owner or before the first snapshot, handed to the clients otherwise
  /// (all of a batch at once).
  ///
  /// When the connection dropped signals (its buffer of
  /// ``BlueZSessionConfiguration/signalBufferSize`` was full: the session fell behind a burst),
  /// what they said is lost, so a new snapshot is taken (the one under way is taken again).
  private func handle(_ batch: [DBusSignal]) async {
    if let dropped = connection?.statistics.signalsDropped, dropped != droppedSeen {
      droppedSeen = dropped
      if pending != nil {
        pendingOverflow = true
      } else if synced {
        logger.warning(
          "BlueZ signals were dropped (the gateway fell behind); taking a new snapshot")
        counters.withLock { $0.snapshotsAfterLoss += 1 }
        synced = false
        resyncRequest?.yield()
      }
    }
    guard let owner else { return }
    let current =
      batch.allSatisfy { $0.sender == owner && isNewerThanSnapshot($0) }
      ? batch : batch.filter { $0.sender == owner && isNewerThanSnapshot($0) }
    guard !current.isEmpty else { return }
    if pending != nil {
      let room = configuration.signalBufferSize - pending!.count
      pending!.append(contentsOf: current.prefix(max(0, room)))
      if current.count > room { pendingOverflow = true }
      return
    }
    guard synced else { return }
    // One sender's signals arrive in order: after one newer than the snapshot, no older one
    // can come, and the serial, kept, would turn "older" again after 2³¹ more messages.
    if let serial = snapshotSerial,
      current.contains(where: { $0.serial != 0 && DBusSerial.isAfter($0.serial, serial) })
    {
      snapshotSerial = nil
    }
    await broadcast(.signals(current))
  }

  /// Whether a signal of the current owner is handed on: one sent after the last snapshot's
  /// reply (a signal without a serial, made here, counts as newer), or a characteristic's
  /// `Value` however old (a notification is an event, which the snapshot does not hold).
  private func isNewerThanSnapshot(_ signal: DBusSignal) -> Bool {
    Self.isHandedOn(signal, snapshotSerial: snapshotSerial)
  }

  /// The rule of ``isNewerThanSnapshot(_:)`` for a snapshot whose reply had serial
  /// `snapshotSerial` (nil: no snapshot to compare with, every signal is handed on).
  static func isHandedOn(_ signal: DBusSignal, snapshotSerial: UInt32?) -> Bool {
    guard let snapshotSerial, signal.serial != 0 else { return true }
    return DBusSerial.isAfter(signal.serial, snapshotSerial) || carriesValue(signal)
  }

  /// A `PropertiesChanged` of a GATT characteristic that carries its `Value` (a notification
  /// through `StartNotify`).
  private static func carriesValue(_ signal: DBusSignal) -> Bool {
    guard signal.member == "PropertiesChanged", signal.interface == BlueZNames.properties,
      signal.arguments.count >= 2, signal.arguments[0] == .string(BlueZNames.gattCharacteristic)
    else { return false }
    return signal.arguments[1].propertyMap?["Value"] != nil
  }

  /// Hands an event to every client in registration order (signals only to those that want
  /// them); errors are logged.
  private func broadcast(_ event: BlueZSessionEvent) async {
    for client in clients.withLock({ $0 }) {
      var event = event
      if case .signals(let signals) = event {
        let wanted = signals.filter { client.wants($0) }
        guard !wanted.isEmpty else { continue }
        event = .signals(wanted)
      }
      do {
        try await client.session(event)
      } catch {
        logger.warning("a BlueZ client failed an event", metadata: ["dbus.error": "\(error)"])
      }
    }
  }
}

/// The settings of a ``BlueZSession``; every default is what the gateway uses.
public struct BlueZSessionConfiguration: Sendable, Hashable {
  /// The system bus address; `nil` for the default (`DBUS_SYSTEM_BUS_ADDRESS` or the standard
  /// socket).
  public var busAddress: String?
  /// BlueZ signals buffered by the connection and held back during a snapshot.
  public var signalBufferSize: Int
  /// How long a BlueZ method call may take: the snapshot's `GetManagedObjects`, and each call
  /// of the roles made with these settings (default 10 s).
  public var callTimeout: Duration
  /// The first reconnection delay.
  public var reconnectDelay: Duration
  /// The longest reconnection delay.
  public var maxReconnectDelay: Duration
  /// While bluetoothd's signals come more than once per this interval (advertisements of
  /// `StartDiscovery`, values of `StartNotify`), the connection reads them once per interval
  /// (``DBus/DBusConnection/init(address:gathering:)``); `.zero` (the default) reads each at
  /// once. The gateway passes `bluetooth.batch_window`.
  public var signalGathering: Duration

  /// Makes the settings.
  ///
  /// - Parameters:
  ///   - busAddress: The system bus address; `nil` for the default.
  ///   - signalBufferSize: BlueZ signals buffered by the connection.
  ///   - callTimeout: How long a BlueZ method call may take.
  ///   - reconnectDelay: The first reconnection delay.
  ///   - maxReconnectDelay: The longest reconnection delay.
  ///   - signalGathering: The interval over which fast signals gather.
  public init(
    busAddress: String? = nil, signalBufferSize: Int = 8192, callTimeout: Duration = .seconds(10),
    reconnectDelay: Duration = .milliseconds(500), maxReconnectDelay: Duration = .seconds(30),
    signalGathering: Duration = .zero
  ) {
    self.busAddress = busAddress
    self.signalBufferSize = max(1, signalBufferSize)
    self.callTimeout = callTimeout
    self.reconnectDelay = reconnectDelay
    self.maxReconnectDelay = maxReconnectDelay
    self.signalGathering = max(.zero, signalGathering)
  }
}
