import BridgeCore
import HeapModule

/// The simulated BLE world as a pure state machine: time is a number of seconds given by the
/// caller, every change is returned as ``Effect``s, nothing sleeps and nothing is shared.
/// ``SimulatedRadio`` drives it with a clock and answers the ports' calls with it; tests drive
/// it with literal times.
struct SimulationEngine {
  /// What the world tells the gateway.
  enum Effect: Sendable, Hashable {
    /// An event for the central ports.
    case central(CentralEvent)
    /// An event for the peripheral port.
    case peripheral(PeripheralEvent)
  }

  /// Something scheduled.
  enum Work: Hashable {
    case advertise(device: Int)
    case rotate(device: Int)
    case notify(device: Int, generation: Int)
    case transfer(device: Int, generation: Int)
    case resolve(device: Int, generation: Int)
    case drop(device: Int, generation: Int)
    case power(adapter: Int, on: Bool)
    case subscribe(central: Int, generation: Int)
    case unsubscribe(central: Int, generation: Int)
  }

  struct Job: Comparable {
    var time: Double
    var order: UInt64
    var work: Work

    static func < (lhs: Job, rhs: Job) -> Bool {
      (lhs.time, lhs.order) < (rhs.time, rhs.order)
    }
  }

  let world: SimulatedWorld
  var adapters: [AdapterInfo]
  var devices: [SimulatedDevice] = []
  /// Current address → device index.
  var byAddress: [BluetoothAddress: Int] = [:]
  var centrals: [SimulatedCentral] = []
  var jobs = Heap<Job>()
  var order: UInt64 = 0
  /// The time of the last ``advance(to:)``.
  private(set) var now: Double = 0
  var filter = DiscoveryFilter()
  /// Characteristics with an operation under way (a second one gets `in_progress`).
  var busy: Set<GATTCharacteristicID> = []
  /// The gateway's published service, and whether it is advertised.
  var service: PeripheralService?
  var advertising = false
  var readValue: [UInt8] = []
  /// Bumped when advertising starts or stops: central jobs of an older one are stale.
  var peripheralGeneration = 0
  /// Addresses handed out so far (devices' and centrals'), never twice.
  var usedAddresses: Set<BluetoothAddress> = []
  /// Counters for benchmarks and logs.
  var counters = Counters()

  /// What the world has done so far.
  struct Counters: Sendable, Hashable {
    var advertisements = 0
    var notifications = 0
    var rotations = 0
    var textsReceivedByCentrals = 0
    var oversizedChunks = 0
    var connections = 0
    var writes = 0
  }

  /// Builds the world: devices with their first addresses, adapters in their initial state,
  /// the first advertisement of each device spread over its interval.
  init(world: SimulatedWorld) {
    self.world = world
    adapters = world.adapters.map {
      AdapterInfo(
        id: $0.id, address: nil, name: "gatt2mqtt simulator", powered: $0.powered)
    }
    var index = 0
    for group in world.devices {
      for number in 0..<group.count {
        let base = group.name ?? "sim-\(group.kind.rawValue)"
        let name = group.count > 1 ? "\(base)-\(number + 1)" : base
        var device = SimulatedDevice(
          group: group, name: name,
          rng: SeededGenerator(seed: world.seed, stream: UInt64(index)))
        while usedAddresses.contains(device.address) { device.address = device.newAddress() }
        usedAddresses.insert(device.address)
        byAddress[device.address] = index
        let interval = group.advertisingInterval ?? world.advertisingInterval
        let first = interval * device.rng.fraction()
        devices.append(device)
        schedule(.advertise(device: index), at: first)
        if group.rotate > 0 { schedule(.rotate(device: index), at: group.rotate) }
        index += 1
      }
    }
    var rng = SeededGenerator(seed: world.seed, stream: 1 << 32)
    for group in world.centrals {
      for _ in 0..<group.count {
        var address: BluetoothAddress
        repeat {
          var bytes = (0..<6).map { _ in UInt8.random(in: 0...255, using: &rng) }
          bytes[0] |= 0xC0
          address = BluetoothAddress(bytes: bytes) ?? SimulatedDevice.zeroAddress
        } while usedAddresses.contains(address)
        usedAddresses.insert(address)
        centrals.append(SimulatedCentral(address: address, group: group))
      }
    }
    for (number, adapter) in world.adapters.enumerated() where adapter.powerCycleEvery > 0 {
      schedule(.power(adapter: number, on: false), at: adapter.powerCycleEvery)
    }
  }

  /// Schedules `work` at `time` (seconds).
  mutating func schedule(_ work: Work, at time: Double) {
    order += 1
    jobs.insert(Job(time: time, order: order, work: work))
  }

  /// When the next scheduled work is due, if any.
  var nextDue: Double? { jobs.min?.time }

  /// Runs everything due up to `time`, in time order.
  /// - Parameters:
  ///   - time: seconds since the world began (never goes back).
  ///   - limit: Stop once this many effects happened (a job's effects all count; what is
  ///     still due runs at the next call).
  /// - Returns: What happened, in order.
  mutating func advance(to time: Double, limit: Int = .max) -> [Effect] {
    now = max(now, time)
    var effects: [Effect] = []
    while effects.count < limit, let job = jobs.min, job.time <= now {
      _ = jobs.removeMin()
      run(job.work, at: job.time, into: &effects)
    }
    return effects
  }

  /// Whether any powered adapter is discovering.
  var discovering: Bool { adapters.contains { $0.powered && $0.discovering } }
  /// Whether any adapter is powered.
  var powered: Bool { adapters.contains { $0.powered } }

  private mutating func run(_ work: Work, at time: Double, into effects: inout [Effect]) {
    switch work {
    case .advertise(let index): advertise(index, at: time, into: &effects)
    case .rotate(let index): rotate(index, at: time, into: &effects)
    case .notify(let index, let generation):
      notify(index, generation: generation, at: time, into: &effects)
    case .transfer(let index, let generation):
      transfer(index, generation: generation, at: time, into: &effects)
    case .resolve(let index, let generation):
      guard devices[index].connected, devices[index].generation == generation else { return }
      effects.append(.central(.servicesResolved(devices[index].address, devices[index].tree)))
    case .drop(let index, let generation):
      guard devices[index].connected, devices[index].generation == generation else { return }
      effects += dropLink(index)
    case .power(let adapter, let on):
      effects += setPowered(adapter: adapter, on)
      let description = world.adapters[adapter]
      schedule(
        .power(adapter: adapter, on: !on),
        at: time + (on ? description.powerCycleEvery : description.offFor))
    case .subscribe(let central, let generation):
      effects += centralSubscribes(central, generation: generation, at: time)
    case .unsubscribe(let central, let generation):
      effects += centralUnsubscribes(central, generation: generation, at: time)
    }
  }

  private mutating func advertise(_ index: Int, at time: Double, into effects: inout [Effect]) {
    let interval = devices[index].group.advertisingInterval ?? world.advertisingInterval
    schedule(.advertise(device: index), at: time + interval)
    if devices[index].connected {
      // A connected peripheral usually stops advertising; its RSSI comes from the link.
      let rssi = devices[index].advertisement().rssi ?? devices[index].group.rssi
      effects.append(.central(.connectionRSSI(devices[index].address, rssi: rssi)))
      return
    }
    guard discovering else { return }
    let advertisement = devices[index].advertisement()
    if !filter.serviceUUIDs.isEmpty,
      Set(filter.serviceUUIDs).isDisjoint(with: advertisement.serviceUUIDs)
    {
      return
    }
    if let floor = filter.rssiFloor, let rssi = advertisement.rssi, rssi < floor { return }
    counters.advertisements += 1
    if devices[index].known {
      effects.append(.central(.deviceUpdated(advertisement)))
    } else {
      devices[index].known = true
      effects.append(.central(.deviceAppeared(advertisement)))
    }
  }

  private mutating func rotate(_ index: Int, at time: Double, into effects: inout [Effect]) {
    schedule(.rotate(device: index), at: time + devices[index].group.rotate)
    // A device keeps its address while a link or a connection attempt uses it.
    guard !devices[index].connected, !devices[index].connecting else { return }
    let old = devices[index].address
    var address = devices[index].newAddress()
    while usedAddresses.contains(address) { address = devices[index].newAddress() }
    // Old addresses may come back only after they left the set; keep it bounded.
    usedAddresses.remove(old)
    usedAddresses.insert(address)
    byAddress[old] = nil
    byAddress[address] = index
    devices[index].address = address
    devices[index].generation += 1
    counters.rotations += 1
    if devices[index].known {
      devices[index].known = false
      effects.append(.central(.deviceRemoved(old)))
    }
  }

  private mutating func notify(
    _ index: Int, generation: Int, at time: Double, into effects: inout [Effect]
  ) {
    guard devices[index].connected, devices[index].notifyGeneration == generation else { return }
    let group = devices[index].group
    let characteristic: GATTCharacteristicID
    let value: [UInt8]
    switch group.kind {
    case .heartRate:
      guard devices[index].notifying.contains(SimulatedDevice.UUIDs.heartRateMeasurement) else {
        return
      }
      characteristic = id(
        index, SimulatedDevice.UUIDs.heartRate, SimulatedDevice.UUIDs.heartRateMeasurement)
      value = devices[index].nextHeartRate()
    case .battery:
      guard devices[index].notifying.contains(SimulatedDevice.UUIDs.batteryLevel) else { return }
      characteristic = id(index, SimulatedDevice.UUIDs.battery, SimulatedDevice.UUIDs.batteryLevel)
      value = devices[index].nextBattery()
    default:
      return
    }
    counters.notifications += 1
    effects.append(.central(.notification(characteristic, value)))
    schedule(.notify(device: index, generation: generation), at: time + 1 / group.notifyRate)
  }

  private mutating func transfer(
    _ index: Int, generation: Int, at time: Double, into effects: inout [Effect]
  ) {
    let characteristic = GATTBridge.defaultTransferCharacteristic
    guard devices[index].connected, devices[index].notifyGeneration == generation,
      devices[index].notifying.contains(characteristic)
    else { return }
    let target = id(index, GATTBridge.defaultTransferService, characteristic)
    for chunk in devices[index].transferChunks {
      counters.notifications += 1
      effects.append(.central(.notification(target, chunk)))
    }
    let interval = devices[index].group.textInterval
    if interval > 0 {
      schedule(.transfer(device: index, generation: generation), at: time + interval)
    }
  }

  /// The characteristic id of a device's characteristic at its current address.
  func id(_ index: Int, _ service: BluetoothUUID, _ characteristic: BluetoothUUID)
    -> GATTCharacteristicID
  {
    GATTCharacteristicID(
      address: devices[index].address, service: service, characteristic: characteristic)
  }
}
