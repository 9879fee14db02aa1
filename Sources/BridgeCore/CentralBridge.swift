/// The central role as one pure state machine: the discovery half (``DiscoveryBridge``:
/// adapters, advertisements, the device registry, presence) and the connection half
/// (``GATTBridge``: connections, GATT, transfers) fed the **same** events, with one device
/// model.
///
/// The ``DeviceRegistry`` is the one list of devices (row C3): every link state the connection
/// half reaches (`connecting`, `connected`, `discovering`, `ready`, `failed`, `disconnected`) is
/// copied into the device's record in the same step, so `<base>/bridge/<gw>/devices` and
/// `<base>/<dev>/connection` never disagree, and a connected device is never offline, forgotten
/// or evicted. A device's connection state has one writer: its link, when the connection half
/// has one; the stack's `Connected` property only for devices it has none for (connected by
/// another program).
///
/// The gateway feeds it every ``CentralEvent`` (``handle(_:now:)``), a tick about once a
/// second (``tick(now:)``), `scan` and `device/remove` requests through ``discovery(_:)``, and
/// device-plane requests and the outcomes of connections and GATT operations through
/// ``connections(now:_:)``; it carries out every ``Output`` in order.
public struct CentralBridge: Sendable {
  /// What the bridge asks for, from either half.
  public enum Output: Sendable, Hashable {
    /// A publication or discovery command of the discovery half.
    case discovery(BridgeOutput)
    /// A publication, reply, connection or GATT operation of the connection half.
    case gatt(GATTOutput)
    /// A step of fleet ownership (``OwnershipArbiter``).
    case fleet(FleetOutput)
  }

  /// What fleet ownership asks of the MQTT client.
  public enum FleetOutput: Sendable, Hashable {
    /// Publish a device's claim, retained, once: never again after a reconnect (another
    /// gateway may have claimed the device meanwhile).
    case claim(topic: TopicName, payload: [UInt8])
    /// Stop re-publishing after reconnects the retained topics that start with the prefix
    /// (`<base>/<dev>/gatt/`, the values of a device another gateway now owns).
    case forgetRetained(below: String)
    /// Stop re-publishing one retained topic after reconnects (a device's Home Assistant
    /// config).
    case forgetRetainedTopic(TopicName)
  }

  /// The discovery half.
  public internal(set) var discovery: DiscoveryBridge
  /// The connection half; `nil` for a central without GATT.
  public private(set) var gatt: GATTBridge?
  /// Fleet ownership (``OwnershipArbiter``); `nil` when this gateway owns every device.
  public internal(set) var ownership: OwnershipArbiter?
  /// What the arbiter said about link state changes, carried out after the step that made them.
  var linkDecisions: [OwnershipArbiter.Output] = []
  /// The device a request is being answered for by this gateway without owning it.
  var answering: BluetoothAddress?
  /// The devices with friendly names, by name (for the owner filter).
  var addressesByName: [String: BluetoothAddress] = [:]
  /// Clears of owned devices' retained topics made while the broker was away (fleet
  /// ownership suspended), published when it is back (``holdingClears(_:)``).
  var heldClears: [(address: BluetoothAddress, output: Output)] = []
  /// Clears past ``heldClearLimit`` since the broker went away.
  var heldClearsDropped = 0
  /// The most clears kept back while the broker is away.
  var heldClearLimit = 10_000
  /// The devices taken back from an earlier run's devices list (``restore(previous:now:)``).
  var restored: Set<BluetoothAddress> = []

  /// Makes a bridge from its two halves.
  ///
  /// - Parameters:
  ///   - discovery: The discovery half.
  ///   - gatt: The connection half, or `nil` for a central that cannot connect.
  ///   - ownership: Fleet ownership, or `nil` for a gateway that owns every device it hears.
  ///     With it, device-level topics (`<base>/<dev>/…` and the devices' Home Assistant
  ///     configs) are published, device requests answered and devices connected only for the
  ///     devices this gateway owns (see ``fleetMessage(_:payload:now:)``).
  public init(
    discovery: DiscoveryBridge, gatt: GATTBridge? = nil, ownership: OwnershipArbiter? = nil
  ) {
    self.discovery = discovery
    self.gatt = gatt
    self.ownership = ownership
    self.discovery.tracksForgotten = gatt != nil
    if ownership != nil {
      self.gatt?.requireOwnership()
      self.discovery.owners = [:]
      for (address, name) in discovery.registry.naming.friendlyNames {
        addressesByName[name.rawValue] = address
      }
    }
  }

  /// Seconds to add to `now` for the timestamps in payloads, in both halves (see
  /// ``DiscoveryBridge/wallClockOffset``).
  public var wallClockOffset: Double {
    get { discovery.wallClockOffset }
    set {
      discovery.wallClockOffset = newValue
      gatt?.wallClockOffset = newValue
    }
  }

  /// Takes in one event from the central: the discovery half first, then the connection half.
  ///
  /// - Parameters:
  ///   - event: The event.
  ///   - now: When it happened (monotonic seconds, see ``DiscoveryBridge/wallClockOffset``).
  /// - Returns: What to do, in order.
  public mutating func handle(_ event: CentralEvent, now: Double) -> [Output] {
    let arriving = Self.advertisedAddress(event).flatMap {
      discovery.registry[$0] == nil ? $0 : nil
    }
    // A device's connection state has one writer: its link when the connection half has one
    // (the state machine, copied into the record below), the stack's `Connected` otherwise. A
    // stack change the link ignores (said again while it is ready, or after a failed attempt)
    // must not overwrite the record, or the devices list and `<dev>/connection` disagree.
    var outputs =
      changesALink(event) ? [] : discovery.handle(event, now: now).map(Output.discovery)
    // A device (re)admitted takes its link's state, if it has a link.
    let newDevice = arriving.map { discovery.registry[$0] != nil } ?? false
    outputs += connections(now: now, syncing: newDevice) { $0.handle(event, now: now) }
    outputs += forgetLinks(now: now)
    // Every tree of a ready device reaches Home Assistant (the first comes with the state
    // change to `ready`; a later one changes what differs).
    if case .servicesResolved(let address, _) = event, discovery.homeAssistant != nil,
      let gatt, gatt.state(of: address) == .ready, let tree = gatt.links[address]?.tree
    {
      outputs += discovery.gattResolved(address, tree: tree) { gatt.format(for: $0) }
        .map(Output.discovery)
    }
    guard ownership != nil else { return outputs }
    return holdingClears(outputs) + arbitrate(event, now: now)
  }

  /// The address of an advertisement event.
  private static func advertisedAddress(_ event: CentralEvent) -> BluetoothAddress? {
    switch event {
    case .deviceAppeared(let advertisement), .deviceUpdated(let advertisement):
      advertisement.address
    default: nil
    }
  }

  /// Devices the discovery half forgot lose their links too, unless the links are live or
  /// wanted by address or request (``GATTBridge/forgotten(_:)``).
  private mutating func forgetLinks(now: Double) -> [Output] {
    guard !discovery.forgotten.isEmpty else { return [] }
    let gone = discovery.forgotten
    discovery.forgotten.removeAll()
    var outputs = connections(now: now) { gatt in gone.flatMap { gatt.forgotten($0) } }
    // A restored device's `connection` and `gatt` are the earlier run's unless this run has
    // a link for it (then they are this run's, cleared with the link).
    for address in gone where restored.contains(address) {
      // With fleet ownership: the claim an earlier run of this gateway left.
      if let arbiter = ownership, !arbiter.isSuspended, arbiter.claimedByEarlierRun(address) {
        outputs.append(
          .fleet(.claim(topic: discovery.topics.owner(DeviceID(address: address)), payload: [])))
      }
      let values = discovery.takeValueLeftovers(address)
      guard let gatt, gatt.links[address] == nil else { continue }
      let id = gatt.name(of: address)
      let clears = ([discovery.topics.connection(id), discovery.topics.gatt(id)] + values).map {
        Output.discovery(.publish(topic: $0, payload: [], retain: true))
      }
      outputs += ownership == nil ? clears : holdingClears(clears)
    }
    return outputs
  }

  /// Whether the event is a stack `Connected` change of a device the connection half has a
  /// link for (whose state only the link writes).
  private func changesALink(_ event: CentralEvent) -> Bool {
    guard case .connectionChanged(let address, _) = event else { return false }
    return gatt?.links[address] != nil
  }

  /// Lets time pass in both halves: retries of the connection half first (so that the devices
  /// list published by the discovery half's tick holds their states).
  ///
  /// - Parameter now: The time.
  /// - Returns: What to do.
  public mutating func tick(now: Double) -> [Output] {
    var outputs = connections(now: now) { $0.tick(now: now) }
    outputs += discovery.tick(now: now).map(Output.discovery)
    outputs += forgetLinks(now: now)
    guard ownership != nil else { return outputs }
    ownership?.freeSlots = gatt?.freeSlots ?? 0
    let registry = discovery.registry
    ownership?.prune { registry[$0] != nil }
    let decided = ownership?.tick(now: now) ?? []
    outputs = holdingClears(outputs) + apply(decided, now: now)
    // Who owns what also changes with time (a claimant's run is settled): the devices list's
    // `owner` follows within a tick, not only when the next claim or state arrives.
    if let arbiter = ownership {
      for address in discovery.registry.addresses {
        discovery.setOwner(address, arbiter.owner(of: address))
      }
    }
    return outputs
  }

  /// Takes back the devices an earlier run of this gateway published, from the devices list it
  /// left retained (``DiscoveryBridge/restore(previous:now:)``), so that what it left for them
  /// is cleared when they are forgotten. With fleet ownership the entries it owned: when no
  /// gateway owns such a device by the time it is forgotten, this one clears its topics.
  ///
  /// - Parameters:
  ///   - payload: The retained devices list.
  ///   - now: The time.
  /// - Returns: What to do, and the devices restored (to look for their leftovers).
  public mutating func restore(previous payload: [UInt8], now: Double) -> (
    outputs: [Output], restored: [DiscoveryBridge.RestoredDevice]
  ) {
    let (outputs, devices) = discovery.restore(previous: payload, now: now)
    restored.formUnion(devices.map(\.address))
    return (holdingClears(outputs.map(Output.discovery)), devices)
  }

  /// A retained message an earlier run may have left for a restored device
  /// (``DiscoveryBridge/leftover(_:topic:payload:)``).
  ///
  /// - Parameters:
  ///   - address: The device.
  ///   - topic: The retained topic.
  ///   - payload: Its payload.
  /// - Returns: What to do.
  public mutating func leftover(_ address: BluetoothAddress, topic: TopicName, payload: [UInt8])
    -> [Output]
  {
    // A value topic of a device this run keeps a link to is this run's.
    if gatt?.links[address] != nil, topic.rawValue.hasPrefix(discovery.topics.base + "/") {
      return []
    }
    return holdingClears(
      discovery.leftover(address, topic: topic, payload: payload).map(Output.discovery))
  }

  /// Holds the devices list back until ``restore(previous:now:)`` or ``releaseDevicesList()``
  /// (``DiscoveryBridge/holdsDevicesList``): its first publication would replace the list an
  /// earlier run left before it is read.
  public mutating func holdDevicesList() {
    discovery.holdsDevicesList = true
  }

  /// Lets the devices list go out without a restore (``DiscoveryBridge/holdsDevicesList``):
  /// none was possible or wanted.
  public mutating func releaseDevicesList() {
    discovery.holdsDevicesList = false
  }

  /// The search for leftovers is over (``DiscoveryBridge/leftoverSearchEnded()``).
  public mutating func leftoverSearchEnded() {
    discovery.leftoverSearchEnded()
  }

  /// A central subscribed to this gateway's transfer characteristic, or unsubscribed
  /// (``DiscoveryBridge/peripheralCentral(_:_:now:)``): the peripheral role's centrals are in
  /// the one device registry too.
  ///
  /// - Parameters:
  ///   - address: The central.
  ///   - subscriber: Its subscription, or `nil` when it unsubscribed.
  ///   - now: The time.
  /// - Returns: What to do.
  public mutating func peripheralCentral(
    _ address: BluetoothAddress, _ subscriber: DeviceRecord.Subscriber?, now: Double
  ) -> [Output] {
    var outputs = discovery.peripheralCentral(address, subscriber, now: now).map(Output.discovery)
    outputs += forgetLinks(now: now)
    return ownership == nil ? outputs : holdingClears(outputs)
  }

  /// Runs one step of the discovery half (a `scan` or `device/remove` request).
  ///
  /// - Parameter step: What to do with the discovery half; returns its outputs and a result.
  /// - Returns: The outputs and the step's result.
  public mutating func discovery<Result>(
    _ step: (inout DiscoveryBridge) -> ([BridgeOutput], Result)
  ) -> ([Output], Result) {
    let (outputs, result) = step(&discovery)
    return (holdingClears(outputs.map(Output.discovery)), result)
  }

  /// Runs a `device/remove` request: the discovery half forgets the device and asks the stack
  /// to remove it (``DiscoveryBridge/remove(_:)``), the connection half forgets its link and
  /// clears its retained `connection` and `gatt` (``GATTBridge/remove(_:now:)``).
  ///
  /// - Parameters:
  ///   - body: The request's JSON object.
  ///   - now: The time.
  /// - Returns: What to do and the response.
  public mutating func remove(_ body: JSONObject, now: Double) -> ([Output], BridgeResponse) {
    // With fleet ownership the owner forgets a device and clears its retained topics.
    if let refusal = notOwner(body) { return ([], refusal) }
    // A friendly name is resolved here, where both halves' names are known; the discovery half
    // takes addresses only.
    var body = body
    if case .string(let text) = body["device"], let address = address(named: text) {
      body["device"] = .string(address.description)
    }
    let (outputs, response) = discovery { $0.remove(body) }
    discovery.forgotten.removeAll()  // the connection half's link is removed below
    var removed: BluetoothAddress?
    for case .discovery(.removeDevice(let address)) in outputs { removed = address }
    guard let removed else { return (outputs, response) }
    let wasLinked = gatt?.state(of: removed).map { $0.isConnected || $0 == .connecting } ?? false
    var all = outputs + connections(now: now) { $0.remove(removed, now: now) }
    // The registry no longer holds the device, so no link state reaches the arbiter by the
    // usual path: its claim must stop saying `connected`, or no one could ever take it over.
    if wasLinked,
      let decided = ownership?.linkChanged(removed, connected: false, failed: false, now: now)
    {
      all += apply(decided, now: now)
    }
    return (all, response)
  }

  /// Runs one step of the connection half (a request, the outcome of a connection or an
  /// operation) and copies the link states it changed into the device registry.
  ///
  /// - Parameters:
  ///   - now: The time.
  ///   - step: What to do with the connection half; returns its outputs and a result.
  /// - Returns: The outputs and the step's result; `nil` for a central without GATT.
  public mutating func connections<Result>(
    now: Double, _ step: (inout GATTBridge) -> ([GATTOutput], Result)
  ) -> ([Output], Result)? {
    guard gatt != nil else { return nil }
    let (produced, result) = step(&gatt!)  // in place: no copy of the half
    var outputs = produced.map(Output.gatt)
    // Every link state change publishes the retained `<dev>/connection`.
    if produced.contains(where: \.isRetainedPublication) { outputs += syncLinkStates(now: now) }
    guard ownership != nil else { return (outputs, result) }
    return (holdingClears(outputs) + apply(pendingOwnership(), now: now), result)
  }

  /// Runs one step of the connection half that has no result.
  ///
  /// - Parameters:
  ///   - now: The time.
  ///   - syncing: Whether to copy link states into the registry even when no state changed
  ///     (a device just entered the registry).
  ///   - step: What to do with the connection half.
  /// - Returns: The outputs; none for a central without GATT.
  public mutating func connections(
    now: Double, syncing: Bool = false, _ step: (inout GATTBridge) -> [GATTOutput]
  ) -> [Output] {
    var outputs = connections(now: now) { (step(&$0), ()) }?.0 ?? []
    if syncing {
      let synced = syncLinkStates(now: now)
      outputs +=
        ownership == nil ? synced : holdingClears(synced) + apply(pendingOwnership(), now: now)
    }
    return outputs
  }

  /// Copies each link's state into its device's record where they differ.
  private mutating func syncLinkStates(now: Double) -> [Output] {
    guard let gatt else { return [] }
    var outputs: [Output] = []
    for (address, link) in gatt.links where discovery.registry[address]?.connection != link.state {
      if ownership != nil, discovery.registry[address] != nil {
        let failed = link.state == .failed
        linkDecisions +=
          ownership?.linkChanged(
            address, connected: link.state.isConnected, failed: failed, now: now) ?? []
      }
      outputs += discovery.linkStateChanged(address, link.state, now: now).map(Output.discovery)
      if link.state == .ready, let tree = link.tree, discovery.homeAssistant != nil {
        outputs += discovery.gattResolved(address, tree: tree) { gatt.format(for: $0) }
          .map(Output.discovery)
      }
    }
    return outputs
  }
}

extension GATTOutput {
  /// Whether this is a retained publication.
  var isRetainedPublication: Bool {
    if case .publish(_, _, let retain) = self { return retain }
    return false
  }
}
