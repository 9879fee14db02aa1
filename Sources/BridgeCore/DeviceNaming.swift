/// How devices get their ids, the `<dev>` level of their topics (TOPICS.md "Names").
///
/// In order: the friendly name configured for the address; with ``useAdvertisedNames``, the
/// advertised name sanitised to one topic level (``DeviceID/init(sanitizing:)``) unless another
/// device already has that id or it looks like an address id; otherwise the address without
/// colons (`A4C1381E29DF`). The id is fixed when the device is first registered.
public struct DeviceNaming: Sendable, Hashable {
  /// Configured friendly names by address (`devices.<address>.name`).
  public var friendlyNames: [BluetoothAddress: DeviceID]
  /// Whether a device without a friendly name is named after its advertised name
  /// (`devices.use_advertised_names`, default `false`).
  public var useAdvertisedNames: Bool

  /// Makes a naming policy.
  ///
  /// - Parameters:
  ///   - friendlyNames: Configured friendly names by address.
  ///   - useAdvertisedNames: Whether to name devices after their advertised names.
  public init(friendlyNames: [BluetoothAddress: DeviceID] = [:], useAdvertisedNames: Bool = false) {
    self.friendlyNames = friendlyNames
    self.useAdvertisedNames = useAdvertisedNames
  }

  /// The id for a device seen for the first time.
  ///
  /// - Parameters:
  ///   - address: The device's address.
  ///   - name: The advertised name's bytes, if any.
  ///   - isTaken: Whether another device already has an id.
  /// - Returns: The id.
  public func id(
    for address: BluetoothAddress, name: [UInt8]?, isTaken: (DeviceID) -> Bool
  ) -> DeviceID {
    if let friendly = friendlyNames[address] { return friendly }
    if useAdvertisedNames, let name {
      let candidate = DeviceID(sanitizing: name)
      if !Self.looksLikeAddressID(candidate.rawValue), !isTaken(candidate) { return candidate }
    }
    return DeviceID(address: address)
  }

  private static func looksLikeAddressID(_ id: String) -> Bool {
    id.utf8.count == 12 && id.utf8.allSatisfy { Hex.value(of: $0) != nil }
  }
}
