import BridgeCore
import Testing

@testable import SimulatedRadio

/// Helpers to read effects.
extension [SimulationEngine.Effect] {
  var central: [CentralEvent] {
    compactMap { if case .central(let event) = $0 { event } else { nil } }
  }
  var peripheral: [PeripheralEvent] {
    compactMap { if case .peripheral(let event) = $0 { event } else { nil } }
  }
  var advertisements: [Advertisement] {
    central.compactMap {
      switch $0 {
      case .deviceAppeared(let a), .deviceUpdated(let a): a
      default: nil
      }
    }
  }
  var notifications: [(GATTCharacteristicID, [UInt8])] {
    central.compactMap {
      if case .notification(let id, let value) = $0 { (id, value) } else { nil }
    }
  }
}

/// Runs an engine in steps of `step` seconds up to `end`, collecting effects.
func runEngine(_ engine: inout SimulationEngine, until end: Double, step: Double = 0.01)
  -> [SimulationEngine.Effect]
{
  var effects: [SimulationEngine.Effect] = []
  var time = engine.now
  while time < end {
    time = min(end, time + step)
    effects += engine.advance(to: time)
  }
  return effects
}

@Suite("The simulated world (engine, literal times)")
struct SimulationEngineTests {
  static let mixed = SimulatedWorld(
    seed: 7,
    devices: [
      .init(kind: .battery, name: "bat", notifyRate: 2),
      .init(kind: .heartRate, name: "hr", notifyRate: 10),
      .init(kind: .actuator, name: "act"),
      .init(kind: .transfer, name: "xfer", textInterval: 0, mtu: 23),
      .init(kind: .beacon, count: 3, name: "bc", rotate: 5),
    ])

  func discovering(_ world: SimulatedWorld = mixed) throws -> SimulationEngine {
    var engine = SimulationEngine(world: world)
    _ = try engine.startDiscovery(adapter: "hci0", filter: DiscoveryFilter())
    return engine
  }

  func connected(_ name: String, in engine: inout SimulationEngine) throws -> BluetoothAddress {
    let index = try #require(engine.devices.firstIndex { $0.name == name })
    let address = engine.devices[index].address
    let plan = try #require(try engine.beginConnect(address))
    let effects = try engine.finishConnect(plan)
    #expect(effects.central == [.connectionChanged(address, connected: true)])
    let resolved = engine.advance(to: engine.now + 0.02).central.filter {
      if case .servicesResolved = $0 { true } else { false }
    }
    #expect(resolved == [.servicesResolved(address, engine.devices[index].tree)])
    return address
  }

  @Test("advance stops at its limit; what is still due comes at the next call, in order")
  func limit() throws {
    let world = SimulatedWorld(
      seed: 3, advertisingInterval: 0.01, devices: [.init(kind: .beacon, count: 50, name: "b")])
    var whole = try discovering(world)
    var limited = try discovering(world)
    let all = whole.advance(to: 1)
    #expect(all.count > 100)
    var pieces: [SimulationEngine.Effect] = []
    while true {
      let piece = limited.advance(to: 1, limit: 40)
      #expect(piece.count <= 40)
      pieces += piece
      guard let next = limited.nextDue, next <= 1 else { break }
    }
    #expect(pieces == all)
  }

  @Test("one seed gives the same devices and the same sequence of events; another seed differs")
  func deterministic() throws {
    var a = try discovering()
    var b = try discovering()
    let first = runEngine(&a, until: 12)
    #expect(first == runEngine(&b, until: 12))
    #expect(first.advertisements.count > 20)
    var other = SimulationEngine(world: SimulatedWorld(seed: 8, devices: Self.mixed.devices))
    #expect(Set(other.devices.map(\.address)).isDisjoint(with: Set(a.devices.map(\.address))))
    _ = try other.startDiscovery(adapter: "hci0", filter: DiscoveryFilter())
    #expect(runEngine(&other, until: 12) != first)
  }

  @Test("addresses are distinct, public for fixed devices and resolvable private for rotating ones")
  func addresses() throws {
    let engine = SimulationEngine(
      world: SimulatedWorld(devices: [
        .init(kind: .battery, count: 50), .init(kind: .beacon, count: 50, rotate: 10),
      ]))
    #expect(Set(engine.devices.map(\.address)).count == 100)
    for device in engine.devices {
      let top = device.address.bytes[0]
      if device.group.rotate > 0 {
        #expect(top & 0xC0 == 0x40)
        #expect(device.address.isPrivateRandom)
        #expect(device.addressType == .random)
      } else {
        #expect(device.addressType == .public)
      }
    }
    #expect(engine.devices.map(\.name).prefix(2) == ["sim-battery-1", "sim-battery-2"])
  }

  @Test("nothing is reported before discovery; then each device appears once and updates after")
  func discoveryGates() throws {
    var engine = SimulationEngine(world: Self.mixed)
    #expect(runEngine(&engine, until: 3).advertisements.isEmpty)
    let start = try engine.startDiscovery(adapter: "hci0", filter: DiscoveryFilter())
    #expect(start.central.count == 1)
    guard case .adapterChanged(let adapter) = start.central.first else {
      Issue.record("no adapter change")
      return
    }
    #expect(adapter.discovering && adapter.powered)
    let effects = runEngine(&engine, until: 4.5).central
    var appeared: [BluetoothAddress] = []
    for event in effects {
      switch event {
      case .deviceAppeared(let a):
        #expect(!appeared.contains(a.address))
        appeared.append(a.address)
      case .deviceUpdated(let a):
        #expect(appeared.contains(a.address), "updated before it appeared")
      default: break
      }
    }
    #expect(Set(appeared) == Set(engine.devices.map(\.address)))
    _ = try engine.stopDiscovery(adapter: "hci0")
    #expect(runEngine(&engine, until: 7).advertisements.isEmpty)
  }

  @Test("the discovery filter's service UUIDs and RSSI floor apply")
  func filter() throws {
    var engine = SimulationEngine(world: Self.mixed)
    _ = try engine.startDiscovery(
      adapter: "hci0", filter: DiscoveryFilter(serviceUUIDs: [BluetoothUUID(uuid16: 0x180D)]))
    let names = Set(runEngine(&engine, until: 4).advertisements.compactMap(\.nameText))
    #expect(names == ["hr"])
    var floor = SimulationEngine(
      world: SimulatedWorld(devices: [
        .init(kind: .battery, rssi: -100), .init(kind: .heartRate, rssi: -40),
      ]))
    _ = try floor.startDiscovery(adapter: "hci0", filter: DiscoveryFilter(rssiFloor: -80))
    let seen = runEngine(&floor, until: 5).advertisements
    #expect(!seen.isEmpty)
    #expect(seen.allSatisfy { ($0.rssi ?? -200) >= -80 })
  }

  @Test("beacons: new manufacturer data each time; rotating addresses replace each other")
  func beaconsRotate() throws {
    var engine = try discovering(
      SimulatedWorld(advertisingInterval: 0.5, devices: [.init(kind: .beacon, rotate: 2)]))
    let effects = runEngine(&engine, until: 20.5)
    let adverts = effects.advertisements
    let data = adverts.map { $0.manufacturerData[0xFFFF] ?? [] }
    #expect(Set(data).count == data.count)
    var removed: [BluetoothAddress] = []
    var current: BluetoothAddress?
    for event in effects.central {
      switch event {
      case .deviceAppeared(let a):
        if let current { #expect(removed.contains(current), "a new address before the old left") }
        current = a.address
      case .deviceRemoved(let address):
        #expect(address == current)
        removed.append(address)
      default: break
      }
    }
    #expect(removed.count == 10)
    #expect(Set(removed).count == 10)
    #expect(engine.usedAddresses.count == 1)
    #expect(engine.byAddress.count == 1)
  }

  @Test("connect: unknown device, beacon, slots, failures; then the GATT tree")
  func connect() throws {
    var engine = try discovering()
    let unknown = try BluetoothAddress("00:11:22:33:44:55")
    #expect(throws: CentralError.self) { try engine.beginConnect(unknown) }
    do {
      _ = try engine.beginConnect(unknown)
    } catch {
      #expect(error.code == .notFound)
    }
    let beacon = try #require(engine.devices.first { $0.group.kind == .beacon }).address
    do {
      _ = try engine.beginConnect(beacon)
      Issue.record("a beacon accepted a connection")
    } catch {
      #expect(error.code == .bluezError)
    }
    let address = try connected("hr", in: &engine)
    #expect(try engine.beginConnect(address) == nil, "connected already: nothing to do")
    let tree = try #require(engine.devices.first { $0.name == "hr" }).tree
    #expect(
      tree.characteristic(
        service: BluetoothUUID(uuid16: 0x180D), characteristic: BluetoothUUID(uuid16: 0x2A37))?
        .canNotify == true)
    #expect(tree.mtu == 23)
    #expect(engine.disconnect(address).central == [.connectionChanged(address, connected: false)])

    var full = try discovering(
      SimulatedWorld(maxConnections: 1, devices: [.init(kind: .battery, count: 2)]))
    _ = try connected("sim-battery-1", in: &full)
    do {
      _ = try full.beginConnect(full.devices[1].address)
      Issue.record("a second link beyond max_connections")
    } catch {
      #expect(error.code == .outOfSlots)
    }
    var failing = try discovering(
      SimulatedWorld(connectFailureRate: 1, devices: [.init(kind: .battery)]))
    let plan = try #require(try failing.beginConnect(failing.devices[0].address))
    do {
      _ = try failing.finishConnect(plan)
      Issue.record("connected despite a failure rate of 1")
    } catch {
      #expect(error.code == .aborted)
    }
    #expect(!failing.devices[0].connecting)
  }

  @Test("numbered heart-rate measurements carry 0, 1, 2, … as Energy Expended (flags 0x08)")
  func numberedHeartRate() throws {
    var group = SimulatedWorld.DeviceGroup(kind: .heartRate, name: "hr", notifyRate: 10)
    group.numbered = true
    var engine = try discovering(SimulatedWorld(seed: 3, devices: [group]))
    let hr = try connected("hr", in: &engine)
    let measurement = GATTCharacteristicID(
      address: hr, service: .init(uuid16: 0x180D), characteristic: .init(uuid16: 0x2A37))
    _ = try engine.setNotify(measurement, enabled: true)
    let values = runEngine(&engine, until: engine.now + 1.005).notifications.map(\.1)
    #expect(values.count == 10)
    #expect(values.allSatisfy { $0.count == 4 && $0[0] == 0x08 })
    #expect(values.map { Int($0[2]) | Int($0[3]) << 8 } == Array(0..<10))
  }

  @Test("reads, writes with their types, notifications at the configured rate")
  func gattOperations() throws {
    var engine = try discovering()
    let battery = try connected("bat", in: &engine)
    let level = GATTCharacteristicID(
      address: battery, service: .init(uuid16: 0x180F), characteristic: .init(uuid16: 0x2A19))
    #expect(try engine.read(level) == [100])
    let name = GATTCharacteristicID(
      address: battery, service: .init(uuid16: 0x180A), characteristic: .init(uuid16: 0x2A29))
    #expect(try engine.read(name) == Array("gatt2mqtt simulator".utf8))
    do {
      _ = try engine.write(level, value: [1], withResponse: true)
      Issue.record("wrote a read-only characteristic")
    } catch {
      #expect(error.code == .notPermitted)
    }
    let missing = GATTCharacteristicID(
      address: battery, service: .init(uuid16: 0x180D), characteristic: .init(uuid16: 0x2A37))
    do {
      _ = try engine.read(missing)
      Issue.record("read a characteristic the device does not have")
    } catch {
      #expect(error.code == .unknownCharacteristic)
    }

    let hr = try connected("hr", in: &engine)
    let measurement = GATTCharacteristicID(
      address: hr, service: .init(uuid16: 0x180D), characteristic: .init(uuid16: 0x2A37))
    #expect(
      try engine.setNotify(measurement, enabled: true).central == [
        .notifyingChanged(measurement, true)
      ])
    let start = engine.now
    let values = runEngine(&engine, until: start + 2.005).notifications.filter {
      $0.0 == measurement
    }
    #expect(values.count == 20)
    #expect(
      values.allSatisfy { $0.1.count == 2 && $0.1[0] == 0 && (50...180).contains(Int($0.1[1])) })
    _ = try engine.setNotify(measurement, enabled: false)
    #expect(
      runEngine(&engine, until: start + 4).notifications.filter { $0.0 == measurement }.isEmpty)

    let actuator = try connected("act", in: &engine)
    let service = SimulatedDevice.UUIDs.actuator
    let command = GATTCharacteristicID(
      address: actuator, service: service, characteristic: SimulatedDevice.UUIDs.actuatorCommand)
    let stream = GATTCharacteristicID(
      address: actuator, service: service, characteristic: SimulatedDevice.UUIDs.actuatorStream)
    let status = GATTCharacteristicID(
      address: actuator, service: service, characteristic: SimulatedDevice.UUIDs.actuatorStatus)
    _ = try engine.setNotify(status, enabled: true)
    #expect(
      try engine.write(command, value: [1, 2], withResponse: true).notifications.map(\.1) == [
        [1, 2]
      ])
    do {
      _ = try engine.write(command, value: [3], withResponse: false)
      Issue.record("write without response on a write-only-with-response characteristic")
    } catch {
      #expect(error.code == .notPermitted)
    }
    _ = try engine.write(stream, value: [9], withResponse: false)
    #expect(try engine.read(status) == [9])
    _ = engine.disconnect(actuator)
    do {
      _ = try engine.read(status)
      Issue.record("read while disconnected")
    } catch {
      #expect(error.code == .notConnected)
    }
  }

  @Test("a transfer peripheral sends its text as MTU-3 chunks and EOM while notifying")
  func transferPeripheral() throws {
    var engine = try discovering()
    let address = try connected("xfer", in: &engine)
    let id = GATTCharacteristicID(
      address: address, service: GATTBridge.defaultTransferService,
      characteristic: GATTBridge.defaultTransferCharacteristic)
    _ = try engine.setNotify(id, enabled: true)
    let chunks = runEngine(&engine, until: engine.now + 1).notifications.filter { $0.0 == id }.map(
      \.1)
    #expect(chunks.last == Array("EOM".utf8))
    #expect(chunks.dropLast().allSatisfy { $0.count <= 20 && !$0.isEmpty })
    #expect(Array(chunks.dropLast().joined()) == Array(SimulatedWorld.defaultText.utf8))
  }

  @Test("a one-operation-at-a-time rule per characteristic, as BlueZ's InProgress")
  func busy() throws {
    var engine = try discovering()
    let address = try connected("bat", in: &engine)
    let level = GATTCharacteristicID(
      address: address, service: .init(uuid16: 0x180F), characteristic: .init(uuid16: 0x2A19))
    try engine.beginOperation(level)
    do {
      try engine.beginOperation(level)
      Issue.record("two operations at once")
    } catch {
      #expect(error.code == .inProgress)
    }
    engine.endOperation(level)
    try engine.beginOperation(level)
  }

  @Test("a peripheral that drops links by itself; powering off drops links and the service")
  func linksAndPower() throws {
    var engine = try discovering(
      SimulatedWorld(devices: [.init(kind: .battery, disconnectAfter: 3)], centrals: [.init()]))
    let address = try connected("sim-battery", in: &engine)
    let drops = runEngine(&engine, until: engine.now + 3.1).central.filter {
      $0 == .connectionChanged(address, connected: false)
    }
    #expect(drops.count == 1)
    _ = try connected("sim-battery", in: &engine)
    _ = try engine.startPeripheral(PeripheralService())
    let off = try engine.setPowered(adapter: "hci0", false)
    #expect(off.central.contains(.connectionChanged(address, connected: false)))
    #expect(
      off.peripheral.contains { if case .stateChanged(.unavailable) = $0 { true } else { false } })
    #expect(runEngine(&engine, until: engine.now + 3).advertisements.isEmpty)
    let on = try engine.setPowered(adapter: "hci0", true)
    #expect(on.peripheral == [.stateChanged(.advertising)])
    #expect(on.central.count == 1)
  }

  @Test("scheduled power cycles: off for off_for seconds every power_cycle_every seconds")
  func powerCycles() {
    var engine = SimulationEngine(
      world: SimulatedWorld(adapters: [.init(id: "hci0", powerCycleEvery: 10, offFor: 2)]))
    let changes = runEngine(&engine, until: 25, step: 0.5).central.compactMap {
      if case .adapterChanged(let a) = $0 { a.powered } else { nil }
    }
    #expect(changes == [false, true, false, true])
  }
}
