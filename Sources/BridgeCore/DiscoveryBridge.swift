/// The discovery half of the central role, as one pure state machine: adapters (C1),
/// advertisements (C2), the device registry with availability (C3) and presence (C11).
///
/// The gateway feeds it every ``CentralEvent`` from its ``BLECentral``, calls ``tick(now:)``
/// about once a second and hands `scan` requests to ``apply(_:)``; it forwards every returned
/// ``BridgeOutput`` in order: publishes to MQTT, discovery commands to the central.
///
/// What it publishes:
///
/// | topic | retain | when |
/// |---|---|---|
/// | `<base>/bridge/<gw>/adapters` | yes | an adapter's published state changed |
/// | `<base>/bridge/<gw>/event` | no | adapter events (``AdapterTracker``), `device_discovered`, scanner watchdog steps (``ScannerWatchdogEvent/bridgeEvent``) |
/// | `<base>/bridge/<gw>/devices` | yes | membership, names, connection or availability changed; at most every ``Configuration/devicesInterval`` s, from the first tick |
/// | `<base>/<dev>/advertisement` | no | an advertisement passes the filter and the rate limiter |
/// | `<base>/<dev>/availability` | yes | a device is new, comes back or goes offline; cleared (empty retained) when forgotten or evicted |
/// | `<base>/<dev>/presence` | yes | ``PresenceEstimator`` reports; cleared when forgotten or evicted |
/// | `<prefix>/<component>/<node>/<object>/config` | yes | with ``Configuration/homeAssistant``: a device's first published advertisement, a newly decoded field, a new name, a link, a resolved GATT tree (before the advertisement that caused them); cleared when forgotten or evicted (``HomeAssistantDiscovery``) |
///
/// Advertisements without RSSI are devices the stack only remembers from its cache: they are
/// not sightings and are ignored. Filtered advertisements never enter the registry, so the
/// filter also bounds what the gateway remembers.
public struct DiscoveryBridge: Sendable {
  /// The parts and settings of a bridge; every default is the documented configuration default.
  public struct Configuration: Sendable {
    /// Which advertisements are published (`discovery.filter`).
    public var filter: AdvertisementFilter
    /// Whether scanning starts without a `scan` request (`discovery.scan_on_start`, default
    /// `true`).
    public var scanOnStart: Bool
    /// The adapters to scan on; empty for all (`bluetooth.adapters`).
    public var adapters: Set<String>
    /// The advertisement rate limiter (`advertisement.*`).
    public var rateLimiter: AdvertisementRateLimiter
    /// The empty device registry with its timing and capacity (`devices.*`).
    public var registry: DeviceRegistry
    /// The presence estimator (`presence.*`).
    public var presence: PresenceEstimator
    /// The fewest seconds between two publications of the devices list
    /// (`devices.list_interval`, default 5).
    public var devicesInterval: Double
    /// Whether published advertisements carry what ``AdvertisementDecoder`` decodes
    /// (`bluetooth.decode`, default `true`).
    public var decode: Bool
    /// Home Assistant discovery for the devices (`homeassistant.*`); `nil` when off.
    public var homeAssistant: HomeAssistantDiscovery?

    /// Makes a configuration.
    ///
    /// - Parameters:
    ///   - filter: Which advertisements are published.
    ///   - scanOnStart: Whether scanning starts without a `scan` request.
    ///   - adapters: The adapters to scan on; empty for all.
    ///   - rateLimiter: The advertisement rate limiter.
    ///   - registry: The empty device registry.
    ///   - presence: The presence estimator.
    ///   - devicesInterval: The fewest seconds between two devices-list publications.
    ///   - decode: Whether published advertisements carry their decoded values.
    ///   - homeAssistant: Home Assistant discovery, or `nil` for none.
    public init(
      filter: AdvertisementFilter = AdvertisementFilter(), scanOnStart: Bool = true,
      adapters: Set<String> = [],
      rateLimiter: AdvertisementRateLimiter = AdvertisementRateLimiter(),
      registry: DeviceRegistry = DeviceRegistry(),
      presence: PresenceEstimator = PresenceEstimator(),
      devicesInterval: Double = 5, decode: Bool = true,
      homeAssistant: HomeAssistantDiscovery? = nil
    ) {
      self.filter = filter
      self.scanOnStart = scanOnStart
      self.adapters = adapters
      self.rateLimiter = rateLimiter
      self.registry = registry
      self.presence = presence
      self.devicesInterval = devicesInterval
      self.decode = decode
      self.homeAssistant = homeAssistant
    }
  }

  /// Counters for `<base>/bridge/<gw>/health`.
  public struct Counters: Sendable, Hashable {
    /// Advertisements received.
    public var received: UInt64 = 0
    /// Advertisements without RSSI (cached devices), ignored.
    public var ignored: UInt64 = 0
    /// Advertisements the filter refused.
    public var filtered: UInt64 = 0
    /// Advertisements published.
    public var published: UInt64 = 0
  }

  /// The topic map.
  public let topics: Topics
  /// The adapters.
  public private(set) var adapters: AdapterTracker
  /// The devices.
  public internal(set) var registry: DeviceRegistry
  /// The presence judgements.
  public private(set) var presence: PresenceEstimator
  /// The advertisement rate limiter.
  public private(set) var rateLimiter: AdvertisementRateLimiter
  /// Which advertisements are published now.
  public private(set) var filter: AdvertisementFilter
  /// The counters.
  public private(set) var counters = Counters()
  /// The fewest seconds between two devices-list publications.
  public let devicesInterval: Double
  /// Whether published advertisements carry their decoded values.
  public let decode: Bool
  /// Home Assistant discovery; `nil` when off.
  public private(set) var homeAssistant: HomeAssistantDiscovery?
  /// Seconds to add to the `now` this bridge is given to get wall-clock time, for the
  /// timestamps in payloads (`ts`, `last_seen`).
  ///
  /// Every timer (offline, forget, presence, rate limits, the devices-list interval) runs on
  /// the `now` of ``handle(_:now:)`` and ``tick(now:)``, which the gateway takes from a
  /// monotonic clock so that a wall-clock jump (NTP setting the time of a Raspberry Pi without
  /// a real-time clock) fires no timer; the gateway refreshes this offset on every tick. With
  /// the default 0, `now` is wall time.
  public var wallClockOffset: Double = 0

  /// The friendly names of the configuration (`bluetooth.names`), for a device whose
  /// `device/rename` name is cleared.
  public let configuredNames: [BluetoothAddress: DeviceID]
  /// With fleet ownership, each device's owner for the devices list; `nil` without.
  var owners: [BluetoothAddress: GatewayID]?
  var devicesChanged = true
  private var devicesPublished: Double?
  /// Whether ``forgotten`` collects the devices forgotten (``CentralBridge`` drains it, so that
  /// its connection half forgets them too); off for a bridge used alone.
  var tracksForgotten = false
  /// The devices forgotten (expired, evicted, removed) since it was last drained.
  var forgotten: [BluetoothAddress] = []
  /// The devices restored from an earlier run's devices list, with what it left for them
  /// (``restore(previous:now:)``).
  var leftovers: [BluetoothAddress: Leftovers] = [:]
  /// Whether the devices list waits for ``restore(previous:now:)`` (or ``releaseDevicesList()``):
  /// the first publication would replace the list an earlier run left before it is read.
  public var holdsDevicesList = false

  /// Makes a bridge that knows no adapter or device yet.
  ///
  /// - Parameters:
  ///   - topics: The topic map.
  ///   - configuration: The parts and settings.
  public init(topics: Topics, configuration: Configuration = Configuration()) {
    self.topics = topics
    filter = configuration.filter
    adapters = AdapterTracker(
      topics: topics,
      scanning: configuration.scanOnStart ? configuration.filter.discoveryFilter : nil,
      allowedAdapters: configuration.adapters)
    registry = configuration.registry
    configuredNames = configuration.registry.naming.friendlyNames
    presence = configuration.presence
    rateLimiter = configuration.rateLimiter
    devicesInterval = configuration.devicesInterval
    decode = configuration.decode
    homeAssistant = configuration.homeAssistant
  }

  /// Takes in one event from the central.
  ///
  /// - Parameters:
  ///   - event: The event.
  ///   - now: When it happened, in seconds since the Unix epoch.
  /// - Returns: What to publish and which discovery commands to send, in order.
  public mutating func handle(_ event: CentralEvent, now: Double) -> [BridgeOutput] {
    switch event {
    case .adapterChanged(let adapter): return adapters.update(adapter)
    case .adapterRemoved(let id): return adapters.remove(id: id)
    case .stackLost: return adapters.stackLost() + stackLost(now: now)
    case .stackRefused(let error): return adapters.stackRefused(error)
    case .deviceAppeared(let advertisement), .deviceUpdated(let advertisement):
      return observe(advertisement, now: now)
    case .deviceRemoved(let address): return removed(address)
    case .servicesResolved, .notification, .notifyingChanged, .notificationBacklog: return []
    case .scannerWatchdog(let step):
      let (type, data) = step.bridgeEvent
      return [
        .publish(
          topic: topics.bridgeEvent, payload: BridgePayload.event(type: type, data: data),
          retain: false)
      ]
    case .connectionChanged(let address, let connected):
      guard let before = registry[address] else { return [] }
      let after = registry.setConnection(
        address, connected ? .connected : .disconnected, now: now)
      devicesChanged = true
      let reading = presence.setConnected(address, connected, now: now)
      return cameOnline(before, after) + presenceOutputs(address, reading)
    case .connectionRSSI(let address, let rssi):
      guard let record = registry[address] else { return [] }
      _ = registry.setConnection(address, record.connection, now: now)
      let reading = presence.record(address, rssi: rssi, now: now)
      return presenceOutputs(address, reading)
    }
  }

  /// Lets time pass: devices go offline, are forgotten, turn away; the devices list is
  /// published when it changed. Call it about once a second.
  ///
  /// - Parameter now: The time, in seconds since the Unix epoch.
  /// - Returns: What to publish.
  public mutating func tick(now: Double) -> [BridgeOutput] {
    var outputs: [BridgeOutput] = []
    let expiry = registry.expire(now: now)
    for record in expiry.wentOffline {
      outputs.append(
        .publish(topics.availability(record.id), record.availabilityJSON, retain: true))
      // Unheard since a restart (restored, no presence track): its retained presence is the
      // earlier run's.
      if presence.state(of: record.address) == nil, leftovers[record.address] != nil {
        let away = PresenceEstimator.Reading(state: .away, rssi: nil, lastSeen: record.lastSeen)
        outputs.append(
          .publish(
            topics.presence(record.id),
            away.json(gateway: topics.gateway, wallClockOffset: wallClockOffset), retain: true))
      }
    }
    for record in expiry.forgotten { outputs += forgetOutputs(record) }
    if !expiry.wentOffline.isEmpty || !expiry.forgotten.isEmpty { devicesChanged = true }
    for report in presence.expire(now: now) {
      outputs += presenceOutputs(report.address, report.reading)
    }
    if devicesChanged, !holdsDevicesList,
      devicesPublished.map({ now - $0 >= devicesInterval || now < $0 }) ?? true
    {
      outputs.append(devicesListOutput())
      devicesChanged = false
      devicesPublished = now
    }
    return outputs
  }

  /// Carries out a `scan` request.
  ///
  /// `start` with a filter replaces the filter (devices already known stay until they expire);
  /// `start` without one keeps it. Discovery runs only on powered adapters; the others start
  /// when they are powered on.
  ///
  /// - Parameter command: The command.
  /// - Returns: The discovery commands to send and the response to publish:
  ///   `{"scanning":true,"filter":{…},"adapters":["hci0"]}` (`adapters`: those discovering or
  ///   asked to) or `{"scanning":false}`.
  public mutating func apply(_ command: ScanCommand) -> (
    outputs: [BridgeOutput], response: BridgeResponse
  ) {
    let outputs: [BridgeOutput]
    var data: JSONObject
    switch command.action {
    case .start(let newFilter):
      if let newFilter { filter = newFilter }
      outputs = adapters.setScanning(filter.discoveryFilter)
      let active = adapters.adapters.keys.sorted().filter { adapters.shouldDiscover($0) }
      data = [
        "scanning": true, "filter": filter.json, "adapters": .array(active.map { .string($0) }),
      ]
    case .stop:
      outputs = adapters.setScanning(nil)
      data = ["scanning": false]
    }
    return (outputs, .success(data, transaction: nil))
  }

  /// Carries out a `device/remove` request (`{"device":"A4C1381E29DF"}`, an id, or an address):
  /// the device is forgotten here (``forget(_:)``: registry, presence, rate limiter, its
  /// retained availability and presence cleared) and the central is asked to remove it from
  /// the stack's cache, which also disconnects it.
  ///
  /// - Parameter body: The request's JSON object.
  /// - Returns: What to do, and the response: `{"device":"A4C1381E29DF","forgotten":true}`
  ///   (`forgotten` false when the gateway did not know the device; the stack is asked all the
  ///   same), or `invalid_payload` / `unknown_device`.
  public mutating func remove(_ body: JSONObject) -> (
    outputs: [BridgeOutput], response: BridgeResponse
  ) {
    let address: BluetoothAddress
    do throws(BridgeResponse) {
      address = try DeviceRequestBody.address(in: body) { try? BluetoothAddress($0) }
    } catch {
      return ([], error)
    }
    let id = registry[address]?.id ?? DeviceID(address: address)
    let forgotten = forget(address)
    return (
      forgotten + [.removeDevice(address)],
      .success(
        ["device": .string(id.rawValue), "forgotten": .bool(!forgotten.isEmpty)], transaction: nil)
    )
  }

  /// Forgets a device now (a `device/remove` request): it leaves the registry, the presence
  /// estimator and the rate limiter, and its retained availability and presence are cleared.
  ///
  /// - Parameter address: The device's address.
  /// - Returns: What to publish; nothing for an unknown device.
  public mutating func forget(_ address: BluetoothAddress) -> [BridgeOutput] {
    guard let record = registry.remove(address) else { return [] }
    devicesChanged = true
    return forgetOutputs(record)
  }

  /// The stack removed a device (bluetoothd drops a device it has not heard for
  /// `TemporaryTimeout`, 30 s by default). A device on a **private random** address is
  /// forgotten at once: that address was rotated away and will not be heard again, and keeping
  /// it would let a place full of phones fill the registry (see
  /// ``BluetoothAddress/isPrivateRandom``). Public and static addresses come back: they stay
  /// until ``DeviceRegistry/offlineAfter`` and ``DeviceRegistry/forgetAfter`` say otherwise.
  /// Connected devices, and devices being connected, are never forgotten here.
  private mutating func removed(_ address: BluetoothAddress) -> [BridgeOutput] {
    guard let record = registry[address], record.addressType == .random,
      address.isPrivateRandom, !record.isLive
    else { return [] }
    return forget(address)
  }

  /// Takes a link state from the connection half (``CentralBridge``): the device's record, and
  /// so the devices list, shows the state `<dev>/connection` shows; presence follows whether
  /// the device is connected.
  ///
  /// - Parameters:
  ///   - address: The device's address.
  ///   - state: Its link's state.
  ///   - now: The time.
  /// - Returns: What to publish (a presence reading when it became connected or
  ///   disconnected); nothing for a device the registry does not hold.
  public mutating func linkStateChanged(
    _ address: BluetoothAddress, _ state: ConnectionState, now: Double
  ) -> [BridgeOutput] {
    guard let record = registry[address], record.connection != state else { return [] }
    let after = registry.setConnection(address, state, now: now)
    devicesChanged = true
    var outputs = cameOnline(record, after)
    if homeAssistant != nil { outputs += homeAssistant?.linked(record) ?? [] }
    guard record.connection.isConnected != state.isConnected else { return outputs }
    let reading = presence.setConnected(address, state.isConnected, now: now)
    return outputs + presenceOutputs(address, reading)
  }

  /// A central subscribed to the gateway's transfer characteristic, or unsubscribed (the
  /// peripheral role, ``PeripheralEvent``): the one device registry holds it too, admitted when
  /// new, with `"subscriber":{"mtu":…}` in the devices list while subscribed; a subscriber is
  /// online and never offline, forgotten or evicted. Its connection state stays the stack's
  /// to write.
  ///
  /// - Parameters:
  ///   - address: The central's address.
  ///   - subscriber: Its subscription, or `nil` when it unsubscribed.
  ///   - now: The time.
  /// - Returns: What to publish: its availability when it came online, the clears of a device
  ///   evicted for it.
  public mutating func peripheralCentral(
    _ address: BluetoothAddress, _ subscriber: DeviceRecord.Subscriber?, now: Double
  ) -> [BridgeOutput] {
    guard registry[address]?.subscriber != subscriber,
      let change = registry.setSubscriber(address, subscriber, now: now)
    else { return [] }
    devicesChanged = true
    var outputs = change.evicted.map { forgetOutputs($0) } ?? []
    if change.before?.online != true {
      outputs.append(
        .publish(topics.availability(change.after.id), change.after.availabilityJSON, retain: true))
    }
    return outputs
  }

  /// A connected device's GATT tree is known: its Home Assistant value and control entities
  /// (``HomeAssistantDiscovery/resolved(_:tree:format:)``).
  ///
  /// - Parameters:
  ///   - address: The device's address.
  ///   - tree: Its GATT tree.
  ///   - format: The value format of each characteristic.
  /// - Returns: The configs to publish; none without Home Assistant discovery.
  public mutating func gattResolved(
    _ address: BluetoothAddress, tree: GATTTree, format: (CharacteristicPath) -> ValueFormat
  ) -> [BridgeOutput] {
    guard homeAssistant != nil, let record = registry[address] else { return [] }
    return homeAssistant?.resolved(record, tree: tree, format: format) ?? []
  }

  /// Gives a device another id (a `device/rename`): the old id's retained availability and
  /// presence are cleared and published under the new one; its Home Assistant configs are
  /// published again with the new topics.
  ///
  /// - Parameters:
  ///   - address: The device.
  ///   - id: Its new id.
  /// - Returns: What to publish.
  /// - Throws: When another device has the id.
  public mutating func rename(_ address: BluetoothAddress, to id: DeviceID)
    throws(DeviceRegistry.RenameConflict) -> [BridgeOutput]
  {
    guard let (before, after) = try registry.rename(address, to: id), before.id != after.id else {
      return []
    }
    devicesChanged = true
    var outputs: [BridgeOutput] = [
      .publish(topic: topics.availability(before.id), payload: [], retain: true),
      .publish(topic: topics.presence(before.id), payload: [], retain: true),
    ]
    if homeAssistant != nil {
      // Its configs again under the new id: the connection entity when it had one (a link's
      // state was seen); the GATT entities are the caller's (``gattResolved(_:tree:format:)``,
      // the tree is the connection half's).
      let wasLinked = homeAssistant?.isLinked(address) ?? false
      outputs += homeAssistant?.forget(address) ?? []
      outputs += homeAssistant?.observed(after, decoded: nil) ?? []
      if wasLinked { outputs += homeAssistant?.linked(after) ?? [] }
    }
    return outputs + availabilityAndPresence(after)
  }

  /// Notes a device's owner for the devices list (fleet ownership); `nil` for none.
  ///
  /// - Parameters:
  ///   - address: The device.
  ///   - owner: Its owner.
  public mutating func setOwner(_ address: BluetoothAddress, _ owner: GatewayID?) {
    if owners == nil {
      owners = [:]
      devicesChanged = true
    }
    // In place: no copy of the table per call.
    guard owners![address] != owner else { return }
    owners![address] = owner
    devicesChanged = true
  }

  /// The retained device-level state of one device as this gateway knows it — availability,
  /// presence and Home Assistant configs — for the gateway that just became its owner.
  ///
  /// - Parameter address: The device.
  /// - Returns: The retained publications; none for a device the registry does not hold.
  public func deviceState(_ address: BluetoothAddress) -> [BridgeOutput] {
    guard let record = registry[address] else { return [] }
    return (homeAssistant?.republish(address) ?? []) + availabilityAndPresence(record)
  }

  /// A device's retained availability and (when judged) presence, under its current id.
  private func availabilityAndPresence(_ record: DeviceRecord) -> [BridgeOutput] {
    var outputs: [BridgeOutput] = [
      .publish(topics.availability(record.id), record.availabilityJSON, retain: true)
    ]
    if let reading = presence.lastReading(of: record.address) {
      outputs.append(
        .publish(
          topics.presence(record.id),
          reading.json(gateway: topics.gateway, wallClockOffset: wallClockOffset), retain: true))
    }
    return outputs
  }

  /// Every device's Home Assistant configs again (Home Assistant said `online`).
  public func homeAssistantRepublish() -> [BridgeOutput] {
    homeAssistant?.republish() ?? []
  }

  /// Notes that starting discovery on an adapter failed (the central threw).
  ///
  /// - Parameters:
  ///   - adapter: The adapter's id.
  ///   - error: What went wrong.
  /// - Returns: The event to publish.
  public mutating func discoveryFailed(adapter: String, error: CentralError) -> [BridgeOutput] {
    adapters.discoveryFailed(id: adapter, error: error)
  }

  /// The discovery figures for the health payload: `{"adverts_received":…,"adverts_ignored":…,
  /// "adverts_filtered":…,"adverts_published":…,"devices":…,"device_evictions":…,
  /// "device_refusals":…}`.
  public var healthJSON: JSONObject {
    [
      "adverts_received": .integer(Int64(clamping: counters.received)),
      "adverts_ignored": .integer(Int64(clamping: counters.ignored)),
      "adverts_filtered": .integer(Int64(clamping: counters.filtered)),
      "adverts_published": .integer(Int64(clamping: counters.published)),
      "devices": .integer(Int64(registry.count)),
      "device_evictions": .integer(Int64(clamping: registry.evictions)),
      "device_refusals": .integer(Int64(clamping: registry.refusals)),
    ]
  }

  /// The devices list as it is now (the payload of `<base>/bridge/<gw>/devices`).
  public var devicesJSON: JSONValue {
    registry.json(owner: topics.gateway, owners: owners, wallClockOffset: wallClockOffset)
  }

  /// The retained devices list as it is now.
  public func devicesListOutput() -> BridgeOutput {
    .publish(topics.bridgeDevices, devicesJSON, retain: true)
  }

  private mutating func observe(_ advertisement: Advertisement, now: Double) -> [BridgeOutput] {
    counters.received += 1
    guard let rssi = advertisement.rssi else {
      counters.ignored += 1
      return []
    }
    guard filter.accepts(advertisement) else {
      counters.filtered += 1
      return []
    }
    guard let observation = registry.observe(advertisement, now: now) else { return [] }
    var outputs: [BridgeOutput] = []
    for evicted in observation.evicted { outputs += forgetOutputs(evicted) }
    let record = observation.record
    if observation.isNew {
      var data: JSONObject = [
        "id": .string(record.id.rawValue), "address": .string(record.address.description),
        "addr_type": .string(record.addressType.rawValue),
      ]
      if let name = advertisement.nameText { data["name"] = .string(name) }
      outputs.append(
        .publish(
          topic: topics.bridgeEvent,
          payload: BridgePayload.event(type: "device_discovered", data: data), retain: false))
    }
    if observation.cameOnline {
      outputs.append(
        .publish(topics.availability(record.id), record.availabilityJSON, retain: true))
    }
    if observation.listChanged || !observation.evicted.isEmpty { devicesChanged = true }
    if rateLimiter.shouldPublish(advertisement, now: now) {
      counters.published += 1
      let decoded = decode ? AdvertisementDecoder.decode(advertisement) : nil
      if homeAssistant != nil {
        outputs += homeAssistant?.observed(record, decoded: decoded) ?? []
      }
      outputs.append(
        .publish(
          topic: topics.advertisement(record.id),
          payload: advertisement.jsonBytes(
            gateway: topics.gateway, time: now + wallClockOffset, decoded: decoded),
          retain: false))
    }
    // Mutate first, then read: `presenceOutputs(…, presence.record(…))` would borrow a copy of
    // `self` for the call while `presence` changes, copying every track on each advertisement.
    let reading = presence.record(record.address, rssi: rssi, now: now)
    outputs += presenceOutputs(record.address, reading)
    return outputs
  }

  /// The stack went away, and every link with it: devices it said were connected are not any
  /// more (a new stack reports only devices, not the links the old one had). Only the states
  /// the stack wrote (`connected`; a link's state at rest is `discovering` or `ready`, never
  /// `connected`): a linked device's record is its link's to change (``CentralBridge``), so
  /// that the change reaches fleet ownership too.
  private mutating func stackLost(now: Double) -> [BridgeOutput] {
    var outputs: [BridgeOutput] = []
    for record in registry.records where record.connection == .connected {
      _ = registry.setConnection(record.address, .disconnected, now: now)
      devicesChanged = true
      let reading = presence.setConnected(record.address, false, now: now)
      outputs += presenceOutputs(record.address, reading)
    }
    return outputs
  }

  /// The device's availability when a connection brought it back online (a device that went
  /// offline unheard, then connected: it is online while connected, and says so).
  private func cameOnline(_ before: DeviceRecord, _ after: DeviceRecord?) -> [BridgeOutput] {
    guard !before.online, let after, after.online else { return [] }
    return [.publish(topics.availability(after.id), after.availabilityJSON, retain: true)]
  }

  private func presenceOutputs(
    _ address: BluetoothAddress, _ reading: PresenceEstimator.Reading?
  ) -> [BridgeOutput] {
    guard let reading, let record = registry[address] else { return [] }
    return [
      .publish(
        topics.presence(record.id),
        reading.json(gateway: topics.gateway, wallClockOffset: wallClockOffset), retain: true)
    ]
  }

  /// Forgets a device everywhere and clears its retained messages.
  private mutating func forgetOutputs(_ record: DeviceRecord) -> [BridgeOutput] {
    if tracksForgotten { forgotten.append(record.address) }
    rateLimiter.forget(record.address)
    presence.forget(record.address)
    let configs = homeAssistant != nil ? (homeAssistant?.forget(record.address) ?? []) : []
    return configs + [
      .publish(topic: topics.availability(record.id), payload: [], retain: true),
      .publish(topic: topics.presence(record.id), payload: [], retain: true),
    ] + leftoverClears(record)
  }
}
