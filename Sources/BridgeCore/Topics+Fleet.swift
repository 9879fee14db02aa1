extension Topics {
  /// `<base>/<dev>/owner`: the device's owner claim (``OwnershipClaim``), retained; an empty
  /// payload clears it.
  ///
  /// - Parameter device: The device.
  /// - Returns: The topic.
  public func owner(_ device: DeviceID) -> TopicName {
    TopicName(unchecked: "\(base)/\(device.rawValue)/owner")
  }

  /// `<base>/+/owner`: every device's owner claim.
  public var ownerFilter: TopicFilter { TopicFilter(unchecked: "\(base)/+/owner") }

  /// `<base>/bridge/+/state`: every gateway's state, this one's included.
  public var fleetStateFilter: TopicFilter { TopicFilter(unchecked: "\(base)/bridge/+/state") }

  /// `<base>/bridge/names/<ADDRESS>`: a device's name given by `device/rename`, retained, the
  /// same for every gateway of the fleet; empty when cleared.
  ///
  /// - Parameter address: The device.
  /// - Returns: The topic.
  public func deviceName(_ address: BluetoothAddress) -> TopicName {
    TopicName(unchecked: "\(base)/bridge/names/\(DeviceID(address: address).rawValue)")
  }

  /// `<base>/bridge/names/+`: every device's name.
  public var namesFilter: TopicFilter { TopicFilter(unchecked: "\(base)/bridge/names/+") }

  /// What a fleet message is about.
  public enum FleetMessage: Sendable, Hashable {
    /// A device's owner claim.
    case owner(BluetoothAddress)
    /// A gateway's state.
    case state(GatewayID)
    /// A device's name.
    case name(BluetoothAddress)
  }

  /// Reads a topic of ``ownerFilter``, ``fleetStateFilter`` or ``namesFilter``.
  ///
  /// - Parameter topic: The topic of a received message.
  /// - Returns: What it is about; `nil` for any other topic, a device level that is not an
  ///   address id, or a gateway level that is not a gateway id.
  public func parseFleet(_ topic: String) -> FleetMessage? {
    guard topic.hasPrefix(base), topic.utf8.count > base.utf8.count + 1 else { return nil }
    let rest = topic.dropFirst(base.count)
    guard rest.first == "/" else { return nil }
    let levels = rest.dropFirst().split(separator: "/", omittingEmptySubsequences: false)
    if levels.count == 2, levels[1] == "owner",
      let address = try? BluetoothAddress(String(levels[0])),
      DeviceID(address: address).rawValue == levels[0]
    {
      return .owner(address)
    }
    if levels.count == 3, levels[0] == "bridge", levels[1] == "names",
      let address = BluetoothAddress(compact: levels[2].utf8)
    {
      return .name(address)
    }
    if levels.count == 3, levels[0] == "bridge", levels[2] == "state",
      GatewayID.isValid(String(levels[1]))
    {
      return .state(GatewayID(String(levels[1])))
    }
    return nil
  }

  /// The device a device-plane topic (`<base>/<dev>/…`) is about, when `<dev>` is an address
  /// id; `nil` for bridge topics and any other topic.
  ///
  /// - Parameter topic: A topic this gateway publishes.
  /// - Returns: The device's address.
  public func deviceAddress(of topic: TopicName) -> BluetoothAddress? {
    let raw = topic.rawValue.utf8
    let baseCount = base.utf8.count
    guard raw.count > baseCount + 13, raw.starts(with: base.utf8) else { return nil }
    let start = raw.index(raw.startIndex, offsetBy: baseCount)
    guard raw[start] == UInt8(ascii: "/") else { return nil }
    let levelStart = raw.index(after: start)
    let levelEnd = raw.index(levelStart, offsetBy: 12)
    guard levelEnd == raw.endIndex || raw[levelEnd] == UInt8(ascii: "/") else { return nil }
    return BluetoothAddress(compact: raw[levelStart..<levelEnd])
  }
}
