/// What the gateway asks the Bluetooth stack to report while discovering (BlueZ
/// `SetDiscoveryFilter`): LE transport, duplicate data on so RSSI can be followed.
///
/// The stack applies it as a first, coarse cut; ``AdvertisementFilter`` decides what is published.
public struct DiscoveryFilter: Sendable, Hashable {
  /// Report only devices advertising one of these service UUIDs (in their service UUIDs or
  /// service data); empty reports every device.
  public var serviceUUIDs: [BluetoothUUID]
  /// Report only advertisements at least this strong, in dBm; `nil` for no floor.
  public var rssiFloor: Int?
  /// Report every advertisement, not only changed ones (BlueZ `DuplicateData`), so RSSI and
  /// presence can be followed. `true` by default.
  public var duplicateData: Bool

  /// Makes a filter.
  ///
  /// - Parameters:
  ///   - serviceUUIDs: Service UUIDs, any of which a device must advertise; empty for all.
  ///   - rssiFloor: The weakest RSSI reported, in dBm.
  ///   - duplicateData: Whether every advertisement is reported.
  public init(serviceUUIDs: [BluetoothUUID] = [], rssiFloor: Int? = nil, duplicateData: Bool = true)
  {
    self.serviceUUIDs = serviceUUIDs
    self.rssiFloor = rssiFloor
    self.duplicateData = duplicateData
  }
}
