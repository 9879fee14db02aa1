import BridgeCore

/// What the kernel's advertising reports said of each device so far, as the central's
/// ``CentralEvent/deviceAppeared(_:)`` and ``CentralEvent/deviceUpdated(_:)`` events carry it
/// when scanning through the management socket (``BlueZCentralConfiguration/ScanMethod/management``).
/// Pure.
///
/// A report carries what one advertisement (with its scan response) said; the device's state
/// follows bluetoothd's rules for `DuplicateData` discovery, so that both scan methods publish
/// the same thing: manufacturer and service data are replaced by a report that carries any (a
/// scan response without them leaves them), service UUIDs accumulate (up to
/// ``maxServiceUUIDs``: past it the first seen of those the last report did not carry go, where
/// bluetoothd keeps them all), a complete name replaces
/// a shortened one and is not replaced by one, the transmit power stays until another is
/// advertised; the RSSI is each report's. BR/EDR reports are ignored.
struct AdvertisementReports: Sendable {
  private struct Device: Sendable {
    var advertisement: Advertisement
    var nameComplete: Bool
    /// The report count when it was last heard (for eviction).
    var heard: UInt64
    /// Whether an event about it was delivered (the first one is `deviceAppeared`).
    var announced = false
  }

  /// The most devices kept; beyond it the longest-unheard tenth is forgotten (heard again, a
  /// device appears anew).
  let maxDevices: Int
  /// The most service UUIDs one device's entry keeps (the latest; a 31-byte advertisement and
  /// its scan response carry at most 28 16-bit ones).
  static let maxServiceUUIDs = 64
  private var devices: [BluetoothAddress: Device] = [:]
  private var reports: UInt64 = 0
  /// Devices forgotten to stay within ``maxDevices``.
  private(set) var evicted = 0

  /// Keeps at most `maxDevices` devices.
  init(maxDevices: Int) {
    self.maxDevices = max(1, maxDevices)
  }

  /// The devices kept now.
  var count: Int { devices.count }

  /// Applies one report.
  ///
  /// - Parameters:
  ///   - report: The report.
  ///   - filter: The discovery filter: a report weaker than its RSSI floor, or of a device that
  ///     advertised none of its service UUIDs (in its UUIDs or service data), is not reported
  ///     (the device's state is kept).
  /// - Returns: The event to deliver, or `nil`: `deviceAppeared` for the first report of a
  ///   device that passes the filter, `deviceUpdated` for each later one.
  mutating func apply(_ report: ManagementPacket.Report, filter: DiscoveryFilter) -> CentralEvent? {
    guard let type = report.addressType else { return nil }
    reports += 1
    let fields = AdvertisingFields(report.data)
    // A known device is changed where it lies (one look-up, nothing copied).
    if let index = devices.index(forKey: report.address) {
      return Self.update(&devices.values[index], type, report, fields, reports, filter)
    }
    var device = Device(
      advertisement: Advertisement(address: report.address, addressType: type),
      nameComplete: false, heard: 0)
    let event = Self.update(&device, type, report, fields, reports, filter)
    devices[report.address] = device
    evictIfNeeded()
    return event
  }

  private static func update(
    _ device: inout Device, _ type: Advertisement.AddressType, _ report: ManagementPacket.Report,
    _ fields: AdvertisingFields, _ heard: UInt64, _ filter: DiscoveryFilter
  ) -> CentralEvent? {
    device.heard = heard
    device.advertisement.addressType = type
    device.advertisement.rssi = report.rssi
    if let name = fields.name, fields.nameComplete || !device.nameComplete {
      device.advertisement.name = name
      device.nameComplete = fields.nameComplete
    }
    if let power = fields.txPower { device.advertisement.txPower = power }
    if !fields.manufacturerData.isEmpty {
      device.advertisement.manufacturerData = fields.manufacturerData
    }
    if !fields.serviceData.isEmpty { device.advertisement.serviceData = fields.serviceData }
    for uuid in fields.serviceUUIDs where !device.advertisement.serviceUUIDs.contains(uuid) {
      device.advertisement.serviceUUIDs.append(uuid)
    }
    // UUIDs add up across reports, but a device that keeps advertising new ones (a fault, or
    // a transmitter in radio range doing it on purpose) must not grow its entry, its
    // comparisons and its payload without end: the first seen of those this report does not
    // carry go (what the device advertises now stays, for the filter and connection policy).
    var excess = device.advertisement.serviceUUIDs.count - Self.maxServiceUUIDs
    if excess > 0 {
      device.advertisement.serviceUUIDs.removeAll { uuid in
        guard excess > 0, !fields.serviceUUIDs.contains(uuid) else { return false }
        excess -= 1
        return true
      }
    }
    let passes = Self.passes(device.advertisement, filter)
    let first = passes && !device.announced
    if passes { device.announced = true }
    guard passes else { return nil }
    return first ? .deviceAppeared(device.advertisement) : .deviceUpdated(device.advertisement)
  }

  /// Forgets every device (the stack was lost).
  mutating func removeAll() {
    devices.removeAll()
  }

  private static func passes(_ advertisement: Advertisement, _ filter: DiscoveryFilter) -> Bool {
    // As the kernel's own filter: an RSSI the controller could not measure (127) fails a floor.
    if let floor = filter.rssiFloor, let rssi = advertisement.rssi,
      !Advertisement.measurableRSSI.contains(rssi) || rssi < floor
    {
      return false
    }
    guard !filter.serviceUUIDs.isEmpty else { return true }
    return filter.serviceUUIDs.contains {
      advertisement.serviceUUIDs.contains($0) || advertisement.serviceData[$0] != nil
    }
  }

  private mutating func evictIfNeeded() {
    guard devices.count > maxDevices else { return }
    let target = max(0, maxDevices - max(1, maxDevices / 10))
    let oldest = devices.sorted { $0.value.heard < $1.value.heard }.prefix(devices.count - target)
    for (address, _) in oldest { devices[address] = nil }
    evicted += oldest.count
  }
}
