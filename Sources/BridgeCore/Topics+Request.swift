extension Topics {
  /// An inbound topic the gateway serves, recognised by ``Topics/parseRequest(_:)``.
  public enum Request: Sendable, Hashable {
    /// `<base>/bridge/<gw>/request/<verb>`; the verb may have several levels (`device/connect`).
    case bridge(verb: String)
    /// `<base>/bridge/<gw>/peripheral/text/set`.
    case peripheralText
    /// `<base>/bridge/request/<verb>`: a request to every gateway of the fleet.
    case fleet(verb: String)
    /// `<base>/bridge/peripheral/text/set`: the fleet's text.
    case fleetPeripheralText
    /// `<base>/<dev>/connection/set`.
    case connectionSet(DeviceID)
    /// `<base>/<dev>/gatt/<svc>/<chr>/get`.
    case get(CharacteristicPath)
    /// `<base>/<dev>/gatt/<svc>/<chr>/set`.
    case set(CharacteristicPath)
    /// `<base>/<dev>/gatt/<svc>/<chr>/notify`.
    case notify(CharacteristicPath)

    /// The device a device-plane request is about; `nil` for bridge and peripheral requests.
    public var device: DeviceID? {
      switch self {
      case .bridge, .peripheralText, .fleet, .fleetPeripheralText: nil
      case .connectionSet(let device): device
      case .get(let path), .set(let path), .notify(let path): path.device
      }
    }
  }

  /// Recognises an inbound topic of this gateway.
  ///
  /// Bridge topics of other gateways, outbound topics, and device topics with a device id that is
  /// not a valid friendly name or UUID levels that do not parse give `nil`. A device level that
  /// is an address in another spelling (`a4c1381e29df`, `A4:C1:38:1E:29:DF`) gives the device's
  /// canonical id (`A4C1381E29DF`). UUID levels are
  /// accepted in any form ``BluetoothUUID/init(_:)`` parses, of either case; the other levels
  /// compare byte for byte.
  ///
  /// - Parameter topic: A received topic.
  /// - Returns: The request, or `nil` when the topic is not one the gateway serves.
  public func parseRequest(_ topic: TopicName) -> Request? {
    guard let rest = levelsBelowBase(topic) else { return nil }
    let start = rest.startIndex
    let count = rest.count

    if rest[start].hasSameBytes(as: "bridge") {
      guard count >= 3 else { return nil }
      if rest[start + 1].hasSameBytes(as: "request") {
        return .fleet(verb: rest[(start + 2)...].joined(separator: "/"))
      }
      if count == 4,
        rest[(start + 1)...].elementsEqual(["peripheral", "text", "set"], by: Self.sameBytes)
      {
        return .fleetPeripheralText
      }
      guard rest[start + 1].hasSameBytes(as: gateway.rawValue) else { return nil }
      let tail = rest[(start + 2)...]
      if tail[tail.startIndex].hasSameBytes(as: "request"), tail.count >= 2 {
        return .bridge(verb: tail.dropFirst().joined(separator: "/"))
      }
      if tail.count == 3, tail.elementsEqual(["peripheral", "text", "set"], by: Self.sameBytes) {
        return .peripheralText
      }
      return nil
    }

    let end = rest.endIndex
    if count >= 3, rest[(end - 2)...].elementsEqual(["connection", "set"], by: Self.sameBytes) {
      return Self.deviceID(rest[..<(end - 2)]).map { .connectionSet($0) }
    }
    guard count >= 5, rest[end - 4].hasSameBytes(as: "gatt"),
      let device = Self.deviceID(rest[..<(end - 4)]),
      let service = try? BluetoothUUID(String(rest[end - 3])),
      let characteristic = try? BluetoothUUID(String(rest[end - 2]))
    else { return nil }
    let path = CharacteristicPath(
      device: device, service: service, characteristic: characteristic)
    let verb = rest[end - 1]
    if verb.hasSameBytes(as: "get") { return .get(path) }
    if verb.hasSameBytes(as: "set") { return .set(path) }
    if verb.hasSameBytes(as: "notify") { return .notify(path) }
    return nil
  }

  /// Why a topic shaped like a device-plane request of this gateway's base
  /// (`<base>/<dev>/connection/set`, `<base>/<dev>/gatt/<svc>/<chr>/get|set|notify`) is not one
  /// that ``parseRequest(_:)`` accepts, so that it can be answered instead of ignored.
  ///
  /// - Parameter topic: A received topic.
  /// - Returns: What is wrong (quoting at most 64 characters of the level), or `nil` for a topic
  ///   that parses or that is not shaped like a device-plane request.
  public func deviceRequestProblem(_ topic: TopicName) -> String? {
    guard parseRequest(topic) == nil, let rest = levelsBelowBase(topic) else { return nil }
    let end = rest.endIndex
    guard !rest[rest.startIndex].hasSameBytes(as: "bridge") else { return nil }
    func quoted(_ level: Substring) -> String {
      level.count > 64 ? String(level.prefix(64)) + "…" : String(level)
    }
    if rest.count >= 3, rest[(end - 2)...].elementsEqual(["connection", "set"], by: Self.sameBytes)
    {
      return "'\(quoted(rest[end - 3]))' is not a device id"
    }
    guard rest.count >= 5, rest[end - 4].hasSameBytes(as: "gatt"),
      ["get", "set", "notify"].contains(where: { rest[end - 1].hasSameBytes(as: $0) })
    else { return nil }
    if Self.deviceID(rest[..<(end - 4)]) == nil {
      return "'\(quoted(rest[end - 5]))' is not a device id"
    }
    for level in [rest[end - 3], rest[end - 2]] where (try? BluetoothUUID(String(level))) == nil {
      return "'\(quoted(level))' is not a Bluetooth UUID"
    }
    return nil
  }

  /// The levels of `topic` after this gateway's base, `nil` when it is not below the base.
  private func levelsBelowBase(_ topic: TopicName) -> ArraySlice<Substring>? {
    let levels = topic.levels
    let baseLevels = TopicRules.levels(base)
    guard levels.count > baseLevels.count,
      zip(baseLevels, levels).allSatisfy({ $0.hasSameBytes(as: $1) })
    else { return nil }
    return levels[baseLevels.count...]
  }

  private static func sameBytes(_ lhs: Substring, _ rhs: String) -> Bool {
    lhs.hasSameBytes(as: rhs)
  }

  /// The device a topic's `<dev>` levels name. One level shaped like an address in any
  /// spelling (lower case, `:` or `-` separators) names that device: its canonical id, so that
  /// requests, allow-lists and results follow the device, not the spelling.
  private static func deviceID(_ levels: ArraySlice<Substring>) -> DeviceID? {
    let text = levels.joined(separator: "/")
    if levels.count == 1, let address = try? BluetoothAddress(text) {
      return DeviceID(address: address)
    }
    return try? DeviceID(friendlyName: text)
  }
}
