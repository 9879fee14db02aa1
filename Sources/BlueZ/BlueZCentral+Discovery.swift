public import BridgeCore
import DBus
import Logging

extension BlueZCentral {
  /// Starts LE discovery on an adapter: `SetDiscoveryFilter` (see ``DiscoveryFilter``'s BlueZ
  /// dictionary: `Transport` `le`, `UUIDs` and `RSSI` when given, `DuplicateData` `true`, never
  /// a false boolean), then `StartDiscovery` unless this central's discovery session on the
  /// adapter is already running, in which case only the new filter is applied. Idempotent.
  ///
  /// - Parameters:
  ///   - adapter: The adapter's id, for example `hci0`.
  ///   - filter: What to report.
  /// - Throws: ``CentralError``: `unknown_adapter`, `unavailable`, `powered_off`
  ///   (`org.bluez.Error.NotReady`), `in_progress` (`org.bluez.Error.InProgress`), `timeout`,
  ///   `bluez_error`; ``CentralError/detail`` holds the D-Bus error name.
  public func startDiscovery(adapter: String, filter: DiscoveryFilter) async throws(CentralError) {
    _ = try requireAdapter(adapter)
    try await lock(adapter)
    defer { unlock(adapter) }
    try await applyDiscovery(adapter, filter)
  }

  /// Stops this central's discovery session on an adapter (`StopDiscovery`). Stopping when not
  /// discovering, on a powered-off adapter or while bluetoothd is away is not an error.
  ///
  /// - Parameter adapter: The adapter's id.
  /// - Throws: ``CentralError`` `unknown_adapter` for an adapter BlueZ does not have, or what
  ///   BlueZ refused otherwise.
  public func stopDiscovery(adapter: String) async throws(CentralError) {
    guard synced else { return }
    _ = try requireAdapter(adapter)
    try await lock(adapter)
    defer { unlock(adapter) }
    sessions[adapter] = nil
    watchdogs[adapter] = nil
    try await stopCall(adapter)
  }

  /// Powers an adapter on or off (`Properties.Set` of `org.bluez.Adapter1.Powered`).
  ///
  /// - Parameters:
  ///   - adapter: The adapter's id.
  ///   - on: Whether to power it on.
  /// - Throws: ``CentralError`` as for ``startDiscovery(adapter:filter:)``.
  public func setPowered(adapter: String, _ on: Bool) async throws(CentralError) {
    _ = try requireAdapter(adapter)
    try await lock(adapter)
    defer { unlock(adapter) }
    try await poweredCall(adapter, on)
  }

  // MARK: calls

  /// The adapter with this id, or `unavailable` / `unknown_adapter`.
  func requireAdapter(_ id: String) throws(CentralError) -> BlueZAdapter {
    guard synced, connection != nil, owner != nil else {
      throw CentralError(.unavailable, message: "bluetoothd (org.bluez) is not available")
    }
    guard let adapter = model.adapter(id: id) else {
      throw CentralError(.unknownAdapter, message: "BlueZ has no adapter '\(id)'")
    }
    return adapter
  }

  /// Sets the filter and starts discovery unless our session already runs. A start that is not
  /// the watchdog's own step begins a fresh watchdog period.
  func applyDiscovery(_ id: String, _ filter: DiscoveryFilter, byWatchdog: Bool = false)
    async throws(CentralError)
  {
    let epoch = self.epoch
    if scansThroughKernel, try await startKernelDiscovery(id, filter) {
      guard epoch == self.epoch else { return }
      let running = sessions[id]?.started == true
      sessions[id] = DiscoverySession(filter: filter, started: true)
      guard !running else { return }
      if !byWatchdog || watchdogs[id] == nil {
        let now = clock.now
        watchdogs[id] = WatchdogState(since: now, silentSince: now)
      }
      logger.info("discovery started through the kernel", metadata: ["ble.adapter": "\(id)"])
      return
    }
    _ = try await adapterCall(
      id, BlueZNames.adapter, "SetDiscoveryFilter", [filter.bluezDictionary],
      operation: "SetDiscoveryFilter")
    if sessions[id]?.started == true, epoch == self.epoch {
      sessions[id]?.filter = filter
      return
    }
    _ = try await adapterCall(
      id, BlueZNames.adapter, "StartDiscovery", [], operation: "StartDiscovery")
    guard epoch == self.epoch else { return }
    sessions[id] = DiscoverySession(filter: filter, started: true)
    if !byWatchdog || watchdogs[id] == nil {
      let now = clock.now
      watchdogs[id] = WatchdogState(since: now, silentSince: now)
    }
    logger.info("discovery started", metadata: ["ble.adapter": "\(id)"])
  }

  /// Stops this central's discovery: through the kernel when it runs there, else
  /// `StopDiscovery`, treating "no discovery started" and "not powered" as success.
  ///
  /// - Parameters:
  ///   - id: The adapter.
  ///   - throughBluetoothd: Stop bluetoothd's discovery even while the kernel's runs.
  /// - Throws: ``CentralError`` for what bluetoothd refused.
  func stopCall(_ id: String, throughBluetoothd: Bool = false) async throws(CentralError) {
    if !throughBluetoothd, await stopKernelDiscovery(id) { return }
    do {
      _ = try await adapterCall(
        id, BlueZNames.adapter, "StopDiscovery", [], operation: "StopDiscovery")
    } catch {
      if error.code == .poweredOff || error.bluez == .failed
        || error.code == .unavailable
      {
        return
      }
      throw error
    }
  }

  /// `Properties.Set(org.bluez.Adapter1, Powered, <on>)`.
  func poweredCall(_ id: String, _ on: Bool) async throws(CentralError) {
    _ = try await adapterCall(
      id, BlueZNames.properties, "Set",
      [.string(BlueZNames.adapter), .string("Powered"), .variant(.bool(on))],
      operation: on ? "power on" : "power off")
  }

  /// Calls a method on an adapter object of the current owner, mapping errors.
  func adapterCall(
    _ id: String, _ interface: String, _ member: String, _ arguments: [DBusValue],
    operation: String
  ) async throws(CentralError) -> [DBusValue] {
    let adapter = try requireAdapter(id)
    guard let connection, let owner else {
      throw CentralError(.unavailable, message: "bluetoothd (org.bluez) is not available")
    }
    do {
      return try await connection.call(
        destination: owner, path: adapter.path, interface: interface, member: member,
        arguments: arguments, timeout: configuration.bus.callTimeout)
    } catch {
      let mapped = CentralError.bluez(error, operation: operation)
      logger.debug(
        "BlueZ call failed",
        metadata: [
          "ble.adapter": "\(id)", "dbus.error": "\(error.name)", "operation": "\(operation)",
        ])
      throw mapped
    }
  }

  // MARK: per-adapter serialisation

  /// Waits until no other discovery operation runs on the adapter, then holds it.
  ///
  /// - Throws: ``CentralError`` `aborted` when the task is cancelled while it waits.
  func lock(_ id: String) async throws(CentralError) {
    guard let ticket = adapterLocks[id, default: TurnQueue()].take() else { return }
    let granted = await withTaskCancellationHandler {
      await withCheckedContinuation { (waiter: CheckedContinuation<Bool, Never>) in
        if Task.isCancelled {
          waiter.resume(returning: false)
        } else {
          adapterLocks[id, default: TurnQueue()].wait(ticket, waiter)
        }
      }
    } onCancel: {
      Task { await self.leaveLock(id, ticket) }
    }
    guard granted else {
      throw CentralError(.aborted, message: "cancelled while waiting for adapter \(id)")
    }
  }

  /// A waiter for the adapter was cancelled.
  func leaveLock(_ id: String, _ ticket: Int) {
    adapterLocks[id]?.leave(ticket)
  }

  /// Hands the adapter to the next waiting operation, or frees it.
  func unlock(_ id: String) {
    adapterLocks[id]?.release()
    if adapterLocks[id]?.isHeld == false { adapterLocks[id] = nil }
  }
}
