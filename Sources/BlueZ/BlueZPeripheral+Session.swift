import BridgeCore
import DBus
import Logging

extension BlueZPeripheral: BlueZSessionClient {
  /// Runs the peripheral role until the task is cancelled: keeps the definition registered
  /// with the bluetoothd the session follows, and runs the session when the peripheral made
  /// its own (``init(configuration:logger:)``). Finishes every event stream when it returns.
  public func run() async {
    await withTaskGroup(of: Void.self) { group in
      if let ownSession { group.addTask { await ownSession.run() } }
      group.addTask { await self.registrationLoop() }
      await group.waitForAll()
    }
    releaseSocket()
    hangUpWatcher?.stop()
    hub.finish()
  }

  /// Follows the shared ``BlueZSession``: serves the application root on each connection and
  /// keeps the adapters of the current bluetoothd.
  func session(_ event: BlueZSessionEvent) async throws {
    switch event {
    case .opened(let connection):
      self.connection = connection
      counters.connections += 1
      try await connection.addObjectManager(at: paths.application)
      kick()
    case .ownerChanged(let newOwner):
      if owner != nil { dropStack() }
      owner = newOwner
      kick()
    case .snapshot(let reply, let target):
      guard target == owner else { return }
      let connectedBefore = adapters.connected
      try adapters.load(reply)
      // A snapshot taken again (signals lost): the links that came or went meanwhile.
      for path in adapters.takeDisconnected() { centralDisconnected(path) }
      linksChanged(from: connectedBefore)
      synced = true
      logger.info(
        "following BlueZ adapters", metadata: ["ble.adapters": "\(adapters.entries.count)"])
      kick()
    case .snapshotFailed:
      break
    case .signals(let signals):
      guard synced else { return }
      for signal in signals {
        let connectedBefore = adapters.connected
        if adapters.apply(signal) { kick() }
        for path in adapters.takeDisconnected() { centralDisconnected(path) }
        linksChanged(from: connectedBefore)
      }
    case .closed:
      connection = nil
      dropStack()
    }
  }

  /// The signals ``PeripheralAdapters/apply(_:)`` acts on: objects added and removed, adapters'
  /// properties, and devices' `Connected`; not the stream of devices' RSSI and advertising data.
  nonisolated func wants(_ signal: DBusSignal) -> Bool {
    guard signal.interface == BlueZNames.properties, signal.member == "PropertiesChanged" else {
      return true
    }
    switch signal.arguments.first?.stringValue {
    case BlueZNames.adapter: return true
    case BlueZNames.device:
      return signal.arguments.count >= 2 && signal.arguments[1].propertyMap?["Connected"] != nil
    default: return false
    }
  }

  /// The connected devices changed while a notification socket is held: the shared socket
  /// counts the newcomers, or the socket is retired (see `BlueZPeripheral+NotifySocket.swift`).
  func linksChanged(from connectedBefore: Set<DBusObjectPath>) {
    guard acquired != nil, adapters.connected != connectedBefore else { return }
    if configuration.severalCentrals == .socket {
      presumeSubscribers()
    } else if !retiring {
      // (not awaited here: the retirement may wait for bluetoothd to read what is queued,
      // and the session's other clients wait for this handler)
      Task { await self.retireSocketIfShared() }
    }
  }

  /// Forgets the stack: its adapters, and (through the new epoch) what was registered with it.
  func dropStack() {
    epoch += 1
    owner = nil
    synced = false
    adapters.removeAll()
    kick()
  }
}
