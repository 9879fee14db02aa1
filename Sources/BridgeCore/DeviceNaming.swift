/// How devices get their ids, the `<dev>` level of their topics (TOPICS.md "Names"): the
/// friendly name configured for the address (`devices.<address>.name`, or given by
/// `device/rename`), otherwise the address without colons (`A4C1381E29DF`). The connection half
/// names its links the same way (``GATTBridge/name(of:)``), so both halves agree.
public struct DeviceNaming: Sendable, Hashable {
  /// Friendly names by address (`devices.<address>.name`, renames).
  public var friendlyNames: [BluetoothAddress: DeviceID]

  /// Makes a naming policy.
  ///
  /// - Parameter friendlyNames: Configured friendly names by address.
  public init(friendlyNames: [BluetoothAddress: DeviceID] = [:]) {
    self.friendlyNames = friendlyNames
  }

  /// A device's id.
  ///
  /// - Parameter address: The device's address.
  /// - Returns: The id.
  public func id(for address: BluetoothAddress) -> DeviceID {
    friendlyNames[address] ?? DeviceID(address: address)
  }
}
