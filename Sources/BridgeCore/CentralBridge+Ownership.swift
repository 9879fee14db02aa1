extension CentralBridge {
  /// Takes in a fleet message the gateway subscribed to for ownership: a device's retained
  /// claim (`<base>/<dev>/owner`) or a gateway's retained state (`<base>/bridge/<gw>/state`).
  ///
  /// - Parameters:
  ///   - message: What the topic is about (``Topics/parseFleet(_:)``).
  ///   - payload: The payload; empty when the retained message was cleared.
  ///   - now: The time.
  /// - Returns: What to do; nothing without fleet ownership.
  public mutating func fleetMessage(
    _ message: Topics.FleetMessage, payload: [UInt8], now: Double
  ) -> [Output] {
    if case .name(let address) = message {
      switch Self.name(from: payload) {
      case .success(let name):
        return rename(address, to: name, now: now)
      case .failure(let error):
        var data = eventData(address)
        data["message"] = .string(error.description)
        return [.discovery(event("device_name_invalid", data))]
      }
    }
    guard var arbiter = ownership else { return [] }
    ownership = nil  // no copy while it changes
    arbiter.freeSlots = gatt?.freeSlots ?? 0
    let decided: [OwnershipArbiter.Output]
    switch message {
    case .owner(let address):
      decided = arbiter.claimReceived(address, payload: payload, now: now)
      ownership = arbiter
      discovery.setOwner(address, arbiter.owner(of: address))
    case .state(let gateway):
      decided = arbiter.stateReceived(gateway, payload: payload, now: now)
      ownership = arbiter
      for record in discovery.registry.records {
        discovery.setOwner(record.address, arbiter.owner(of: record.address))
      }
    case .name:
      ownership = arbiter
      decided = []
    }
    return apply(decided, now: now)
  }

  /// Runs a device-plane request (`connection/set`, `/get`, `/set`, `/notify`) or its refusal.
  /// With fleet ownership only the gateway that answers for the device
  /// (``OwnershipArbiter/answers(_:)``: its owner, or the lowest online gateway for a device
  /// no one owns) publishes anything; the others still record what the request wants
  /// (notifications, the connection request), so that it follows the device to a new owner.
  ///
  /// - Parameters:
  ///   - device: The device the topic names.
  ///   - now: The time.
  ///   - step: The request.
  /// - Returns: What to do.
  public mutating func request(
    about device: DeviceID?, now: Double, _ step: (inout GATTBridge) -> [GATTOutput]
  ) -> [Output] {
    guard let ownership, let device else { return connections(now: now, step) }
    let address = address(named: device.rawValue)
    guard address.map(ownership.answers) ?? ownership.answersUnknown else {
      return connections(now: now, step).filter { !$0.isPublication }
    }
    // This gateway answers: for a device no one owns, its answers pass the owner filter.
    answering = address
    defer { answering = nil }
    return connections(now: now, step)
  }

  /// Runs a `device/connect` or `device/disconnect` bridge request: refused with `not_owner`
  /// (naming the owner) for a device another gateway owns.
  ///
  /// - Parameters:
  ///   - connect: `true` for `device/connect`.
  ///   - body: The request's JSON object.
  ///   - now: The time.
  /// - Returns: What to do and the response; `nil` for a central without GATT.
  public mutating func deviceRequest(connect: Bool, body: JSONObject, now: Double) -> (
    [Output], BridgeResponse
  )? {
    if let refusal = notOwner(body) { return ([], refusal) }
    return connections(now: now) { $0.deviceRequest(connect: connect, body: body, now: now) }
  }

  /// The `not_owner` refusal of a device request (`device/connect`, `disconnect`, `remove`)
  /// naming a device another gateway owns; `nil` when this gateway may carry it out.
  ///
  /// - Parameter body: The request's JSON object.
  /// - Returns: The refusal, naming the owner.
  func notOwner(_ body: JSONObject) -> BridgeResponse? {
    guard let ownership, case .string(let text) = body["device"],
      let address = address(named: text), let owner = ownership.owner(of: address),
      owner != ownership.topics.gateway
    else { return nil }
    return .failure(
      code: "not_owner",
      message:
        "\(DeviceID(address: address)) is owned by gateway '\(owner)'; send the request to it",
      transaction: nil)
  }

  /// The arbiter's outputs for one central event: RSSI samples of devices the registry keeps.
  mutating func arbitrate(_ event: CentralEvent, now: Double) -> [Output] {
    let address: BluetoothAddress
    let rssi: Int
    switch event {
    case .deviceAppeared(let advertisement), .deviceUpdated(let advertisement):
      guard let value = advertisement.rssi else { return [] }
      (address, rssi) = (advertisement.address, value)
    case .connectionRSSI(let device, let value):
      (address, rssi) = (device, value)
    default:
      return apply(pendingOwnership(), now: now)
    }
    guard discovery.registry[address] != nil else { return [] }
    let wants = gatt?.wantsConnection(address) ?? false
    ownership?.freeSlots = gatt?.freeSlots ?? 0
    let decided =
      ownership?.observed(address, rssi: rssi, wantsConnection: wants, now: now) ?? []
    return apply(pendingOwnership() + decided, now: now)
  }

  /// The arbiter's decisions about link state changes, taken out of the queue.
  mutating func pendingOwnership() -> [OwnershipArbiter.Output] {
    defer { linkDecisions = [] }
    return linkDecisions
  }

  /// Carries out the arbiter's outputs: claims published; a gained device's retained state
  /// published and its link wanted; a lost one torn down; an event for each.
  mutating func apply(_ decided: [OwnershipArbiter.Output], now: Double) -> [Output] {
    guard !decided.isEmpty, ownership != nil else { return [] }
    var outputs: [Output] = []
    let topics = discovery.topics
    for output in decided {
      switch output {
      case .publish(let topic, let payload):
        outputs.append(.fleet(.claim(topic: topic, payload: payload)))
      case .gained(let address, let from, let reason):
        heldClears.removeAll { $0.address == address }  // its state is published below
        discovery.setOwner(address, topics.gateway)
        var data = eventData(address)
        data["from"] = from.map { .string($0.rawValue) } ?? .null
        data["reason"] = .string(reason)
        outputs.append(.discovery(event("ownership_gained", data)))
        outputs += ownedOnly(discovery.deviceState(address).map(Output.discovery))
        outputs += connections(now: now) { $0.setOwned(address, true, now: now) }
      case .lost(let address, let to, let reason):
        heldClears.removeAll { $0.address == address }  // the new owner's state stands
        discovery.setOwner(address, to)
        var data = eventData(address)
        data["to"] = to.map { .string($0.rawValue) } ?? .null
        data["reason"] = .string(reason)
        outputs.append(.discovery(event("ownership_lost", data)))
        outputs += connections(now: now) { $0.setOwned(address, false, now: now) }
        // The new owner publishes the device's retained state: ours must not come back after
        // our next reconnect.
        outputs += forgetRetained(address)
      case .invalidClaim(let address, let problem):
        var data = eventData(address)
        data["problem"] = .string(problem)
        outputs.append(.discovery(event("ownership_claim_invalid", data)))
      case .peersFull(let ignored, let known):
        let message =
          "\(known) gateways are known on this broker (at most \(OwnershipArbiter.maxPeers)): "
          + "the state of '\(ignored.rawValue)' and of other new ones is ignored until one goes"
        outputs.append(
          .discovery(
            event(
              "fleet_peers_full",
              [
                "gateway": .string(ignored.rawValue), "known": .integer(Int64(known)),
                "message": .string(message),
              ])))
      case .resumed(let address):
        // Only for devices still ours (the others' new owners' state must stand), before
        // their state is published again.
        outputs += heldClears.filter { held in
          ownership?.owns(held.address) == true
            || (restored.contains(held.address) && ownership?.owner(of: held.address) == nil)
        }.map(\.output)
        heldClears = []
        if heldClearsDropped > 0 {
          // Said once: those topics stay retained until their devices are heard and forgotten
          // again.
          outputs.append(
            .discovery(
              event(
                "retained_clears_dropped",
                [
                  "count": .integer(Int64(heldClearsDropped)),
                  "message": .string(
                    "more than \(heldClearLimit) retained topics were to be cleared while the broker was away; these were not"
                  ),
                ])))
          heldClearsDropped = 0
        }
        outputs += ownedOnly(discovery.deviceState(address).map(Output.discovery))
        outputs += ownedOnly((gatt?.currentState(address) ?? []).map(Output.gatt))
      }
    }
    return outputs
  }

  /// ``ownedOnly(_:)``, keeping back the clears (empty retained payloads) of the devices this
  /// gateway owns while the broker is away: a device forgotten meanwhile would otherwise keep
  /// its retained state on the broker for good (nothing can clear it later). They go out when
  /// the gateway's `online` state is back (``OwnershipArbiter/Output/resumed(_:)``) for the
  /// devices it still owns; a device lost or gained meanwhile has its held clears dropped (its
  /// new owner's state, or ours published again, must stand). At most ``heldClearLimit``; the
  /// clears past it are counted and said in a `retained_clears_dropped` event when the
  /// gateway resumes.
  mutating func holdingClears(_ outputs: [Output]) -> [Output] {
    if let ownership, ownership.isSuspended {
      let topics = discovery.topics
      for output in outputs {
        switch output {
        case .discovery(.publish(let name, let payload, true)),
          .gatt(.publish(let name, let payload, true)):
          guard payload.isEmpty,
            let address = topics.deviceAddress(of: name) ?? namedAddress(of: name)
              ?? discovery.homeAssistant?.deviceAddress(ofConfig: name),
            ownership.owns(address) || restored.contains(address)
          else { continue }
          guard heldClears.count < heldClearLimit else {
            heldClearsDropped += 1
            continue
          }
          heldClears.append((address, output))
        default: continue
        }
      }
    }
    return ownedOnly(outputs)
  }

  /// The outputs without the device-level publications of devices this gateway does not own
  /// (none at all while the broker connection is down, ``brokerLost()``).
  func ownedOnly(_ outputs: [Output]) -> [Output] {
    guard let ownership else { return outputs }
    let topics = discovery.topics
    return outputs.filter { output in
      let topic: TopicName
      let retained: Bool
      switch output {
      case .discovery(.publish(let name, _, let retain)), .gatt(.publish(let name, _, let retain)):
        (topic, retained) = (name, retain)
      default: return true
      }
      guard
        let address = topics.deviceAddress(of: topic) ?? namedAddress(of: topic)
          ?? discovery.homeAssistant?.deviceAddress(ofConfig: topic)
      else { return true }
      if ownership.isSuspended { return false }
      // What an earlier run of this gateway left for a device it forgot that no gateway owns
      // now: no one else would ever clear it.
      // An earlier run of this gateway left for it, and no gateway owns it now: no one else
      // would clear it, or say it went offline and away.
      if retained, restored.contains(address), ownership.owner(of: address) == nil,
        discovery.registry[address]?.restored ?? true
      {
        return true
      }
      // Answering for a device no one owns: replies and results, never retained state.
      return ownership.owns(address) || (address == answering && !retained)
    }
  }

  /// Stops re-publishing a device's retained state after reconnects: its topics under its id
  /// (and its address id) — `availability`, `presence`, `connection`, `gatt` and the values
  /// below `gatt/` — and its Home Assistant configs. Named one by one, not as everything
  /// below `<base>/<dev>/`: a friendly name may be another's first levels (`kitchen` and
  /// `kitchen/fridge`), and the other device's state is not this one's to forget.
  func forgetRetained(_ address: BluetoothAddress) -> [Output] {
    let topics = discovery.topics
    var ids = [DeviceID(address: address)]
    if let id = discovery.registry[address]?.id, id != ids[0] { ids.append(id) }
    if let id = gatt?.name(of: address), !ids.contains(id) { ids.append(id) }
    var outputs: [Output] = []
    for id in ids {
      for topic in [
        topics.availability(id), topics.presence(id), topics.connection(id), topics.gatt(id),
      ] {
        outputs.append(.fleet(.forgetRetainedTopic(topic)))
      }
      outputs.append(.fleet(.forgetRetained(below: topics.gatt(id).rawValue + "/")))
    }
    for topic in discovery.homeAssistant?.configTopics(of: address) ?? [] {
      outputs.append(.fleet(.forgetRetainedTopic(topic)))
    }
    return outputs
  }

  /// The broker connection was lost: with fleet ownership, nothing device-level is published
  /// and no claim goes out until this gateway's `online` state is back (then it publishes its
  /// devices' state again, ``OwnershipArbiter/Output/resumed(_:)``), and the retained state of
  /// its devices is not re-published by the reconnect itself: another gateway may own them by
  /// then.
  ///
  /// - Returns: What to do; nothing without fleet ownership.
  public mutating func brokerLost() -> [Output] {
    guard ownership != nil else { return [] }
    ownership?.brokerLost()
    return (ownership?.ownedDevices ?? []).flatMap { forgetRetained($0) }
  }

  /// The gateway stops cleanly: an `ownership_lost` event (`"to":null`, `"reason":"stopping"`)
  /// for every device it owns — its side of the hand-over that its `offline` state starts (the
  /// new owners say `ownership_gained`, `owner_offline`). A killed gateway cannot say it.
  ///
  /// - Returns: The events; nothing without fleet ownership.
  public func stopping() -> [Output] {
    (ownership?.ownedDevices ?? []).map { address in
      var data = eventData(address)
      data["to"] = .null
      data["reason"] = "stopping"
      return .discovery(event("ownership_lost", data))
    }
  }

  /// The device a topic names by its friendly name: `<base>/<name>/…`, the name one level or
  /// several (only with fleet ownership, which filters on it).
  ///
  /// - Parameter topic: A topic this gateway publishes.
  /// - Returns: The device's address, `nil` when the topic names no named device.
  public func namedAddress(of topic: TopicName) -> BluetoothAddress? {
    guard !addressesByName.isEmpty else { return nil }
    let prefix = discovery.topics.base + "/"
    guard topic.rawValue.hasPrefix(prefix) else { return nil }
    let rest = topic.rawValue.dropFirst(prefix.count)
    var end = rest.startIndex
    var found: BluetoothAddress?
    // The longest name that is a prefix of the topic: `kitchen/thermometer` before `kitchen`.
    while let slash = rest[end...].firstIndex(of: "/") {
      if let address = addressesByName[String(rest[..<slash])] { found = address }
      end = rest.index(after: slash)
    }
    return found
  }

  /// A `<base>/bridge/<gw>/event` publication.
  ///
  /// - Parameters:
  ///   - type: The event's type.
  ///   - data: Its data.
  /// - Returns: The output.
  public func eventOutput(_ type: String, _ data: JSONObject) -> Output {
    .discovery(event(type, data))
  }

  func eventData(_ address: BluetoothAddress) -> JSONObject {
    [
      "device": .string(DeviceID(address: address).rawValue),
      "address": .string(address.description),
    ]
  }

  func event(_ type: String, _ data: JSONObject) -> BridgeOutput {
    .publish(
      topic: discovery.topics.bridgeEvent, payload: BridgePayload.event(type: type, data: data),
      retain: false)
  }
}

extension CentralBridge.Output {
  /// Whether this publishes to MQTT (a publication or an MQTT 5 reply).
  var isPublication: Bool {
    switch self {
    case .discovery(.publish), .gatt(.publish), .gatt(.reply): true
    default: false
    }
  }
}
