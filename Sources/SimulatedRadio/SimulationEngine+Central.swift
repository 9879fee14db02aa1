import BridgeCore

/// The central ports' calls, as BlueZ would answer them.
extension SimulationEngine {
  /// A connection attempt under way: how long it takes and whether it will fail.
  struct ConnectPlan: Sendable, Hashable {
    var device: Int
    var latency: Double
    var fails: Bool
  }

  func adapterIndex(_ id: String) throws(CentralError) -> Int {
    guard let index = adapters.firstIndex(where: { $0.id == id }) else {
      throw CentralError(.unknownAdapter, message: "no simulated adapter \(id)")
    }
    return index
  }

  /// Starts discovery on an adapter with a filter (service UUIDs and RSSI floor apply to
  /// what is reported).
  mutating func startDiscovery(adapter id: String, filter: DiscoveryFilter)
    throws(CentralError) -> [Effect]
  {
    let index = try adapterIndex(id)
    guard adapters[index].powered else {
      throw CentralError(.poweredOff, message: "adapter \(id) is powered off")
    }
    self.filter = filter
    guard !adapters[index].discovering else { return [] }
    adapters[index].discovering = true
    return [.central(.adapterChanged(adapters[index]))]
  }

  /// Stops discovery on an adapter; devices seen stay known (as in BlueZ's cache).
  mutating func stopDiscovery(adapter id: String) throws(CentralError) -> [Effect] {
    let index = try adapterIndex(id)
    guard adapters[index].discovering else { return [] }
    adapters[index].discovering = false
    return [.central(.adapterChanged(adapters[index]))]
  }

  /// Powers an adapter on or off by name.
  mutating func setPowered(adapter id: String, _ on: Bool) throws(CentralError) -> [Effect] {
    setPowered(adapter: try adapterIndex(id), on)
  }

  /// Powers an adapter on or off: off ends discovery, drops every link and withdraws the
  /// gateway's service; on brings the service back (the stack re-registers it).
  mutating func setPowered(adapter index: Int, _ on: Bool) -> [Effect] {
    guard adapters[index].powered != on else { return [] }
    adapters[index].powered = on
    var effects: [Effect] = []
    if !on {
      adapters[index].discovering = false
      effects.append(.central(.adapterChanged(adapters[index])))
      if !powered {
        for device in devices.indices where devices[device].connected {
          effects += dropLink(device)
        }
        for device in devices.indices { devices[device].known = false }
        effects += withdrawService(reason: "adapter \(adapters[index].id) powered off")
      }
    } else {
      effects.append(.central(.adapterChanged(adapters[index])))
      effects += restoreService()
    }
    return effects
  }

  /// Checks a connection attempt and marks the device as connecting.
  /// - Returns: The plan, or nil when the device is connected already.
  mutating func beginConnect(_ address: BluetoothAddress) throws(CentralError) -> ConnectPlan? {
    guard powered else { throw CentralError(.poweredOff, message: "every adapter is powered off") }
    guard let index = byAddress[address] else {
      throw CentralError(.notFound, message: "no simulated device \(address)")
    }
    guard devices[index].connectable else {
      throw CentralError(
        .bluezError, message: "\(devices[index].name) does not accept connections",
        detail: "org.bluez.Error.Failed")
    }
    if devices[index].connected { return nil }
    guard !devices[index].connecting else {
      throw CentralError(.inProgress, message: "a connection to \(address) is under way")
    }
    guard devices.count(where: { $0.connected }) < world.maxConnections else {
      throw CentralError(
        .outOfSlots, message: "the simulated adapter has \(world.maxConnections) links already")
    }
    devices[index].connecting = true
    let fails = devices[index].rng.fraction() < world.connectFailureRate
    return ConnectPlan(device: index, latency: world.connectLatency, fails: fails)
  }

  /// Ends a connection attempt: connected (then services resolved shortly after) or failed.
  mutating func finishConnect(_ plan: ConnectPlan) throws(CentralError) -> [Effect] {
    let index = plan.device
    devices[index].connecting = false
    guard powered else { throw CentralError(.aborted, message: "the adapter was powered off") }
    if plan.fails {
      throw CentralError(
        .aborted, message: "simulated connection failure",
        detail: "le-connection-abort-by-local")
    }
    devices[index].connected = true
    counters.connections += 1
    devices[index].generation += 1
    devices[index].notifying = []
    let generation = devices[index].generation
    schedule(.resolve(device: index, generation: generation), at: now + 0.01)
    if devices[index].group.disconnectAfter > 0 {
      schedule(
        .drop(device: index, generation: generation),
        at: now + devices[index].group.disconnectAfter)
    }
    return [.central(.connectionChanged(devices[index].address, connected: true))]
  }

  /// Gives up a connection attempt (timed out).
  mutating func cancelConnect(_ plan: ConnectPlan) {
    devices[plan.device].connecting = false
  }

  /// Disconnects; a device not connected is left as it is.
  mutating func disconnect(_ address: BluetoothAddress) -> [Effect] {
    guard let index = byAddress[address], devices[index].connected else { return [] }
    return dropLink(index)
  }

  /// Forgets a device as BlueZ's `RemoveDevice` does: the link (if any) drops, the device is
  /// reported removed, and its next advertisement makes it appear again.
  mutating func removeDevice(_ address: BluetoothAddress) -> [Effect] {
    guard let index = byAddress[address], devices[index].known else { return [] }
    var effects = devices[index].connected ? dropLink(index) : []
    devices[index].known = false
    effects.append(.central(.deviceRemoved(address)))
    return effects
  }

  /// Ends a link: notifications stop, the device advertises again.
  mutating func dropLink(_ index: Int) -> [Effect] {
    devices[index].connected = false
    devices[index].notifying = []
    devices[index].generation += 1
    devices[index].notifyGeneration += 1
    return [.central(.connectionChanged(devices[index].address, connected: false))]
  }

  /// The connected device that holds `id`, checked like BlueZ does.
  func connectedDevice(for id: GATTCharacteristicID) throws(CentralError) -> (
    Int, GATTTree.Characteristic
  ) {
    guard let index = byAddress[id.address] else {
      throw CentralError(.notFound, message: "no simulated device \(id.address)")
    }
    guard devices[index].connected else {
      throw CentralError(.notConnected, message: "\(id.address) is not connected")
    }
    guard let characteristic = devices[index].characteristic(id) else {
      throw CentralError(.unknownCharacteristic, message: "\(id) is not in the GATT tree")
    }
    return (index, characteristic)
  }

  /// Marks an operation on `id` as under way (BlueZ answers a second one with `InProgress`).
  mutating func beginOperation(_ id: GATTCharacteristicID) throws(CentralError) {
    guard busy.insert(id).inserted else {
      throw CentralError(
        .inProgress, message: "an operation on \(id) is under way",
        detail: "org.bluez.Error.InProgress")
    }
  }

  /// Ends the operation on `id`.
  mutating func endOperation(_ id: GATTCharacteristicID) {
    busy.remove(id)
  }

  /// Reads a characteristic.
  func read(_ id: GATTCharacteristicID) throws(CentralError) -> [UInt8] {
    let (index, characteristic) = try connectedDevice(for: id)
    guard characteristic.canRead else {
      throw CentralError(.notPermitted, message: "\(id) is not readable")
    }
    return devices[index].value(of: id.characteristic)
  }

  /// Writes a characteristic; the actuator's status takes (and notifies) what its command
  /// and stream characteristics receive.
  mutating func write(_ id: GATTCharacteristicID, value: [UInt8], withResponse: Bool)
    throws(CentralError) -> [Effect]
  {
    let (index, characteristic) = try connectedDevice(for: id)
    let allowed =
      withResponse ? characteristic.canWriteWithResponse : characteristic.canWriteWithoutResponse
    guard allowed else {
      throw CentralError(
        .notPermitted,
        message: "\(id) does not take writes \(withResponse ? "with" : "without") response")
    }
    guard value.count <= 512 else {
      throw CentralError(
        .bluezError, message: "value longer than 512 bytes",
        detail: "org.bluez.Error.InvalidValueLength")
    }
    devices[index].values[id.characteristic] = value
    counters.writes += 1
    let status = SimulatedDevice.UUIDs.actuatorStatus
    guard devices[index].group.kind == .actuator, id.characteristic != status else { return [] }
    devices[index].values[status] = value
    guard devices[index].notifying.contains(status) else { return [] }
    counters.notifications += 1
    return [.central(.notification(self.id(index, SimulatedDevice.UUIDs.actuator, status), value))]
  }

  /// Turns notifications on or off; on starts the device's stream of values (heart rate,
  /// battery, the transfer text).
  mutating func setNotify(_ id: GATTCharacteristicID, enabled: Bool) throws(CentralError)
    -> [Effect]
  {
    let (index, characteristic) = try connectedDevice(for: id)
    guard characteristic.canNotify else {
      throw CentralError(.notPermitted, message: "\(id) does not notify")
    }
    if enabled {
      guard devices[index].notifying.insert(id.characteristic).inserted else {
        return [.central(.notifyingChanged(id, true))]
      }
    } else {
      guard devices[index].notifying.remove(id.characteristic) != nil else {
        return [.central(.notifyingChanged(id, false))]
      }
    }
    devices[index].notifyGeneration += 1
    let generation = devices[index].notifyGeneration
    if enabled {
      switch id.characteristic {
      case SimulatedDevice.UUIDs.heartRateMeasurement, SimulatedDevice.UUIDs.batteryLevel:
        let rate = devices[index].group.notifyRate
        schedule(.notify(device: index, generation: generation), at: now + 1 / rate)
      case GATTBridge.defaultTransferCharacteristic:
        schedule(.transfer(device: index, generation: generation), at: now + 0.05)
      default:
        break
      }
    }
    return [.central(.notifyingChanged(id, enabled))]
  }
}

extension SimulationEngine {
  /// A connected device's link quality: its current RSSI, the controller's +4 dBm.
  func linkQuality(of address: BluetoothAddress) throws(CentralError) -> LinkQuality {
    guard let index = byAddress[address], devices[index].connected else {
      throw CentralError(.notConnected, message: "\(address) is not connected")
    }
    return LinkQuality(rssi: devices[index].rssi, txPower: 4, maxTxPower: 4)
  }
}
