import Testing

@testable import BridgeCore

@Suite("Central bridge with fleet ownership: the device plane is the owner's alone")
struct CentralBridgeOwnershipTests {
  let t0 = Fixture.t0
  let sensor = GATTHarness.sensor
  let own = GatewayInstance(id: "run0", started: 0)
  let hall = GatewayInstance(id: "hall1", started: 0)

  /// A bridge of gateway `pi` that connects the sensor by policy, with ownership on; the broker
  /// holds pi's and hall's `online` states.
  func bridge(policy: Set<BluetoothAddress> = [GATTHarness.sensor]) -> CentralBridge {
    var bridge = CentralBridge(
      discovery: DiscoveryBridge(topics: Fixture.topics, configuration: .init(devicesInterval: 0)),
      gatt: GATTBridge(
        topics: Fixture.topics,
        configuration: .init(policy: ConnectionPolicy(addresses: policy))),
      ownership: OwnershipArbiter(topics: Fixture.topics, instance: "run0", freeSlots: 5))
    _ = bridge.fleetMessage(
      .state(GatewayID("pi")), payload: own.statePayload(online: true), now: t0)
    _ = bridge.fleetMessage(
      .state(GatewayID("hall")), payload: hall.statePayload(online: true), now: t0)
    return bridge
  }

  func claim(_ gateway: String, _ instance: String, rssi: Double? = -50, reason: String = "unowned")
    -> [UInt8]
  {
    OwnershipClaim(gateway: GatewayID(gateway), instance: instance, rssi: rssi, reason: reason)
      .payload
  }

  /// The topics published among `outputs`.
  func published(_ outputs: [CentralBridge.Output]) -> [String] {
    outputs.compactMap {
      switch $0 {
      case .discovery(.publish(let topic, _, _)), .gatt(.publish(let topic, _, _)): topic.rawValue
      case .fleet(.claim(let topic, _)): "claim " + topic.rawValue
      default: nil
      }
    }
  }

  func events(_ outputs: [CentralBridge.Output]) throws -> [JSONValue] {
    try outputs.compactMap {
      guard case .discovery(.publish(let topic, let payload, _)) = $0,
        topic.rawValue == "gatt2mqtt/bridge/pi/event"
      else { return nil }
      return try JSONValue.parse(payload)
    }
  }

  func connects(_ outputs: [CentralBridge.Output]) -> Bool {
    outputs.contains { if case .gatt(.connect) = $0 { true } else { false } }
  }

  /// Hears the sensor every second from `start` until pi claims it (at most 15 s), then hands
  /// the claim back as the broker does: pi owns the sensor.
  ///
  /// - Returns: When it owns it.
  func takeOwnership(
    _ bridge: inout CentralBridge, of device: String = "A4:C1:38:1E:29:DF", from start: Double = 0,
    rssi: Int = -45
  ) throws -> Double {
    let address = Fixture.address(device)
    let topic = "gatt2mqtt/\(DeviceID(address: address).rawValue)/owner"
    var claimPayload: [UInt8]?
    var now = t0 + start
    while claimPayload == nil, now < t0 + start + 15 {
      let outputs =
        bridge.handle(.deviceUpdated(Fixture.advert(device, rssi: rssi)), now: now)
        + bridge.tick(now: now)
      for case .fleet(.claim(let claimed, let payload)) in outputs where claimed.rawValue == topic {
        claimPayload = payload
      }
      now += 1
    }
    _ = bridge.fleetMessage(.owner(address), payload: try #require(claimPayload), now: now)
    #expect(bridge.ownership?.owns(address) == true)
    return now
  }

  /// Connects the owned sensor once the settle time after `owned` has passed.
  ///
  /// - Returns: The outputs of the link coming up, and when it came up.
  func link(_ bridge: inout CentralBridge, owned: Double) -> ([CentralBridge.Output], Double) {
    let settled = owned + GATTBridge.ownershipSettle
    #expect(connects(bridge.tick(now: settled)))
    var linked = bridge.connections(now: settled + 1) {
      $0.connectFinished(sensor, error: nil, now: settled + 1)
    }
    linked += bridge.handle(.connectionChanged(sensor, connected: true), now: settled + 1)
    return (linked, settled + 1)
  }

  @Test func aDeviceAnotherGatewayOwnsGetsNothingDeviceLevelFromThisOne() throws {
    var bridge = bridge()
    _ = bridge.fleetMessage(.owner(sensor), payload: claim("hall", "hall1"), now: t0)
    var outputs: [CentralBridge.Output] = []
    for step in 0..<20 {
      let now = t0 + Double(step)
      outputs += bridge.handle(.deviceUpdated(Fixture.advert(rssi: -55)), now: now)
      outputs += bridge.tick(now: now)
    }
    let device = published(outputs).filter { $0.hasPrefix("gatt2mqtt/A4C1381E29DF/") }
    #expect(device.isEmpty, "\(device)")
    #expect(!published(outputs).contains { $0.hasPrefix("claim") })
    #expect(!connects(outputs))
    // Its own bridge topics still say what it hears, with the owner in the devices list.
    let list = try #require(
      outputs.compactMap { output -> [UInt8]? in
        guard case .discovery(.publish(let topic, let payload, _)) = output,
          topic.rawValue == "gatt2mqtt/bridge/pi/devices"
        else { return nil }
        return payload
      }.last)
    #expect(try JSONValue.parse(list).arrayValue?.first?["owner"] == "hall")

    // Requests about it: silent here (the owner answers), but what they want is kept.
    let path = CharacteristicPath(
      device: DeviceID(address: sensor), service: GATTHarness.battery,
      characteristic: BluetoothUUID(uuid16: 0x2A19))
    let silent = bridge.request(about: path.device, now: t0 + 21) {
      $0.request(.notify(path), payload: Array("on".utf8), now: t0 + 21)
    }
    #expect(silent.isEmpty)
    let refused = bridge.deviceRequest(
      connect: true, body: ["device": "A4:C1:38:1E:29:DF"], now: t0 + 21)
    let response = try #require(refused?.1)
    #expect(response.errorCode == "not_owner")
    #expect(response.message == "A4C1381E29DF is owned by gateway 'hall'; send the request to it")
    // Nor does it forget the device for the fleet: its owner clears the retained topics.
    let (removed, removal) = bridge.remove(["device": "A4C1381E29DF"], now: t0 + 22)
    #expect(removal.errorCode == "not_owner")
    #expect(removed.isEmpty)
  }

  @Test func gainingADevicePublishesItsStateAndConnectsItLosingItTearsDownAndForgets() throws {
    var bridge = bridge()
    _ = bridge.fleetMessage(.owner(sensor), payload: claim("hall", "hall1"), now: t0)
    for step in 0..<5 {
      _ = bridge.handle(.deviceUpdated(Fixture.advert(rssi: -55)), now: t0 + Double(step))
    }
    // hall's last will: the device is unowned, and pi claims it after its ranked delay.
    var outputs = bridge.fleetMessage(
      .state(GatewayID("hall")), payload: hall.statePayload(online: false), now: t0 + 5)
    var claimPayload: [UInt8]?
    for step in 5..<15 where claimPayload == nil {
      outputs = bridge.handle(.deviceUpdated(Fixture.advert(rssi: -55)), now: t0 + Double(step))
      outputs += bridge.tick(now: t0 + Double(step))
      for case .fleet(.claim(let topic, let payload)) in outputs {
        #expect(topic.rawValue == "gatt2mqtt/A4C1381E29DF/owner")
        claimPayload = payload
      }
      #expect(!connects(outputs))
    }
    let payload = try #require(claimPayload)
    #expect(try OwnershipClaim(parsing: payload).reason == "owner_offline")

    // The broker hands the claim back: pi owns the device.
    let gained = bridge.fleetMessage(.owner(sensor), payload: payload, now: t0 + 15)
    let event = try #require(try events(gained).first)
    #expect(event["type"] == "ownership_gained")
    #expect(event["data"]?["from"] == "hall")
    #expect(event["data"]?["reason"] == "owner_offline")
    let topics = published(gained)
    #expect(topics.contains("gatt2mqtt/A4C1381E29DF/availability"))
    #expect(topics.contains("gatt2mqtt/A4C1381E29DF/presence"))
    #expect(topics.contains("gatt2mqtt/A4C1381E29DF/connection"))
    // It connects after the settle time (a claim racing its own would arrive before).
    #expect(!connects(gained))
    #expect(connects(bridge.tick(now: t0 + 15 + GATTBridge.ownershipSettle)))

    // hall comes back and claims it (a stronger challenger): pi tears down and forgets.
    let hall2 = GatewayInstance(id: "hall2", started: 1)
    _ = bridge.fleetMessage(
      .state(GatewayID("hall")), payload: hall2.statePayload(online: true), now: t0 + 60)
    let lost = bridge.fleetMessage(
      .owner(sensor), payload: claim("hall", "hall2", reason: "stronger"), now: t0 + 60)
    let lostEvent = try #require(try events(lost).first)
    #expect(lostEvent["type"] == "ownership_lost")
    #expect(lostEvent["data"]?["to"] == "hall")
    try expectForgotten(lost)
    #expect(lost.contains(.gatt(.disconnect(sensor))))
    #expect(!published(lost).contains { $0.hasPrefix("gatt2mqtt/A4C1381E29DF/") })
  }

  @Test func aConnectionAndANotifyWishSentWhileAnotherOwnedTheDeviceFollowItToThisGateway() throws {
    var bridge = bridge(policy: [])  // no connection by configuration
    _ = bridge.fleetMessage(.owner(sensor), payload: claim("hall", "hall1"), now: t0)
    _ = bridge.handle(.deviceUpdated(Fixture.advert(rssi: -55)), now: t0)
    // The retained notify wish and a connection request reach every gateway; hall serves them.
    let battery = CharacteristicPath(
      device: DeviceID(address: sensor), service: GATTHarness.battery,
      characteristic: GATTHarness.batteryLevel)
    var silent = bridge.request(about: battery.device, now: t0 + 1) {
      $0.request(.notify(battery), payload: Array("on".utf8), now: t0 + 1)
    }
    silent += bridge.request(about: battery.device, now: t0 + 1) {
      $0.request(
        .connectionSet(battery.device), payload: Array(#"{"state":"connected"}"#.utf8),
        now: t0 + 1)
    }
    #expect(published(silent).isEmpty && !connects(silent))

    // hall's last will: pi takes the device over and carries out what was asked of it.
    _ = bridge.fleetMessage(
      .state(GatewayID("hall")), payload: hall.statePayload(online: false), now: t0 + 2)
    var (linked, up) = link(&bridge, owned: try takeOwnership(&bridge, from: 2, rssi: -55))
    linked += bridge.handle(.servicesResolved(sensor, GATTHarness.tree), now: up + 1)
    func executed(_ outputs: [CentralBridge.Output]) -> [GATTOperation] {
      outputs.compactMap { output -> GATTOperation? in
        guard case .gatt(.execute(let operation)) = output else { return nil }
        return operation
      }
    }
    // One operation at a time on a link: finish each to get the next.
    var operations: [GATTOperation] = []
    var pending = executed(linked)
    while let operation = pending.first, operations.count < 10 {
      pending.removeFirst()
      operations.append(operation)
      pending += executed(
        bridge.connections(now: up + 2) {
          $0.operationFinished(operation.id, result: .success([]), now: up + 2)
        })
    }
    #expect(
      operations.contains {
        $0.kind == .notify(true)
          && $0.characteristic == GATTHarness.id(GATTHarness.battery, GATTHarness.batteryLevel)
      }, "\(operations)")
  }

  @Test func aCleanStopSaysOwnershipLostForEveryOwnedDevice() throws {
    var bridge = bridge()
    #expect(bridge.stopping().isEmpty)
    _ = try takeOwnership(&bridge)
    let said = try events(bridge.stopping())
    #expect(said.count == 1)
    #expect(said.first?["type"] == "ownership_lost")
    #expect(said.first?["data"]?["reason"] == "stopping")
    #expect(said.first?["data"]?["to"] == .null)
  }

  /// `device/remove` of a connected device this gateway owns: the registry forgets it at once,
  /// so its link state no longer reaches the arbiter the usual way; the owner's claim must still
  /// stop saying `connected`, or no other gateway could ever take the device — and, the device
  /// forgotten, it is given up.
  @Test func removingAConnectedOwnedDeviceRefreshesTheClaimAsNotConnected() throws {
    var bridge = bridge()
    var (linked, up) = link(&bridge, owned: try takeOwnership(&bridge))
    for second in 1..<4 { linked += bridge.tick(now: up + Double(second)) }
    let settled = up - 1
    var claims: [OwnershipClaim] = []
    for case .fleet(.claim(_, let payload)) in linked {
      claims.append(try OwnershipClaim(parsing: payload))
    }
    #expect(claims.last?.connected == true)

    let (removed, response) = bridge.remove(["device": "A4C1381E29DF"], now: settled + 10)
    #expect(response.ok)
    // The link's end reaches the claim at once; the device forgotten, the claim is then given
    // up (cleared): another gateway may take the device.
    var after: [[UInt8]] = []
    for case .fleet(.claim(_, let payload)) in removed + bridge.tick(now: settled + 12) {
      after.append(payload)
    }
    let first = try OwnershipClaim(parsing: try #require(after.first))
    #expect(!first.connected, "\(after)")
    #expect(after.last == [], "\(after)")
  }

  @Test func answeringForADeviceNoOneOwnsPublishesNoRetainedState() {
    var bridge = bridge()
    _ = bridge.fleetMessage(
      .state(GatewayID("hall")), payload: hall.statePayload(online: false), now: t0)
    _ = bridge.handle(.deviceUpdated(Fixture.advert(rssi: -55)), now: t0)
    let outputs = bridge.request(about: DeviceID(address: sensor), now: t0 + 0.5) {
      $0.request(
        .connectionSet(DeviceID(address: sensor)), payload: Array(#"{"state":"connected"}"#.utf8),
        now: t0 + 0.5)
    }
    #expect(published(outputs).contains("gatt2mqtt/A4C1381E29DF/connection/result"))
    #expect(!published(outputs).contains("gatt2mqtt/A4C1381E29DF/connection"))
  }

  @Test func whileTheBrokerIsAwayNothingDeviceLevelIsPublishedAndItComesBackAfter() throws {
    var bridge = bridge()
    _ = bridge.fleetMessage(
      .state(GatewayID("hall")), payload: hall.statePayload(online: false), now: t0)
    _ = try takeOwnership(&bridge, rssi: -55)
    // The connection drops: the device's retained state is forgotten (not re-published by
    // the reconnect), and nothing device-level goes out meanwhile.
    let lost = bridge.brokerLost()
    try expectForgotten(lost)
    let quiet =
      bridge.handle(.deviceUpdated(Fixture.advert(rssi: -40)), now: t0 + 11)
      + bridge.tick(now: t0 + 12)
    #expect(!published(quiet).contains { $0.contains("A4C1381E29DF") }, "\(published(quiet))")
    // Our will handed back first changes nothing; our online state resumes the device.
    _ = bridge.fleetMessage(
      .state(GatewayID("pi")), payload: own.statePayload(online: false), now: t0 + 13)
    let back = bridge.fleetMessage(
      .state(GatewayID("pi")), payload: own.statePayload(online: true), now: t0 + 14)
    #expect(published(back).contains("gatt2mqtt/A4C1381E29DF/availability"))
    #expect(published(back).contains("gatt2mqtt/A4C1381E29DF/connection"))
    #expect(bridge.ownership?.owns(sensor) == true)
  }

  @Test(
    "a device forgotten while the broker is away: its retained state is cleared when the gateway is back, not left for good"
  )
  func clearsMadeWhileTheBrokerIsAwayGoOutAfter() throws {
    var bridge = bridge(policy: [])
    let owned = try takeOwnership(&bridge)
    _ = bridge.brokerLost()
    // Unheard past forget_after while the broker is away: forgotten, nothing goes out.
    let quiet = bridge.tick(now: owned + 1_000)
    #expect(bridge.discovery.registry[sensor] == nil)
    #expect(!published(quiet).contains { $0.contains("A4C1381E29DF") }, "\(published(quiet))")
    let back = bridge.fleetMessage(
      .state(GatewayID("pi")), payload: own.statePayload(online: true), now: owned + 1_001)
    var cleared: [String] = []
    for case .discovery(.publish(let topic, let payload, true)) in back where payload.isEmpty {
      cleared.append(topic.rawValue)
    }
    #expect(cleared.contains("gatt2mqtt/A4C1381E29DF/availability"), "\(published(back))")
    #expect(cleared.contains("gatt2mqtt/A4C1381E29DF/presence"), "\(published(back))")
  }

  @Test(
    "the stack lost under a connected owned device: the claim stops saying connected, so another gateway may take it over"
  )
  func stackLostReachesTheClaim() throws {
    var bridge = bridge()
    var (linked, up) = link(&bridge, owned: try takeOwnership(&bridge))
    linked += bridge.handle(.servicesResolved(sensor, GATTHarness.tree), now: up)
    for second in 1..<4 { linked += bridge.tick(now: up + Double(second)) }
    var claims: [OwnershipClaim] = []
    for case .fleet(.claim(_, let payload)) in linked where !payload.isEmpty {
      claims.append(try OwnershipClaim(parsing: payload))
    }
    #expect(claims.last?.connected == true)
    var after = bridge.handle(.stackLost, now: up + 5)
    for second in 6..<9 { after += bridge.tick(now: up + Double(second)) }
    var later: [OwnershipClaim] = []
    for case .fleet(.claim(_, let payload)) in after where !payload.isEmpty {
      later.append(try OwnershipClaim(parsing: payload))
    }
    #expect(later.last.map { !$0.connected } == true, "\(later)")
  }

  @Test(
    "the devices list's owner follows a claimant's instance switch within the tick it settles in")
  func ownerColumnFollowsAnInstanceSwitch() throws {
    var bridge = bridge(policy: [])
    _ = bridge.handle(.deviceUpdated(Fixture.advert(rssi: -80)), now: t0)
    _ = bridge.fleetMessage(.owner(sensor), payload: claim("hall", "hall1"), now: t0)
    func listed(_ bridge: CentralBridge) -> JSONValue? {
      bridge.discovery.devicesJSON.arrayValue?.first?["owner"]
    }
    #expect(listed(bridge) == "hall")
    // hall restarts: a new run online under its id, the old one never answers.
    _ = bridge.fleetMessage(
      .state(GatewayID("hall")),
      payload: GatewayInstance(id: "hall2", started: 1).statePayload(online: true), now: t0 + 1)
    for second in 2..<40 {
      _ = bridge.tick(now: t0 + Double(second))
      let owner = bridge.ownership?.owner(of: sensor)
      #expect(listed(bridge) == (owner.map { .string($0.rawValue) } ?? .null), "at \(second) s")
    }
    #expect(bridge.ownership?.owner(of: sensor) == nil, "hall1's claim is no run's now")
  }

  @Test("clears past the limit held while the broker is away are counted and said when it is back")
  func heldClearsPastTheLimitAreSaid() throws {
    var bridge = bridge(policy: [])
    bridge.heldClearLimit = 1
    let owned = try takeOwnership(&bridge)
    _ = bridge.brokerLost()
    _ = bridge.tick(now: owned + 1_000)  // forgotten: availability and presence to clear
    let back = bridge.fleetMessage(
      .state(GatewayID("pi")), payload: own.statePayload(online: true), now: owned + 1_001)
    let dropped = try events(back).filter { $0["type"] == "retained_clears_dropped" }
    #expect(dropped.count == 1)
    #expect(dropped.first?["data"]?["count"] == 1)
    let again = bridge.fleetMessage(
      .state(GatewayID("pi")), payload: own.statePayload(online: true), now: owned + 1_002)
    #expect(try events(again).filter { $0["type"] == "retained_clears_dropped" }.isEmpty)
  }

  @Test(
    "clears held while the broker is away are dropped for a device another gateway took meanwhile: its new owner's state stands"
  )
  func heldClearsOfALostDevice() throws {
    var bridge = bridge(policy: [])
    let owned = try takeOwnership(&bridge)
    // A second device owned, heard all along: its resumption sends the held clears.
    _ = try takeOwnership(&bridge, of: "A4:C1:38:00:00:02", from: owned - t0)
    _ = bridge.brokerLost()
    // The sensor unheard past forget_after (the other device still heard): its clears held.
    for step in stride(from: 10.0, through: 1_000, by: 10) {
      _ = bridge.handle(
        .deviceUpdated(Fixture.advert("A4:C1:38:00:00:02", rssi: -45)), now: owned + step)
      _ = bridge.tick(now: owned + step)
    }
    #expect(bridge.discovery.registry[sensor] == nil)
    // hall's claim arrives before our online state is back: the device is lost.
    let lost = bridge.fleetMessage(
      .owner(sensor), payload: claim("hall", "hall1", reason: "owner_offline"),
      now: owned + 1_001)
    #expect(try events(lost).contains { $0["type"] == "ownership_lost" })
    let back = bridge.fleetMessage(
      .state(GatewayID("pi")), payload: own.statePayload(online: true), now: owned + 1_002)
    #expect(published(back).contains("gatt2mqtt/A4C138000002/availability"))  // resumed
    #expect(!published(back).contains { $0.hasPrefix("gatt2mqtt/A4C1381E29DF/") })
  }

  @Test(
    "a device forgotten while owned and heard again before the next decision keeps its claim"
  )
  func forgottenThenHeardAgainKeepsItsClaim() throws {
    var bridge = bridge(policy: [])
    let owned = try takeOwnership(&bridge)
    _ = bridge.brokerLost()
    _ = bridge.tick(now: owned + 1_000)  // forgotten while nothing can be decided
    _ = bridge.handle(.deviceUpdated(Fixture.advert(rssi: -45)), now: owned + 1_001)
    var outputs = bridge.fleetMessage(
      .state(GatewayID("pi")), payload: own.statePayload(online: true), now: owned + 1_002)
    outputs += bridge.tick(now: owned + 1_003)
    var cleared = false
    for case .fleet(.claim(_, let payload)) in outputs where payload.isEmpty { cleared = true }
    #expect(!cleared)
    #expect(bridge.ownership?.owns(sensor) == true)
  }

  @Test func requestsAboutADeviceNoOneOwnsAreAnsweredByTheLowestOnlineGateway() {
    var bridge = bridge()  // pi and hall online: hall < pi, so hall answers
    let path = CharacteristicPath(
      device: DeviceID(address: sensor), service: GATTHarness.battery,
      characteristic: BluetoothUUID(uuid16: 0x2A19))
    let silent = bridge.request(about: path.device, now: t0) {
      $0.request(.get(path), payload: [], now: t0)
    }
    #expect(silent.isEmpty)
    _ = bridge.fleetMessage(
      .state(GatewayID("hall")), payload: hall.statePayload(online: false), now: t0 + 1)
    let answered = bridge.request(about: path.device, now: t0 + 1) {
      $0.request(.get(path), payload: [], now: t0 + 1)
    }
    #expect(published(answered).contains { $0.hasSuffix("/result") }, "\(published(answered))")
  }

  @Test(
    "a device the owner forgets (unheard past forget_after) has its claim cleared: no claim stays retained for a device no gateway keeps"
  )
  func forgottenDeviceReleasesItsClaim() throws {
    var bridge = bridge(policy: [])
    let owned = try takeOwnership(&bridge)
    var cleared = false
    var now = owned
    while !cleared, now < owned + 1_000 {
      now += 10
      for case .fleet(.claim(let topic, let payload)) in bridge.tick(now: now)
      where topic.rawValue == "gatt2mqtt/A4C1381E29DF/owner" && payload.isEmpty {
        cleared = true
      }
    }
    #expect(cleared)
    #expect(bridge.discovery.registry[sensor] == nil)
    #expect(now - owned >= 900)  // not before it was forgotten
  }

  /// The device's retained topics are forgotten one by one (never all below
  /// `gatt2mqtt/A4C1381E29DF/`, which could be another device's first levels).
  func expectForgotten(_ outputs: [CentralBridge.Output]) throws {
    for leaf in ["availability", "presence", "connection", "gatt"] {
      let topic = try TopicName("gatt2mqtt/A4C1381E29DF/\(leaf)")
      #expect(outputs.contains(.fleet(.forgetRetainedTopic(topic))))
    }
    #expect(outputs.contains(.fleet(.forgetRetained(below: "gatt2mqtt/A4C1381E29DF/gatt/"))))
    #expect(!outputs.contains(.fleet(.forgetRetained(below: "gatt2mqtt/A4C1381E29DF/"))))
  }
}
