/// One characteristic of one remote device, as the central port addresses it: the device's
/// address, the service's UUID and the characteristic's UUID.
///
/// When a device has two services (or a service two characteristics) with the same UUID, the
/// first one in the stack's order is meant; the topics cannot tell them apart either.
public struct GATTCharacteristicID: Sendable, Hashable, CustomStringConvertible {
  /// The device's address.
  public var address: BluetoothAddress
  /// The service's UUID.
  public var service: BluetoothUUID
  /// The characteristic's UUID.
  public var characteristic: BluetoothUUID

  /// Makes an id.
  ///
  /// - Parameters:
  ///   - address: The device's address.
  ///   - service: The service's UUID.
  ///   - characteristic: The characteristic's UUID.
  public init(address: BluetoothAddress, service: BluetoothUUID, characteristic: BluetoothUUID) {
    self.address = address
    self.service = service
    self.characteristic = characteristic
  }

  /// `AA:BB:CC:DD:EE:FF/<svc>/<chr>`, for logs.
  public var description: String {
    "\(address)/\(service.topicSegment)/\(characteristic.topicSegment)"
  }
}
