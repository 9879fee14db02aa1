import BridgeCore
import DBus
import Logging

extension BlueZPeripheral {
  /// Runs the peripheral role until the task is cancelled: connects to the system bus (again,
  /// with backoff, when it is lost), follows bluetoothd and the adapters, and keeps the
  /// definition registered. Finishes every event stream when it returns.
  public func run() async {
    await withTaskGroup(of: Void.self) { group in
      group.addTask { await self.registrationLoop() }
      await self.followBus()
      group.cancelAll()
    }
    hub.finish()
  }

  /// Connects, runs a session, and reconnects with backoff until cancelled.
  private func followBus() async {
    var delay = configuration.reconnectDelay
    while !Task.isCancelled {
      do {
        let connection = try await connect(configuration.busAddress)
        counters.connections += 1
        delay = configuration.reconnectDelay
        await runSession(connection)
      } catch {
        logger.warning(
          "cannot connect to the system bus", metadata: ["dbus.error": "\(error)"])
      }
      connection = nil
      dropStack()
      guard !Task.isCancelled else { break }
      try? await Task.sleep(for: delay)
      delay = min(delay * 2, configuration.maxReconnectDelay)
    }
  }

  /// One bus connection: serve the application root, subscribe to owner and adapter changes,
  /// then snapshot the adapters and follow the signals until the connection closes.
  private func runSession(_ connection: DBusConnection) async {
    self.connection = connection
    do {
      try await connection.addObjectManager(at: paths.application)
      let objects = try await connection.signals(
        matching: DBusMatchRule(sender: BlueZNames.service, interface: BlueZNames.objectManager),
        bufferSize: configuration.signalBufferSize)
      let adapterChanges = try await connection.signals(
        matching: DBusMatchRule(
          sender: BlueZNames.service, interface: BlueZNames.properties,
          member: "PropertiesChanged", arguments: [0: BlueZNames.adapter]),
        bufferSize: configuration.signalBufferSize)
      let owners = try await connection.nameOwnerChanges(of: BlueZNames.service)
      let initial = try await connection.nameOwner(of: BlueZNames.service)
      setOwner(initial)
      if initial == nil {
        logger.info("bluetoothd (org.bluez) is not running; waiting for it")
      }
      kick()
      await withTaskGroup(of: Void.self) { group in
        group.addTask { await self.resync() }
        group.addTask {
          for await change in owners { await self.ownerChanged(change.newOwner) }
        }
        group.addTask {
          for await signal in adapterChanges { await self.handle(signal) }
        }
        for await signal in objects { handle(signal) }
        group.cancelAll()
      }
    } catch {
      logger.warning("cannot subscribe to BlueZ signals", metadata: ["dbus.error": "\(error)"])
    }
    self.connection = nil
    if connection.isConnected {
      await connection.close()
    } else {
      logger.warning("lost the system bus connection; reconnecting")
    }
  }

  /// The owner of `org.bluez` changed: the old stack and its registrations are gone.
  private func ownerChanged(_ newOwner: String?) async {
    guard setOwner(newOwner) else { return }
    await resync()
  }

  /// Records a new owner, dropping the old stack; whether a snapshot is needed.
  @discardableResult
  private func setOwner(_ newOwner: String?) -> Bool {
    guard newOwner != owner else { return false }
    if owner != nil {
      logger.warning("bluetoothd (org.bluez) went away")
      dropStack()
    }
    owner = newOwner
    kick()
    return newOwner != nil
  }

  /// Forgets the stack: its adapters, and (through the new epoch) what was registered with it.
  func dropStack() {
    epoch += 1
    owner = nil
    synced = false
    pending = nil
    adapters.removeAll()
    kick()
  }

  /// Takes a snapshot of the current owner's adapters (`GetManagedObjects`, addressed to the
  /// owner's unique name), then replays the signals held back meanwhile. Repeats while the
  /// stack changes under it; retries with backoff while the owner does not answer.
  private func resync() async {
    guard !snapshotting else { return }
    snapshotting = true
    defer { snapshotting = false }
    var attempts = 0
    while let target = owner, !synced, let connection, !Task.isCancelled {
      let startEpoch = epoch
      pending = []
      pendingOverflow = false
      do {
        let reply = try await connection.call(
          destination: target, path: .root, interface: BlueZNames.objectManager,
          member: "GetManagedObjects", timeout: configuration.callTimeout)
        guard epoch == startEpoch, owner == target else { continue }
        try adapters.load(reply)
        let held = pending ?? []
        pending = nil
        for signal in held where signal.sender == target { _ = adapters.apply(signal) }
        if pendingOverflow {
          logger.warning("too many BlueZ signals during the snapshot; taking another")
          continue
        }
        synced = true
        logger.info(
          "following BlueZ adapters", metadata: ["ble.adapters": "\(adapters.entries.count)"])
        kick()
      } catch {
        pending = nil
        attempts += 1
        logger.warning(
          "BlueZ snapshot failed", metadata: ["dbus.error": "\(error)", "attempt": "\(attempts)"])
        guard epoch == startEpoch, owner == target else { continue }
        try? await Task.sleep(for: .milliseconds(min(10_000, 100 << min(attempts, 7))))
      }
    }
  }

  /// One signal from `org.bluez`: held back during a snapshot, ignored from an old owner or
  /// before the first snapshot, applied otherwise.
  private func handle(_ signal: DBusSignal) {
    guard let owner, signal.sender == owner else { return }
    if pending != nil {
      if pending!.count < configuration.signalBufferSize {
        pending!.append(signal)
      } else {
        pendingOverflow = true
      }
      return
    }
    guard synced else { return }
    if adapters.apply(signal) { kick() }
  }
}
