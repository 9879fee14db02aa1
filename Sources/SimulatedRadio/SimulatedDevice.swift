import BridgeCore

/// One simulated peripheral: its address, advertisement, GATT tree and values.
struct SimulatedDevice {
  /// UUIDs the simulated peripherals use (the lab zoo's, so topics look the same).
  enum UUIDs {
    static let battery = BluetoothUUID(uuid16: 0x180F)
    static let batteryLevel = BluetoothUUID(uuid16: 0x2A19)
    static let heartRate = BluetoothUUID(uuid16: 0x180D)
    static let heartRateMeasurement = BluetoothUUID(uuid16: 0x2A37)
    static let bodySensorLocation = BluetoothUUID(uuid16: 0x2A38)
    static let deviceInformation = BluetoothUUID(uuid16: 0x180A)
    static let manufacturerName = BluetoothUUID(uuid16: 0x2A29)
    static let actuator = uuid("5a1d0000-6a63-4b3c-9c5e-3b5c7d2a0001")
    static let actuatorCommand = uuid("5a1d0001-6a63-4b3c-9c5e-3b5c7d2a0001")
    static let actuatorStream = uuid("5a1d0002-6a63-4b3c-9c5e-3b5c7d2a0001")
    static let actuatorStatus = uuid("5a1d0003-6a63-4b3c-9c5e-3b5c7d2a0001")
    static let cccd = BluetoothUUID(uuid16: 0x2902)
    static let bthome = BluetoothUUID(uuid16: 0xFCD2)

    private static func uuid(_ text: String) -> BluetoothUUID {
      // Literals above are valid UUIDs; a typo is a programmer error.
      guard let value = try? BluetoothUUID(text) else { preconditionFailure("bad UUID \(text)") }
      return value
    }
  }

  /// The manufacturer name every connectable simulated device reports (180A/2A29).
  static let manufacturer = Array("gatt2mqtt simulator".utf8)
  /// Company id of the beacons' manufacturer data (0xFFFF: for tests).
  static let beaconCompany: UInt16 = 0xFFFF

  let group: SimulatedWorld.DeviceGroup
  let name: String
  var address: BluetoothAddress
  var rng: SeededGenerator
  /// Advertised since discovery began (a later one is an update), or removed.
  var known = false
  var connected = false
  var connecting = false
  /// Bumped when the link or the address changes: jobs of an older generation are stale.
  var generation = 0
  /// Bumped at every notify switch: notification jobs of an older one are stale.
  var notifyGeneration = 0
  var notifying: Set<BluetoothUUID> = []
  var values: [BluetoothUUID: [UInt8]] = [:]
  var rssi: Int
  var sequence: UInt32 = 0
  var heartRate = 72
  /// Heart-rate measurements sent so far (``SimulatedWorld/DeviceGroup/numbered``).
  var measurements: UInt16 = 0
  var battery = 100
  /// A thermometer's temperature in hundredths of a degree Celsius.
  var centidegrees = 2150

  init(group: SimulatedWorld.DeviceGroup, name: String, rng: SeededGenerator) {
    self.group = group
    self.name = name
    self.rng = rng
    rssi = group.rssi
    address = Self.zeroAddress
    address = newAddress()
    values[UUIDs.manufacturerName] = Self.manufacturer
    values[UUIDs.bodySensorLocation] = [0x01]
    values[UUIDs.actuatorStatus] = [0x00]
  }

  var connectable: Bool { group.kind != .beacon && group.kind != .thermometer }
  var addressType: Advertisement.AddressType { group.rotate > 0 ? .random : .public }

  /// A fresh address from the device's own generator: public for fixed devices, resolvable
  /// private (top bits `01`, as phones and trackers rotate them) for rotating ones.
  mutating func newAddress() -> BluetoothAddress {
    var bytes = (0..<6).map { _ in UInt8.random(in: 0...255, using: &rng) }
    if group.rotate > 0 {
      bytes[0] = bytes[0] & 0x3F | 0x40
    } else {
      bytes[0] = 0x5A
    }
    return BluetoothAddress(bytes: bytes) ?? Self.zeroAddress
  }

  /// 00:00:00:00:00:00, a placeholder no device keeps.
  static let zeroAddress: BluetoothAddress = {
    guard let address = BluetoothAddress(bytes: [0, 0, 0, 0, 0, 0]) else {
      preconditionFailure("six bytes make an address")
    }
    return address
  }()

  /// The primary service this device advertises.
  var advertisedService: BluetoothUUID? {
    switch group.kind {
    case .battery: UUIDs.battery
    case .heartRate: UUIDs.heartRate
    case .actuator: UUIDs.actuator
    case .transfer: GATTBridge.defaultTransferService
    case .beacon, .thermometer: nil
    }
  }

  /// The next advertisement: RSSI wanders around the mean; beacons count up.
  mutating func advertisement() -> Advertisement {
    rssi = min(-20, max(-110, group.rssi + Int.random(in: -6...6, using: &rng)))
    sequence &+= 1
    var advertisement = Advertisement(
      address: address, addressType: addressType, name: Array(name.utf8), rssi: rssi)
    if let service = advertisedService { advertisement.serviceUUIDs = [service] }
    switch group.kind {
    case .beacon:
      advertisement.manufacturerData = [
        Self.beaconCompany: withUnsafeBytes(of: sequence.littleEndian) { Array($0) }
      ]
    case .battery:
      advertisement.txPower = -8
      advertisement.serviceData = [UUIDs.battery: [UInt8(battery)]]
    case .thermometer:
      advertisement.serviceData = [UUIDs.bthome: bthomeMeasurement()]
    default:
      advertisement.txPower = -8
    }
    return advertisement
  }

  /// The next BTHome v2 service data of a thermometer: the temperature (centi-degrees, around
  /// 21.5 °C) takes a step of up to ±0.2 °C, the humidity follows it.
  mutating func bthomeMeasurement() -> [UInt8] {
    centidegrees = min(3500, max(500, centidegrees + Int.random(in: -20...20, using: &rng)))
    let humidity = UInt16(clamping: 5000 - (centidegrees - 2150) * 2)
    let temperature = UInt16(bitPattern: Int16(clamping: centidegrees))
    return [
      0x40, 0x00, UInt8(truncatingIfNeeded: sequence), 0x01, UInt8(battery),
      0x02, UInt8(temperature & 0xFF), UInt8(temperature >> 8),
      0x03, UInt8(humidity & 0xFF), UInt8(humidity >> 8),
    ]
  }

  /// The GATT tree the device offers once connected.
  var tree: GATTTree {
    let information = GATTTree.Service(
      uuid: UUIDs.deviceInformation,
      characteristics: [.init(uuid: UUIDs.manufacturerName, flags: ["read"])])
    let notifying = [UUIDs.cccd]
    var services: [GATTTree.Service]
    switch group.kind {
    case .battery:
      services = [
        .init(
          uuid: UUIDs.battery,
          characteristics: [
            .init(uuid: UUIDs.batteryLevel, flags: ["read", "notify"], descriptors: notifying)
          ])
      ]
    case .heartRate:
      services = [
        .init(
          uuid: UUIDs.heartRate,
          characteristics: [
            .init(uuid: UUIDs.heartRateMeasurement, flags: ["notify"], descriptors: notifying),
            .init(uuid: UUIDs.bodySensorLocation, flags: ["read"]),
          ])
      ]
    case .actuator:
      services = [
        .init(
          uuid: UUIDs.actuator,
          characteristics: [
            .init(uuid: UUIDs.actuatorCommand, flags: ["write"]),
            .init(uuid: UUIDs.actuatorStream, flags: ["write-without-response"]),
            .init(uuid: UUIDs.actuatorStatus, flags: ["read", "notify"], descriptors: notifying),
          ])
      ]
    case .transfer:
      services = [
        .init(
          uuid: GATTBridge.defaultTransferService,
          characteristics: [
            .init(
              uuid: GATTBridge.defaultTransferCharacteristic, flags: ["read", "notify"],
              descriptors: notifying)
          ])
      ]
    case .beacon, .thermometer:
      services = []
    }
    return GATTTree(services: services + [information], mtu: group.mtu)
  }

  /// The characteristic's description in the tree, if the device has it.
  func characteristic(_ id: GATTCharacteristicID) -> GATTTree.Characteristic? {
    tree.characteristic(service: id.service, characteristic: id.characteristic)
  }

  /// The current value of a readable characteristic.
  func value(of characteristic: BluetoothUUID) -> [UInt8] {
    switch characteristic {
    case UUIDs.batteryLevel: [UInt8(battery)]
    case GATTBridge.defaultTransferCharacteristic: Array(group.text.utf8)
    default: values[characteristic] ?? []
    }
  }

  /// The next heart-rate measurement (flags 0: 8-bit BPM), BPM wandering between 50 and 180;
  /// numbered (flags 0x08), with its number as Energy Expended (little-endian, wrapping).
  mutating func nextHeartRate() -> [UInt8] {
    heartRate = min(180, max(50, heartRate + Int.random(in: -3...3, using: &rng)))
    guard group.numbered else { return [0x00, UInt8(heartRate)] }
    defer { measurements &+= 1 }
    return [0x08, UInt8(heartRate), UInt8(measurements & 0xFF), UInt8(measurements >> 8)]
  }

  /// The next battery level: one percent less, back to 100 after 5.
  mutating func nextBattery() -> [UInt8] {
    battery = battery <= 5 ? 100 : battery - 1
    return [UInt8(battery)]
  }

  /// The text as transfer notifications: MTU−3-byte chunks, then `EOM`.
  var transferChunks: [[UInt8]] {
    let chunker = TransferChunker(text: Array(group.text.utf8), mtu: group.mtu)
    return (0..<chunker.count).map { chunker.notification(at: $0) }
  }
}
