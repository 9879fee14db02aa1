import BridgeCore
import DBus
import Glibc
import Logging

extension BlueZCentral: BlueZSessionClient {
  /// Runs the central until the task is cancelled: the scanner watchdog, and the session when
  /// the central made its own (``init(configuration:logger:)``). Finishes every event stream
  /// when it returns.
  public func run() async {
    await withTaskGroup(of: Void.self) { group in
      if let ownSession { group.addTask { await ownSession.run() } }
      let interval = configuration.watchdog.checkInterval
      let watching = configuration.watchdog.enabled
      group.addTask {
        // Also keeps the group alive until cancellation when the watchdog is off.
        while !Task.isCancelled {
          try? await Task.sleep(for: watching ? interval : .seconds(3600))
          if watching { await self.watchdogTick() }
        }
      }
      await group.waitForAll()
    }
    closeScanner()
    startupSettled = true
    dropStack()
    hub.finish()
  }

  /// Follows the shared ``BlueZSession``: mirrors the current bluetoothd in the object model.
  func session(_ event: BlueZSessionEvent) async throws {
    switch event {
    case .opened(let connection):
      self.connection = connection
      counters.connections += 1
    case .ownerChanged(let newOwner):
      if owner != nil { dropStack() }
      owner = newOwner
      if newOwner == nil { startupSettled = true }
    case .snapshot(let reply, let target):
      guard target == owner else { return }
      // Taken again of the same stack (the session lost signals): what those said is told.
      let before = synced ? MirrorSummary(model) : nil
      var events = try model.load(reply, now: clock.now)
      if let before {
        events = before.changes(to: MirrorSummary(model, present: reply), then: events)
      }
      counters.snapshots += 1
      if refusalReported {
        refusal = nil
        logger.notice("bluetoothd serves this user now")
        deliver([.stackRefused(nil)])
      }
      synced = true
      announced = true
      startupSettled = true
      logger.info(
        "mirroring BlueZ",
        metadata: [
          "ble.adapters": "\(model.adapters.count)", "ble.devices": "\(model.devices.count)",
        ])
      deliver(events)
    case .snapshotFailed(let attempt, let error):
      if attempt >= 3 { startupSettled = true }
      if let error, error.code == .accessDenied, !refusalReported {
        let refusal = Self.accessDenied(error)
        self.refusal = refusal
        logger.error("\(refusal.message)", metadata: ["dbus.error": "\(error.name)"])
        deliver([.stackRefused(refusal)])
      }
    case .signals(let signals):
      guard synced else { return }
      // What a batch means goes on at once: one bridge step for the turn's signals. A signal
      // of a device the mirror evicted first hands on what came before it, then learns the
      // device again, and the signals after it apply to the device learnt (in order, as one
      // by one).
      let epoch = self.epoch
      var now = clock.now
      var events: [CentralEvent] = []
      for signal in signals {
        let update = model.apply(signal, now: now)
        events += update.events
        guard let path = update.unknownDevice else { continue }
        deliver(events)
        events = []
        await relearn(path)
        guard epoch == self.epoch, synced else { return }
        now = clock.now
      }
      deliver(events)
    case .closed:
      connection = nil
      startupSettled = true
      dropStack()
    }
  }

  /// Forgets the stack's model, sessions and watchdogs; reports `stackLost` once.
  func dropStack() {
    epoch += 1
    owner = nil
    synced = false
    let resetting = model.resetting
    model = BlueZObjectModel(maxDevices: configuration.maxDevices, adapter: configuration.adapter)
    model.resetting = resetting
    sessions = [:]
    watchdogs = [:]
    relearning = []
    // The kernel's discovery belongs to the stack's sessions: stopped with them (the central
    // starts it again when asked, as bluetoothd's).
    scanner?.stopAll()
    scanner?.forgetDevices()
    releaseAcquired(address: nil)
    // bluetoothd's notify sessions end with it (or with our connection to the bus).
    startedNotify = []
    stopAfterStart = []
    if announced {
      announced = false
      hub.yield(.stackLost)
    }
  }

  /// Fetches an evicted device's properties again (`Properties.GetAll`, not `GetManagedObjects`)
  /// when it reports a change.
  private func relearn(_ path: DBusObjectPath) async {
    guard let owner, let connection, !relearning.contains(path) else { return }
    relearning.insert(path)
    defer { relearning.remove(path) }
    let epoch = self.epoch
    do {
      let reply = try await connection.call(
        destination: owner, path: path, interface: BlueZNames.properties, member: "GetAll",
        arguments: [.string(BlueZNames.device)], timeout: configuration.bus.callTimeout)
      guard epoch == self.epoch, synced, model.devices[path] == nil,
        let properties = reply.first?.propertyMap
      else { return }
      deliver(model.addDevice(path: path, properties: properties, now: clock.now).events)
    } catch {
      logger.debug("cannot re-learn a device", metadata: ["dbus.error": "\(error)"])
    }
  }

  /// The port's error for a bus that will not let this user reach bluetoothd, saying what to do.
  static func accessDenied(_ error: DBusError) -> CentralError {
    let uid = geteuid()
    let user =
      getpwuid(uid).flatMap { $0.pointee.pw_name.map { String(cString: $0) } } ?? "uid \(uid)"
    return CentralError(
      .accessDenied,
      message:
        "the system bus denies user \(user) access to bluetoothd (org.bluez): install gatt2mqtt's D-Bus policy (deploy/dbus/gatt2mqtt.conf, installed by the package as /usr/share/dbus-1/system.d/gatt2mqtt.conf for user gatt2mqtt) or run as a user the bus allows; retrying (\(error.message))",
      detail: error.name)
  }
}

/// What a snapshot of the same stack taken again must tell beside its own events: adapters and
/// devices that went, and links that came or went, while the signals saying so were lost.
struct MirrorSummary: Equatable {
  var adapters: Set<String>
  /// Every device, and whether it is connected.
  var connected: [BluetoothAddress: Bool]
  /// The devices bluetoothd has (`nil`: those of `connected`); the mirror may have evicted some.
  var present: Set<BluetoothAddress>?

  init(adapters: Set<String>, connected: [BluetoothAddress: Bool], present: Set<BluetoothAddress>?)
  {
    self.adapters = adapters
    self.connected = connected
    self.present = present
  }

  /// The mirror's summary; `reply`, when given, is the snapshot it was loaded from (the devices
  /// in it are present even when the mirror evicted them).
  init(_ model: BlueZObjectModel, present reply: [DBusValue]? = nil) {
    adapters = Set(model.adapterInfos.map(\.id))
    connected = Dictionary(
      model.devices.values.map { ($0.address, $0.connected) }, uniquingKeysWith: { $0 || $1 })
    present = reply.map(Self.devices(in:))
  }

  /// The addresses of the device objects of a `GetManagedObjects` reply.
  static func devices(in reply: [DBusValue]) -> Set<BluetoothAddress> {
    guard reply.count == 1, case .dictionary(_, _, let entries) = reply[0] else { return [] }
    var addresses: Set<BluetoothAddress> = []
    for (key, value) in entries {
      guard case .objectPath(let path) = key,
        BlueZObjectModel.interfaces(value)?[BlueZNames.device] != nil,
        let address = BlueZDevice.address(fromPath: path)
      else { continue }
      addresses.insert(address)
    }
    return addresses
  }

  /// In the order the signals would have told it: links that went down and devices that went
  /// (a connected one loses its link first), adapters that went, links that came up, then
  /// `loaded` (the snapshot's own events: a resolved tree after its link came up).
  func changes(to now: MirrorSummary, then loaded: [CentralEvent]) -> [CentralEvent] {
    let present = now.present ?? Set(now.connected.keys)
    var events: [CentralEvent] = []
    for (address, link) in connected.sorted(by: { $0.key < $1.key }) {
      if !present.contains(address) {
        if link { events.append(.connectionChanged(address, connected: false)) }
        events.append(.deviceRemoved(address))
      } else if link, now.connected[address] == false {
        events.append(.connectionChanged(address, connected: false))
      }
    }
    events += adapters.subtracting(now.adapters).sorted().map { .adapterRemoved(id: $0) }
    for (address, link) in now.connected.sorted(by: { $0.key < $1.key })
    where link && connected[address] == false {
      events.append(.connectionChanged(address, connected: true))
    }
    return events + loaded
  }
}
