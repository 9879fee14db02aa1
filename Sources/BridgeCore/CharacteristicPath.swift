/// One characteristic of one device as the topics address it: `<dev>/gatt/<svc>/<chr>`.
public struct CharacteristicPath: Sendable, Hashable, CustomStringConvertible {
  /// The device.
  public var device: DeviceID
  /// The service's UUID.
  public var service: BluetoothUUID
  /// The characteristic's UUID.
  public var characteristic: BluetoothUUID

  /// Makes a path.
  ///
  /// - Parameters:
  ///   - device: The device.
  ///   - service: The service's UUID.
  ///   - characteristic: The characteristic's UUID.
  public init(device: DeviceID, service: BluetoothUUID, characteristic: BluetoothUUID) {
    self.device = device
    self.service = service
    self.characteristic = characteristic
  }

  /// `<dev>/gatt/<svc>/<chr>`, for logs.
  public var description: String {
    "\(device)/gatt/\(service.topicSegment)/\(characteristic.topicSegment)"
  }
}
