/// Which devices the gateway connects to by itself (`bluetooth.connect.*`): listed addresses,
/// devices whose name matches a pattern, devices advertising one of some service UUIDs — never
/// an excluded address.
///
/// Requests (`<dev>/connection/set`, `device/connect`) add devices on top of the policy, and
/// a `disconnected` request overrides it until the next `connected` request.
public struct ConnectionPolicy: Sendable, Hashable {
  /// Devices to connect to, whether or not their advertisements match anything else.
  public var addresses: Set<BluetoothAddress>
  /// Device-name patterns.
  public var names: [NamePattern]
  /// Advertised service UUIDs.
  public var uuids: Set<BluetoothUUID>
  /// Devices the policy never selects, whatever else matches them (a listed address too).
  public var excluded: Set<BluetoothAddress>

  /// Makes a policy; the default connects to nothing.
  ///
  /// - Parameters:
  ///   - addresses: Devices to connect to.
  ///   - names: Device-name patterns.
  ///   - uuids: Advertised service UUIDs.
  ///   - excluded: Devices never selected.
  public init(
    addresses: Set<BluetoothAddress> = [], names: [NamePattern] = [],
    uuids: Set<BluetoothUUID> = [], excluded: Set<BluetoothAddress> = []
  ) {
    self.addresses = addresses
    self.names = names
    self.uuids = uuids
    self.excluded = excluded
  }

  /// Whether the policy selects a device by its address alone.
  ///
  /// - Parameter address: The device's address.
  /// - Returns: Whether it is listed.
  public func selects(_ address: BluetoothAddress) -> Bool {
    addresses.contains(address) && !excluded.contains(address)
  }

  /// Whether the policy selects the device of an advertisement.
  ///
  /// - Parameter advertisement: The advertisement.
  /// - Returns: Whether to connect to the device.
  public func selects(_ advertisement: Advertisement) -> Bool {
    if excluded.contains(advertisement.address) { return false }
    if addresses.contains(advertisement.address) { return true }
    if !uuids.isEmpty, advertisement.serviceUUIDs.contains(where: { uuids.contains($0) }) {
      return true
    }
    if !names.isEmpty, let name = advertisement.nameText {
      return names.contains { $0.matches(name) }
    }
    return false
  }
}
