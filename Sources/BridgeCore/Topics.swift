/// The topic map of the topic contract (TOPICS.md) for one base topic and one gateway.
///
/// Every topic the gateway publishes or subscribes to comes from here; all of them are valid by
/// construction, so only the ones built from an arbitrary verb can fail.
public struct Topics: Sendable, Hashable {
  /// Why a base topic or verb is not usable.
  public typealias Error = TopicError

  /// The default `mqtt.base_topic`.
  public static let defaultBase = "gatt2mqtt"

  /// The most UTF-8 bytes a base topic may have.
  public static let maximumBaseByteCount = 1024

  /// The base topic, `<base>`.
  public let base: String
  /// This gateway, `<gw>`.
  public let gateway: GatewayID

  /// Makes the topic map.
  ///
  /// - Parameters:
  ///   - base: The base topic: non-empty levels separated by `/`, no wildcards, NUL or control
  ///     characters, not starting with `$` (reserved for the broker), at most
  ///     ``maximumBaseByteCount`` bytes.
  ///   - gateway: This gateway's id.
  /// - Throws: ``TopicError`` naming the problem with `base`.
  public init(base: String = Topics.defaultBase, gateway: GatewayID) throws(TopicError) {
    try TopicRules.validate(base, kind: .name, limit: Self.maximumBaseByteCount)
    if base.utf8.first == UInt8(ascii: "$") { throw .reservedName(base) }
    self.base = base
    self.gateway = gateway
  }

  // MARK: Bridge plane

  /// `<base>/bridge/<gw>/state`: `{"state":"online"|"offline"}`, retained, also the last will.
  public var bridgeState: TopicName { bridge("state") }
  /// `<base>/bridge/<gw>/info`: versions and configuration summary, retained.
  public var bridgeInfo: TopicName { bridge("info") }
  /// `<base>/bridge/<gw>/adapters`: the adapters and their states, retained.
  public var bridgeAdapters: TopicName { bridge("adapters") }
  /// `<base>/bridge/<gw>/devices`: the known devices, retained.
  public var bridgeDevices: TopicName { bridge("devices") }
  /// `<base>/bridge/<gw>/event`: gateway events.
  public var bridgeEvent: TopicName { bridge("event") }
  /// `<base>/bridge/<gw>/health`: rates, counters, queue depths.
  public var bridgeHealth: TopicName { bridge("health") }

  /// `<base>/bridge/<gw>/request/#`: the filter for every bridge request.
  public var bridgeRequestFilter: TopicFilter {
    TopicFilter(unchecked: "\(bridgePrefix)/request/#")
  }

  /// `<base>/bridge/<gw>/request/<verb>`.
  ///
  /// - Parameter verb: The verb, one or more levels, for example `device/connect`.
  /// - Returns: The request topic.
  /// - Throws: ``TopicError`` when the verb is not valid topic levels.
  public func bridgeRequest(verb: String) throws(TopicError) -> TopicName {
    try TopicName("\(bridgePrefix)/request/\(verb)")
  }

  /// `<base>/bridge/<gw>/response/<verb>`.
  ///
  /// - Parameter verb: The verb of the request being answered, for example `device/connect`.
  /// - Returns: The response topic.
  /// - Throws: ``TopicError`` when the verb is not valid topic levels or the topic too long.
  public func bridgeResponse(verb: String) throws(TopicError) -> TopicName {
    try TopicName("\(bridgePrefix)/response/\(verb)")
  }

  /// `<base>/bridge/request/#`: requests to every gateway of the fleet on this base topic, each
  /// answering on its own `<base>/bridge/<gw>/response/<verb>`.
  public var fleetRequestFilter: TopicFilter {
    TopicFilter(unchecked: "\(base)/bridge/request/#")
  }

  /// `<base>/bridge/peripheral/text/set`: the text every gateway of the fleet serves from its
  /// peripheral role, unless its own `<base>/bridge/<gw>/peripheral/text/set` holds one.
  public var fleetPeripheralTextSet: TopicName {
    TopicName(unchecked: "\(base)/bridge/peripheral/text/set")
  }

  /// `<base>/bridge/<gw>/request/`: what every bridge request topic starts with, including
  /// those ``parseRequest(_:)`` cannot read (an empty verb or level), which are answered on
  /// `response/invalid`.
  public var bridgeRequestPrefix: String { "\(bridgePrefix)/request/" }

  /// The longest verb answered on its own response topic, in bytes.
  public static let maximumVerbByteCount = 64

  /// Where the answer to a request with `verb` goes: `<base>/bridge/<gw>/response/<verb>`, or
  /// `<base>/bridge/<gw>/response/invalid` when the verb is empty, has an empty level, is longer
  /// than ``maximumVerbByteCount`` bytes or makes no valid topic — so that every request is
  /// answered and no request can make the gateway publish on a topic of its choosing size.
  ///
  /// - Parameter verb: The verb of the request being answered.
  /// - Returns: The response topic.
  public func bridgeResponse(answering verb: String) -> TopicName {
    if !verb.isEmpty, verb.utf8.count <= Self.maximumVerbByteCount,
      !verb.split(separator: "/", omittingEmptySubsequences: false).contains(where: \.isEmpty),
      let topic = try? bridgeResponse(verb: verb)
    {
      return topic
    }
    return bridge("response/invalid")
  }

  // MARK: Peripheral plane

  /// `<base>/bridge/<gw>/peripheral/text/set`: the text the transfer service serves (inbound).
  public var peripheralTextSet: TopicName { bridge("peripheral/text/set") }
  /// `<base>/bridge/<gw>/peripheral/state`: the peripheral's state, retained.
  public var peripheralState: TopicName { bridge("peripheral/state") }
  /// `<base>/bridge/<gw>/peripheral/event`: subscriptions and transfers.
  public var peripheralEvent: TopicName { bridge("peripheral/event") }

  // MARK: Device plane

  /// `<base>/<dev>/advertisement`.
  ///
  /// - Parameter device: The device.
  /// - Returns: The topic.
  public func advertisement(_ device: DeviceID) -> TopicName {
    self.device(device, "advertisement")
  }

  /// `<base>/<dev>/presence`, retained.
  ///
  /// - Parameter device: The device.
  /// - Returns: The topic.
  public func presence(_ device: DeviceID) -> TopicName { self.device(device, "presence") }

  /// `<base>/<dev>/availability`, retained.
  ///
  /// - Parameter device: The device.
  /// - Returns: The topic.
  public func availability(_ device: DeviceID) -> TopicName { self.device(device, "availability") }

  /// `<base>/<dev>/connection`, retained.
  ///
  /// - Parameter device: The device.
  /// - Returns: The topic.
  public func connection(_ device: DeviceID) -> TopicName { self.device(device, "connection") }

  /// `<base>/<dev>/connection/set` (inbound).
  ///
  /// - Parameter device: The device.
  /// - Returns: The topic.
  public func connectionSet(_ device: DeviceID) -> TopicName {
    self.device(device, "connection/set")
  }

  /// `<base>/<dev>/connection/result`: the outcome of each `connection/set`.
  ///
  /// - Parameter device: The device.
  /// - Returns: The topic.
  public func connectionResult(_ device: DeviceID) -> TopicName {
    self.device(device, "connection/result")
  }

  /// `<base>/<dev>/gatt`: the GATT tree, retained.
  ///
  /// - Parameter device: The device.
  /// - Returns: The topic.
  public func gatt(_ device: DeviceID) -> TopicName { self.device(device, "gatt") }

  /// `<base>/<dev>/transfer`: reassembled transfer-protocol texts.
  ///
  /// - Parameter device: The device.
  /// - Returns: The topic.
  public func transfer(_ device: DeviceID) -> TopicName { self.device(device, "transfer") }

  /// `<base>/<dev>/gatt/<svc>/<chr>`: the characteristic's value.
  ///
  /// - Parameters:
  ///   - device: The device.
  ///   - service: The service's UUID.
  ///   - characteristic: The characteristic's UUID.
  /// - Returns: The topic.
  public func value(
    _ device: DeviceID, service: BluetoothUUID, characteristic: BluetoothUUID
  ) -> TopicName {
    self.characteristic(device, service, characteristic, nil)
  }

  /// What a characteristic's sub-topic carries.
  public enum CharacteristicTopic: String, Sendable, CaseIterable {
    /// Read requests (inbound).
    case get
    /// Write requests (inbound).
    case set
    /// The desired notification state (inbound, retained).
    case notify
    /// Outcomes of reads, writes and notify changes.
    case result
  }

  /// `<base>/<dev>/gatt/<svc>/<chr>/<get|set|notify|result>`.
  ///
  /// - Parameters:
  ///   - kind: Which sub-topic.
  ///   - device: The device.
  ///   - service: The service's UUID.
  ///   - characteristic: The characteristic's UUID.
  /// - Returns: The topic.
  public func characteristic(
    _ kind: CharacteristicTopic, _ device: DeviceID, service: BluetoothUUID,
    characteristic: BluetoothUUID
  ) -> TopicName {
    self.characteristic(device, service, characteristic, kind.rawValue)
  }

  /// `<base>/<dev>/gatt/<svc>/<chr>`: the characteristic's value.
  ///
  /// - Parameter path: The characteristic.
  /// - Returns: The topic.
  public func value(_ path: CharacteristicPath) -> TopicName {
    value(path.device, service: path.service, characteristic: path.characteristic)
  }

  /// `<base>/<dev>/gatt/<svc>/<chr>/result`.
  ///
  /// - Parameter path: The characteristic.
  /// - Returns: The topic.
  public func result(_ path: CharacteristicPath) -> TopicName {
    characteristic(.result, path.device, service: path.service, characteristic: path.characteristic)
  }

  /// The filters for every device-plane request of devices whose id is one level (every
  /// address-based id): `<base>/+/connection/set` and `<base>/+/gatt/+/+/get|set|notify`.
  ///
  /// Friendly names with `/` need ``deviceRequestFilters(for:)`` in addition.
  public var deviceRequestFilters: [TopicFilter] {
    [
      TopicFilter(unchecked: "\(base)/+/connection/set"),
      TopicFilter(unchecked: "\(base)/+/gatt/+/+/get"),
      TopicFilter(unchecked: "\(base)/+/gatt/+/+/set"),
      TopicFilter(unchecked: "\(base)/+/gatt/+/+/notify"),
    ]
  }

  /// The filters for every device-plane request of one device: `<base>/<dev>/connection/set`
  /// and `<base>/<dev>/gatt/+/+/get|set|notify`.
  ///
  /// - Parameter device: The device.
  /// - Returns: Four filters.
  public func deviceRequestFilters(for device: DeviceID) -> [TopicFilter] {
    let prefix = "\(base)/\(device.rawValue)"
    return [
      TopicFilter(unchecked: "\(prefix)/connection/set"),
      TopicFilter(unchecked: "\(prefix)/gatt/+/+/get"),
      TopicFilter(unchecked: "\(prefix)/gatt/+/+/set"),
      TopicFilter(unchecked: "\(prefix)/gatt/+/+/notify"),
    ]
  }

  // MARK: Building

  private var bridgePrefix: String { "\(base)/bridge/\(gateway.rawValue)" }

  private func bridge(_ suffix: String) -> TopicName {
    TopicName(unchecked: "\(bridgePrefix)/\(suffix)")
  }

  private func device(_ device: DeviceID, _ suffix: String) -> TopicName {
    // For every advertisement: one allocation, no interpolation.
    var topic = base
    topic.reserveCapacity(base.utf8.count + device.rawValue.utf8.count + suffix.utf8.count + 2)
    topic += "/"
    topic += device.rawValue
    topic += "/"
    topic += suffix
    return TopicName(unchecked: topic)
  }

  private func characteristic(
    _ device: DeviceID, _ service: BluetoothUUID, _ characteristic: BluetoothUUID,
    _ suffix: String?
  ) -> TopicName {
    // On the path of every value: one allocation, no interpolation.
    let serviceSegment = service.topicSegment
    let characteristicSegment = characteristic.topicSegment
    var topic = base
    topic.reserveCapacity(
      base.utf8.count + device.rawValue.utf8.count + serviceSegment.utf8.count
        + characteristicSegment.utf8.count + (suffix?.utf8.count ?? 0) + 9)
    topic += "/"
    topic += device.rawValue
    topic += "/gatt/"
    topic += serviceSegment
    topic += "/"
    topic += characteristicSegment
    if let suffix {
      topic += "/"
      topic += suffix
    }
    return TopicName(unchecked: topic)
  }
}
