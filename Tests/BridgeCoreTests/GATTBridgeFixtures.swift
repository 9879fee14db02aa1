import BridgeCore

/// A ``GATTBridge`` with its outputs sorted by kind, for the connection-half tests.
struct GATTHarness {
  var bridge: GATTBridge
  var now = Fixture.t0
  /// Every output so far, in order.
  var outputs: [GATTOutput] = []

  static let sensor = Fixture.address("A4:C1:38:1E:29:DF")
  static let actuator = Fixture.address("A4:C1:38:00:00:02")
  static let battery = BluetoothUUID(uuid16: 0x180F)
  static let batteryLevel = BluetoothUUID(uuid16: 0x2A19)
  static let heartRate = BluetoothUUID(uuid16: 0x180D)
  static let heartRateMeasurement = BluetoothUUID(uuid16: 0x2A37)
  static let control = BluetoothUUID(uuid16: 0xFFF0)
  static let command = BluetoothUUID(uuid16: 0xFFF1)
  static let stream = BluetoothUUID(uuid16: 0xFFF2)

  /// A sensor's tree: battery (read, notify), heart rate (notify), a control service with a
  /// write-with-response and a write-without-response characteristic, the transfer service.
  static let tree = GATTTree(
    services: [
      .init(
        uuid: battery,
        characteristics: [
          .init(
            uuid: batteryLevel, flags: ["read", "notify"],
            descriptors: [BluetoothUUID(uuid16: 0x2902)])
        ]),
      .init(
        uuid: heartRate, characteristics: [.init(uuid: heartRateMeasurement, flags: ["notify"])]),
      .init(
        uuid: control,
        characteristics: [
          .init(uuid: command, flags: ["read", "write"]),
          .init(uuid: stream, flags: ["write-without-response"]),
        ]),
      .init(
        uuid: GATTBridge.defaultTransferService,
        characteristics: [
          .init(uuid: GATTBridge.defaultTransferCharacteristic, flags: ["read", "notify"])
        ]),
    ], mtu: 23)

  init(_ configuration: GATTBridge.Configuration = .init()) {
    bridge = GATTBridge(topics: Fixture.topics, configuration: configuration)
  }

  static func device(_ address: BluetoothAddress) -> DeviceID { DeviceID(address: address) }

  static func path(
    _ service: BluetoothUUID, _ characteristic: BluetoothUUID, on address: BluetoothAddress = sensor
  ) -> CharacteristicPath {
    CharacteristicPath(device: device(address), service: service, characteristic: characteristic)
  }

  static func id(
    _ service: BluetoothUUID, _ characteristic: BluetoothUUID, on address: BluetoothAddress = sensor
  ) -> GATTCharacteristicID {
    GATTCharacteristicID(address: address, service: service, characteristic: characteristic)
  }

  @discardableResult
  mutating func record(_ produced: [GATTOutput]) -> [GATTOutput] {
    outputs += produced
    return produced
  }

  @discardableResult
  mutating func event(_ event: CentralEvent) -> [GATTOutput] {
    record(bridge.handle(event, now: now))
  }

  @discardableResult
  mutating func tick(_ seconds: Double = 1) -> [GATTOutput] {
    now += seconds
    return record(bridge.tick(now: now))
  }

  @discardableResult
  mutating func send(_ request: Topics.Request, _ payload: String, reply: ReplyAddress? = nil)
    -> [GATTOutput]
  {
    record(bridge.request(request, payload: Array(payload.utf8), reply: reply, now: now))
  }

  @discardableResult
  mutating func connected(_ address: BluetoothAddress, error: CentralError? = nil) -> [GATTOutput] {
    record(bridge.connectFinished(address, error: error, now: now))
  }

  @discardableResult
  mutating func finish(
    _ operation: GATTOperation, _ result: Result<[UInt8], CentralError> = .success([])
  )
    -> [GATTOutput]
  {
    record(bridge.operationFinished(operation.id, result: result, now: now))
  }

  /// Sees a device advertising, connects it and resolves its services; returns the outputs
  /// of the resolution (notification re-arming included).
  @discardableResult
  mutating func ready(_ address: BluetoothAddress = sensor, tree: GATTTree = tree) -> [GATTOutput] {
    event(.deviceUpdated(Fixture.advert(address.description, rssi: -50)))
    if bridge.state(of: address) != .connecting { record(bridge.tick(now: now)) }
    connected(address)
    return event(.servicesResolved(address, tree))
  }

  /// Finishes every operation handed out, and those that follow them, successfully.
  mutating func finishAll(_ produced: [GATTOutput]) { finishAll(produced.operations) }

  /// Finishes these operations, and those that follow them, successfully.
  mutating func finishAll(_ operations: [GATTOperation]) {
    var pending = operations
    while let operation = pending.first {
      pending.removeFirst()
      pending += finish(operation).operations
    }
  }

  /// The connection states published for a device, in order.
  func states(_ address: BluetoothAddress = sensor) -> [String] {
    let topic = Fixture.topics.connection(Self.device(address)).rawValue
    return outputs.compactMap { output in
      guard output.topic == topic, case .object(let object) = output.json,
        case .string(let state) = object["state"]
      else { return nil }
      return state
    }
  }

  /// The results published for a characteristic, as JSON objects.
  func results(_ path: CharacteristicPath) -> [JSONObject] {
    outputs.compactMap { output in
      guard output.topic == Fixture.topics.result(path).rawValue,
        case .object(let object) = output.json
      else { return nil }
      return object
    }
  }

  /// The bridge events of a type.
  func events(_ type: String) -> [JSONObject] {
    outputs.compactMap { output in
      guard output.topic == Fixture.topics.bridgeEvent.rawValue,
        case .object(let object) = output.json,
        object["type"] == .string(type), case .object(let data) = object["data"]
      else { return nil }
      return data
    }
  }
}

extension [GATTOutput] {
  var operations: [GATTOperation] {
    compactMap { if case .execute(let operation) = $0 { operation } else { nil } }
  }
  var connects: [BluetoothAddress] {
    compactMap { if case .connect(let address, _) = $0 { address } else { nil } }
  }
  var disconnects: [BluetoothAddress] {
    compactMap { if case .disconnect(let address) = $0 { address } else { nil } }
  }
  var publishedTopics: [String] { compactMap(\.topic) }
}

extension GATTOutput {
  var topic: String? {
    if case .publish(let topic, _, _) = self { return topic.rawValue }
    return nil
  }
  var payload: [UInt8]? {
    if case .publish(_, let payload, _) = self { return payload }
    return nil
  }
  var retain: Bool? {
    if case .publish(_, _, let retain) = self { return retain }
    return nil
  }
  var json: JSONValue? { payload.flatMap { try? JSONValue.parse($0) } }
}
