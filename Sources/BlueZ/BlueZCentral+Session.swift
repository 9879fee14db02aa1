import BridgeCore
import DBus
import Logging

extension BlueZCentral {
  /// Runs the central until the task is cancelled: connects, mirrors BlueZ, follows bluetoothd
  /// restarts, and reconnects with backoff when the bus connection is lost. Finishes every
  /// event stream when it returns.
  public func run() async {
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
      startupSettled = true
      dropStack()
      guard !Task.isCancelled else { break }
      try? await Task.sleep(for: delay)
      delay = min(delay * 2, configuration.maxReconnectDelay)
    }
    hub.finish()
    watchdogHub.finish()
  }

  /// One bus connection: subscribe first, then snapshot, then follow signals until it closes.
  private func runSession(_ connection: DBusConnection) async {
    self.connection = connection
    do {
      let signals = try await connection.signals(
        matching: DBusMatchRule(sender: BlueZNames.service),
        bufferSize: configuration.signalBufferSize)
      let owners = try await connection.nameOwnerChanges(of: BlueZNames.service)
      let initial = try await connection.nameOwner(of: BlueZNames.service)
      setOwner(initial)
      if initial == nil {
        startupSettled = true
        logger.info("bluetoothd (org.bluez) is not running; waiting for it")
      }
      await withTaskGroup(of: Void.self) { group in
        group.addTask { await self.resync() }
        group.addTask {
          for await change in owners { await self.ownerChanged(change.newOwner) }
        }
        if configuration.watchdog.enabled {
          let interval = configuration.watchdog.checkInterval
          group.addTask {
            while !Task.isCancelled {
              try? await Task.sleep(for: interval)
              await self.watchdogTick()
            }
          }
        }
        for await signal in signals { await handle(signal) }
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

  /// The owner of `org.bluez` changed: the old stack is gone, a new one is mirrored afresh.
  func ownerChanged(_ newOwner: String?) async {
    guard setOwner(newOwner) else { return }
    await resync()
  }

  /// Records a new owner, dropping the old stack's model; whether a snapshot is needed.
  @discardableResult
  private func setOwner(_ newOwner: String?) -> Bool {
    guard newOwner != owner else { return false }
    if owner != nil {
      logger.warning("bluetoothd (org.bluez) went away")
      dropStack()
    }
    owner = newOwner
    return newOwner != nil
  }

  /// Forgets the stack's model, sessions and watchdogs; reports `stackLost` once.
  func dropStack() {
    epoch += 1
    owner = nil
    synced = false
    pending = nil
    let resetting = model.resetting
    model = BlueZObjectModel(maxDevices: configuration.maxDevices)
    model.resetting = resetting
    sessions = [:]
    watchdogs = [:]
    relearning = []
    if announced {
      announced = false
      hub.yield(.stackLost)
    }
  }

  /// Takes a snapshot of the current owner's objects (`GetManagedObjects`, addressed to the
  /// owner's unique name), delivers it, then replays the signals held back meanwhile. Repeats
  /// while the owner changes under it; retries with backoff while the owner does not answer.
  func resync() async {
    guard !snapshotting else { return }
    snapshotting = true
    defer { snapshotting = false }
    var failures = 0
    while let target = owner, !synced, let connection, !Task.isCancelled {
      pending = []
      pendingOverflow = false
      do {
        let reply = try await connection.call(
          destination: target, path: .root, interface: BlueZNames.objectManager,
          member: "GetManagedObjects", timeout: configuration.callTimeout)
        counters.snapshots += 1
        guard owner == target else { continue }
        let events = try model.load(reply, now: clock.now)
        synced = true
        announced = true
        startupSettled = true
        logger.info(
          "mirroring BlueZ",
          metadata: [
            "ble.adapters": "\(model.adapters.count)", "ble.devices": "\(model.devices.count)",
          ])
        deliver(events)
        let held = pending ?? []
        pending = nil
        var unknown: [DBusObjectPath] = []
        for signal in held where signal.sender == target {
          let update = model.apply(signal, now: clock.now)
          deliver(update.events)
          if let path = update.unknownDevice { unknown.append(path) }
        }
        if pendingOverflow {
          logger.warning("too many BlueZ signals during the snapshot; taking another")
          synced = false
          continue
        }
        for path in unknown { await relearn(path) }
      } catch {
        pending = nil
        failures += 1
        logger.warning(
          "BlueZ snapshot failed", metadata: ["dbus.error": "\(error)", "attempt": "\(failures)"])
        guard owner == target else { continue }
        if failures >= 3 { startupSettled = true }
        let delay = Duration.milliseconds(min(10_000, 100 << min(failures, 7)))
        try? await Task.sleep(for: delay)
      }
    }
  }

  /// One signal from `org.bluez`: held back during a snapshot, ignored from an old owner or
  /// before the first snapshot, applied otherwise.
  func handle(_ signal: DBusSignal) async {
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
    let update = model.apply(signal, now: clock.now)
    deliver(update.events)
    if let path = update.unknownDevice { await relearn(path) }
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
        arguments: [.string(BlueZNames.device)], timeout: configuration.callTimeout)
      guard epoch == self.epoch, synced, model.devices[path] == nil,
        let properties = reply.first?.propertyMap
      else { return }
      deliver(model.addDevice(path: path, properties: properties, now: clock.now).events)
    } catch {
      logger.debug("cannot re-learn a device", metadata: ["dbus.error": "\(error)"])
    }
  }
}
