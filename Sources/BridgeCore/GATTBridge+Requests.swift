extension GATTBridge {
  /// Serves a device-plane request: `connection/set`, `/get`, `/set` or `/notify`.
  ///
  /// Bad requests are answered, never dropped: on the characteristic's `result` topic (and
  /// the MQTT 5 response topic when given) for `/get`, `/set` and `/notify`, with a
  /// `request_error` bridge event for `connection/set`.
  ///
  /// - Parameters:
  ///   - request: The parsed topic (``Topics/parseRequest(_:)``); bridge requests and the
  ///     peripheral text are not served here and give nothing.
  ///   - payload: The message's payload.
  ///   - reply: The MQTT 5 response topic and correlation data, if the message had them.
  ///   - now: The time.
  /// - Returns: What to do.
  public mutating func request(
    _ request: Topics.Request, payload: [UInt8], reply: ReplyAddress? = nil, now: Double
  ) -> [GATTOutput] {
    switch request {
    case .bridge, .peripheralText, .fleet, .fleetPeripheralText:
      return []
    case .connectionSet(let device):
      let parsed: ConnectionRequest
      do {
        parsed = try ConnectionRequest(parsing: payload)
      } catch {
        return connectionResult(
          device, .failure(code: error.code, message: error.description, transaction: nil),
          reply: reply)
      }
      switch setConnection(device, parsed.state, now: now) {
      case .failure(var response):
        response.transaction = parsed.transaction
        return connectionResult(device, response, reply: reply)
      case .success(let outputs):
        let state = linkByID[device].flatMap { links[$0]?.state } ?? .disconnected
        return outputs
          + connectionResult(
            device, .success(["state": .string(state.rawValue)], transaction: parsed.transaction),
            reply: reply)
      }
    case .get(let path):
      let parsed: ReadRequest
      do {
        parsed = try ReadRequest(parsing: payload)
      } catch {
        return result(path, op: "read", transaction: nil, reply: reply, error: error)
      }
      return read(path, transaction: parsed.transaction, reply: reply)
    case .set(let path):
      return write(path, payload: payload, reply: reply)
    case .notify(let path):
      let parsed: NotifyRequest
      do {
        parsed = try NotifyRequest(parsing: payload)
      } catch {
        return result(path, op: "notify", transaction: nil, reply: reply, error: error)
      }
      return setNotify(path, parsed.enabled, reply: reply)
    }
  }

  /// Serves the `device/connect` and `device/disconnect` bridge requests: `{"device":
  /// "<dev>"|"AA:BB:…"}`.
  ///
  /// - Parameters:
  ///   - connect: `true` for `device/connect`.
  ///   - body: The request's JSON object.
  ///   - now: The time.
  /// - Returns: What to do, and the response (its transaction is the caller's to set).
  public mutating func deviceRequest(connect: Bool, body: JSONObject, now: Double) -> (
    outputs: [GATTOutput], response: BridgeResponse
  ) {
    let address: BluetoothAddress
    do throws(BridgeResponse) {
      address = try DeviceRequestBody.address(in: body) { self.address(named: $0) }
    } catch {
      return ([], error)
    }
    let id = name(of: address)
    switch setConnection(id, connect ? .connected : .disconnected, now: now) {
    case .success(let outputs):
      let state = links[address]?.state ?? .disconnected
      return (
        outputs,
        .success(
          ["device": .string(id.rawValue), "state": .string(state.rawValue)], transaction: nil)
      )
    case .failure(let response):
      return ([], response)
    }
  }

  /// The device a request's `"device"` names: an address in any spelling, an address id, or a
  /// friendly name.
  func address(named text: String) -> BluetoothAddress? {
    if let address = try? BluetoothAddress(text) { return address }
    if let address = linkByID.first(where: { $0.key.rawValue == text })?.value { return address }
    if let address = renamed.first(where: { $0.value.rawValue == text })?.key { return address }
    return configuration.names.first { $0.value.rawValue == text }?.key
  }

  /// Records a connection request and acts on it.
  mutating func setConnection(
    _ device: DeviceID, _ state: ConnectionRequest.State, now: Double
  ) -> Result<[GATTOutput], BridgeResponse> {
    guard let address = linkByID[device] ?? address(named: device.rawValue) else {
      return .failure(
        .failure(
          code: "unknown_device", message: "'\(device)' is not a known device", transaction: nil))
    }
    switch state {
    case .connected:
      guard knows(address) else {
        return .failure(
          .failure(
            code: "unknown_device",
            message: "\(address) has not been seen; it must advertise before it can be connected",
            transaction: nil))
      }
      var link = links[address] ?? makeLink(address, now: now)
      link.request = true
      link.known = true
      if link.state == .failed || link.state == .disconnected { link.retryAt = nil }
      links[address] = link
      linkByID[link.id] = address
      return .success([connectionOutput(link)] + schedule(now: now))
    case .disconnected:
      guard var link = links[address] else {
        // A device that was seen is simply not connected; one never seen is a mistake.
        guard knows(address) else {
          return .failure(
            .failure(
              code: "unknown_device", message: "\(address) has not been seen", transaction: nil))
        }
        return .success([])
      }
      link.request = false
      link.retryAt = nil
      links[address] = link
      let outputs = teardown(address, now: now)
      return .success(outputs.isEmpty ? [connectionOutput(link)] : outputs)
    }
  }

  mutating func read(
    _ path: CharacteristicPath, transaction: JSONValue?, reply: ReplyAddress?
  ) -> [GATTOutput] {
    enqueue(
      .read, on: path, transaction: transaction, reply: reply, if: \.canRead,
      else: "the characteristic is not readable")
  }

  /// Queues `kind` on the characteristic `path` names, when it is there and `permitted` says
  /// it takes it; else the result says why (`not_permitted` with `refusal` and its flags).
  private mutating func enqueue(
    _ kind: GATTOperation.Kind, on path: CharacteristicPath, transaction: JSONValue?,
    reply: ReplyAddress?, if permitted: (GATTTree.Characteristic) -> Bool, else refusal: String
  ) -> [GATTOutput] {
    switch target(path) {
    case .failure(let failure):
      return result(path, op: kind.name, transaction: transaction, reply: reply, failure)
    case .success(let (id, characteristic)):
      guard permitted(characteristic) else {
        return result(
          path, op: kind.name, transaction: transaction, reply: reply,
          Failure("not_permitted", "\(refusal) (flags: \(characteristic.flags))"))
      }
      return enqueue(
        Pending(
          operation: makeOperation(id, kind), path: path, transaction: transaction,
          reply: reply, report: true))
    }
  }

  mutating func write(_ path: CharacteristicPath, payload: [UInt8], reply: ReplyAddress?)
    -> [GATTOutput]
  {
    // Whether the characteristic can be written at all comes first: a bad payload for a
    // read-only characteristic is `not_permitted`, not `invalid_payload`.
    let (id, characteristic): (GATTCharacteristicID, GATTTree.Characteristic)
    // Every answer echoes the transaction when the payload has a readable one.
    let echoed = try? WriteRequest(parsing: payload, format: format(for: path)).transaction
    switch target(path) {
    case .failure(let failure):
      return result(path, op: "write", transaction: echoed, reply: reply, failure)
    case .success(let found):
      (id, characteristic) = found
    }
    guard characteristic.canWriteWithResponse || characteristic.canWriteWithoutResponse else {
      return result(
        path, op: "write", transaction: echoed, reply: reply,
        Failure(
          "not_permitted", "the characteristic is not writable (flags: \(characteristic.flags))"))
    }
    // The device, not its spelling: the topic may name it by a lower-case id or an address.
    if !configuration.writable.isEmpty,
      !configuration.writable.contains(where: {
        $0.matches(
          device: links[id.address]?.id ?? DeviceID(address: id.address), address: id.address,
          service: path.service,
          characteristic: path.characteristic)
          || $0.matches(
            device: path.device, service: path.service, characteristic: path.characteristic)
      })
    {
      return result(
        path, op: "write", transaction: echoed, reply: reply,
        Failure("not_permitted", "bluetooth.gatt.writable does not list this characteristic"))
    }
    let request: WriteRequest
    do {
      request = try WriteRequest(parsing: payload, format: format(for: path))
    } catch {
      return result(path, op: "write", transaction: nil, reply: reply, error: error)
    }
    let transaction = request.transaction
    let withResponse: Bool
    switch request.withResponse {
    case .some(true) where characteristic.canWriteWithResponse,
      .none where characteristic.canWriteWithResponse:
      withResponse = true
    case .some(false) where characteristic.canWriteWithoutResponse,
      .none where characteristic.canWriteWithoutResponse:
      withResponse = false
    default:
      let kind =
        request.withResponse.map { $0 ? "writes with response" : "writes without response" }
        ?? "writes"
      return result(
        path, op: "write", transaction: transaction, reply: reply,
        Failure(
          "not_permitted",
          "the characteristic does not take \(kind) (flags: \(characteristic.flags))"))
    }
    let mtu = links[id.address]?.tree?.mtu ?? 23
    let limit = withResponse ? Self.maximumValueLength : min(Self.maximumValueLength, mtu - 3)
    guard request.value.count <= limit else {
      let why =
        withResponse
        ? "the ATT protocol allows at most \(limit) bytes"
        : "a write without response carries at most MTU - 3 = \(limit) bytes"
      return result(
        path, op: "write", transaction: transaction, reply: reply,
        Failure("too_long", "\(request.value.count) bytes: \(why)"))
    }
    return enqueue(
      Pending(
        operation: makeOperation(id, .write(request.value, withResponse: withResponse)),
        path: path, transaction: transaction, reply: reply, report: true))
  }

  mutating func setNotify(_ path: CharacteristicPath, _ enabled: Bool, reply: ReplyAddress?)
    -> [GATTOutput]
  {
    // Kept under the device's canonical id when the topic names it by an address spelled
    // otherwise (lower case, colons), so that it applies to the device, not to a spelling.
    var wanted = path
    if linkByID[path.device] == nil, let address = address(named: path.device.rawValue) {
      wanted.device = name(of: address)
    }
    // Wishes are kept for devices not seen yet, so anyone who may publish under the base topic
    // could grow them without end: a new one past the bound is refused (a known one changes).
    guard notifyWanted[wanted] != nil || notifyWanted.count < Self.maxNotifyWishes else {
      return result(
        path, op: "notify", transaction: nil, reply: reply,
        Failure(
          "busy",
          "\(notifyWanted.count) notification wishes are kept already (at most "
            + "\(Self.maxNotifyWishes)); this one for a characteristic without one is refused"))
    }
    notifyWanted[wanted] = enabled
    guard let address = linkByID[wanted.device], let link = links[address], link.state == .ready
    else {
      // The desired state applies at the next connection (retained `/notify` messages arrive
      // before the device is seen): said so on the result topic, not kept silently.
      return resultOutputs(
        path,
        [
          "op": "notify", "status": "pending", "notify": .bool(enabled),
          "message": "applies when the device is connected and ready",
          "gw": .string(topics.gateway.rawValue),
        ], reply: reply)
    }
    return enqueue(
      .notify(enabled), on: path, transaction: nil, reply: reply, if: \.canNotify,
      else: "the characteristic does not notify")
  }

  /// A reason a request cannot be served.
  struct Failure: Error {
    var code: String
    var message: String
    /// The stack's own error name, published as `"bluez"`.
    var detail: String?
    init(_ code: String, _ message: String) {
      self.code = code
      self.message = message
    }
  }

  /// The characteristic a path names on a ready link.
  func target(_ path: CharacteristicPath) -> Result<
    (GATTCharacteristicID, GATTTree.Characteristic), Failure
  > {
    let address = linkByID[path.device] ?? address(named: path.device.rawValue)
    guard let address, knows(address) else {
      return .failure(Failure("unknown_device", "'\(path.device)' is not a known device"))
    }
    guard let link = links[address], link.state.isConnected, !link.closing else {
      return .failure(Failure("not_connected", "\(address) is not connected"))
    }
    guard let tree = link.tree, link.state == .ready else {
      return .failure(Failure("not_connected", "\(address) is still discovering its services"))
    }
    guard
      let characteristic = tree.characteristic(
        service: path.service, characteristic: path.characteristic)
    else {
      return .failure(
        Failure(
          "unknown_characteristic",
          "\(address) has no characteristic \(path.characteristic.topicSegment) in service "
            + path.service.topicSegment))
    }
    return .success(
      (
        GATTCharacteristicID(
          address: address, service: path.service, characteristic: path.characteristic),
        characteristic
      ))
  }

  /// The value format of a characteristic: a rule may name its device by id (a friendly name)
  /// or by address.
  func format(for path: CharacteristicPath) -> ValueFormat {
    // Per value on the notification path: no look-up of the device without format rules.
    guard !configuration.formats.isEmpty else { return configuration.defaultFormat }
    return configuration.formats.value(
      for: path, address: linkByID[path.device] ?? address(named: path.device.rawValue),
      default: configuration.defaultFormat)
  }

  func path(_ id: GATTCharacteristicID, _ device: DeviceID) -> CharacteristicPath {
    CharacteristicPath(device: device, service: id.service, characteristic: id.characteristic)
  }

  /// Answers a device-plane request that cannot be served at all (its payload was too large to
  /// keep, or there was no room for it): an error result on the characteristic's `result`
  /// topic (and `reply`), or a `request_error` event for `connection/set`.
  ///
  /// - Parameters:
  ///   - request: The parsed topic.
  ///   - code: The error code, such as `payload_too_large` or `busy`.
  ///   - message: What a person reads.
  ///   - reply: The MQTT 5 response topic and correlation data, if the message had them.
  /// - Returns: What to do.
  public mutating func refuse(
    _ request: Topics.Request, code: String, message: String, reply: ReplyAddress?
  ) -> [GATTOutput] {
    let failure = Failure(code, message)
    switch request {
    case .bridge, .peripheralText, .fleet, .fleetPeripheralText: return []
    case .connectionSet(let device):
      counters.errors += 1
      return requestError(topics.connectionSet(device), code: code, message)
    case .get(let path): return result(path, op: "read", transaction: nil, reply: reply, failure)
    case .set(let path): return result(path, op: "write", transaction: nil, reply: reply, failure)
    case .notify(let path):
      return result(path, op: "notify", transaction: nil, reply: reply, failure)
    }
  }

  func requestError(_ topic: TopicName, code: String, _ message: String) -> [GATTOutput] {
    [
      event(
        "request_error",
        ["topic": .string(topic.rawValue), "error": .string(code), "message": .string(message)])
    ]
  }

  /// The outcome of a `connection/set`: `<base>/<dev>/connection/result`
  /// (`{"op":"connection","status":"ok","state":"connecting",…}` or the error), the MQTT 5
  /// reply, and for an error a `request_error` event as before.
  func connectionResult(_ device: DeviceID, _ response: BridgeResponse, reply: ReplyAddress?)
    -> [GATTOutput]
  {
    var object: JSONObject = ["op": "connection", "gw": .string(topics.gateway.rawValue)]
    for (key, value) in response.json.objectValue ?? [:] where key != "data" {
      object[key] = value
    }
    for (key, value) in response.data { object[key] = value }
    let payload = JSONValue.object(object).serializedBytes()
    var outputs: [GATTOutput] = [
      .publish(topic: topics.connectionResult(device), payload: payload, retain: false)
    ]
    if let reply { outputs.append(.reply(reply, payload: payload)) }
    if !response.ok {
      outputs += requestError(
        topics.connectionSet(device), code: response.errorCode ?? "error", response.message ?? "")
    }
    return outputs
  }

  /// The result publications of a request that failed before reaching the device.
  mutating func result(
    _ path: CharacteristicPath, op: String, transaction: JSONValue?, reply: ReplyAddress?,
    error: PayloadError
  ) -> [GATTOutput] {
    result(
      path, op: op, transaction: transaction, reply: reply, Failure(error.code, error.description))
  }

  mutating func result(
    _ path: CharacteristicPath, op: String, transaction: JSONValue?, reply: ReplyAddress?,
    _ failure: Failure
  ) -> [GATTOutput] {
    counters.errors += 1
    var object: JSONObject = [
      "op": .string(op), "status": "error", "error": .string(failure.code),
      "message": .string(failure.message), "gw": .string(topics.gateway.rawValue),
    ]
    if let transaction { object["transaction"] = transaction }
    if let detail = failure.detail { object["bluez"] = .string(detail) }
    return resultOutputs(path, object, reply: reply)
  }

  func resultOutputs(_ path: CharacteristicPath, _ object: JSONObject, reply: ReplyAddress?)
    -> [GATTOutput]
  {
    let payload = JSONValue.object(object).serializedBytes()
    var outputs: [GATTOutput] = [
      .publish(topic: topics.result(path), payload: payload, retain: false)
    ]
    if let reply { outputs.append(.reply(reply, payload: payload)) }
    return outputs
  }
}
