import BridgeCore
import Testing

/// The topics whose retained message `outputs` clear (empty retained publications, either half).
func clears(_ outputs: [CentralBridge.Output]) -> [String] {
  outputs.compactMap {
    switch $0 {
    case .discovery(.publish(let topic, let payload, true)),
      .gatt(.publish(let topic, let payload, true)):
      payload.isEmpty ? topic.rawValue : nil
    default: nil
    }
  }
}

/// A restart: what an earlier run left retained for devices not heard again is cleared on the
/// usual schedule (``DiscoveryBridge/restore(previous:now:)``).
@Suite("Devices restored from an earlier run")
struct DeviceRestoreTests {
  let t0 = Fixture.t0
  let sensor = Fixture.address("A4:C1:38:1E:29:DF")
  /// A Home Assistant config this gateway (`pi`) published.
  let config = Array(#"{"name":"Battery","device":{"via_device":"gatt2mqtt_bridge_pi"}}"#.utf8)

  /// An entry of the devices list as ``DeviceRecord/json(owner:wallClockOffset:)`` writes it.
  func entry(
    _ address: String, id: String? = nil, owner: String? = "pi", availability: String = "online",
    lastSeen: Double? = nil, restored: Bool = false
  ) -> String {
    let compact = address.replacingOccurrences(of: ":", with: "")
    var fields = [
      "\"id\":\"\(id ?? compact)\"", "\"address\":\"\(address)\"", "\"addr_type\":\"public\"",
      "\"name\":\"Thermo\"", "\"rssi\":-70", "\"connection\":\"ready\"",
      "\"availability\":\"\(availability)\"",
      "\"owner\":" + (owner.map { "\"\($0)\"" } ?? "null"),
    ]
    if let lastSeen { fields.append("\"last_seen\":\(Int64(lastSeen * 1000))") }
    if restored { fields.append("\"restored\":true") }
    return "{" + fields.joined(separator: ",") + "}"
  }

  func list(_ entries: String...) -> [UInt8] { Array("[\(entries.joined(separator: ","))]".utf8) }

  func bridge(names: [BluetoothAddress: DeviceID] = [:]) -> DiscoveryBridge {
    DiscoveryBridge(
      topics: Fixture.topics,
      configuration: .init(
        registry: DeviceRegistry(
          offlineAfter: 90, forgetAfter: 900, naming: DeviceNaming(friendlyNames: names)),
        devicesInterval: 0))
  }

  func clears(_ outputs: [BridgeOutput]) -> [String] {
    outputs.filter { $0.text == "" && $0.retain == true }.compactMap(\.topic)
  }

  @Test(
    "a device listed online and not heard again goes offline and away, then is forgotten with everything the earlier run left"
  )
  func unheardDeviceIsCleared() throws {
    var bridge = bridge()
    _ = bridge.tick(now: t0)
    // Listed online: last seen an hour before, as far as the list says (it is not published
    // on every sighting), so it counts as seen now.
    let (outputs, restored) = bridge.restore(
      previous: list(entry("A4:C1:38:1E:29:DF", lastSeen: t0 - 3600)), now: t0)
    #expect(restored.map(\.id.rawValue) == ["A4C1381E29DF"])
    #expect(outputs.eventTypes == ["devices_restored"])
    #expect(outputs.published("/event").first?.json?["data"]?["devices"] == 1)
    #expect(outputs.filter { $0.topic != "gatt2mqtt/bridge/pi/event" }.isEmpty)
    let record = try #require(bridge.registry[sensor])
    #expect(record.connection == .disconnected, "no connection survives a restart")
    #expect(record.lastSeen == t0)
    let listed = bridge.tick(now: t0 + 1).published("/devices").first?.json?.arrayValue
    #expect(listed?.count == 1)
    #expect(listed?.first?["restored"] == true, "a run after this one takes it back too")

    let leftovers = [
      "homeassistant/sensor/gatt2mqtt_A4C1381E29DF/2a19/config",
      "gatt2mqtt/A4C1381E29DF/gatt/180f/2a19",
    ]
    for topic in leftovers {
      #expect(
        bridge.leftover(sensor, topic: try TopicName(topic), payload: config).isEmpty,
        "kept until the device is forgotten")
    }
    let quiet = bridge.tick(now: t0 + 80).compactMap(\.topic).filter { $0.contains("A4C1") }
    #expect(quiet.isEmpty, "nothing before offline_after")
    let offline = bridge.tick(now: t0 + 90)
    #expect(offline.published("/availability").first?.json?["state"] == "offline")
    #expect(
      offline.published("/presence").first?.json?["state"] == "away",
      "its retained presence is the earlier run's")
    #expect(clears(bridge.tick(now: t0 + 899)).isEmpty)

    let forgotten = clears(bridge.tick(now: t0 + 900))
    #expect(
      Set(forgotten)
        == Set(
          [
            "gatt2mqtt/A4C1381E29DF/availability", "gatt2mqtt/A4C1381E29DF/presence",
            "gatt2mqtt/A4C1381E29DF/connection", "gatt2mqtt/A4C1381E29DF/gatt",
          ] + leftovers))
    #expect(bridge.registry.count == 0)
  }

  @Test(
    "a device listed offline since longer than forget_after is cleared at the first tick, and what is found for it later at once"
  )
  func longGoneDeviceIsClearedAtOnce() throws {
    var bridge = bridge()
    _ = bridge.restore(
      previous: list(entry("A4:C1:38:1E:29:DF", availability: "offline", lastSeen: t0 - 7200)),
      now: t0)
    #expect(
      Set(clears(bridge.tick(now: t0)))
        == [
          "gatt2mqtt/A4C1381E29DF/availability", "gatt2mqtt/A4C1381E29DF/presence",
          "gatt2mqtt/A4C1381E29DF/connection", "gatt2mqtt/A4C1381E29DF/gatt",
        ])
    // The search answers after the device was forgotten: cleared at once.
    let topic = try TopicName("homeassistant/sensor/gatt2mqtt_A4C1381E29DF/2a19/config")
    #expect(clears(bridge.leftover(sensor, topic: topic, payload: config)) == [topic.rawValue])
    bridge.leftoverSearchEnded()
    #expect(bridge.leftover(sensor, topic: topic, payload: config).isEmpty, "the search is over")
  }

  @Test("a device listed online that is still there is not cleared after the restart")
  func stableDeviceIsNotCleared() {
    var bridge = bridge()
    _ = bridge.restore(
      previous: list(entry("A4:C1:38:1E:29:DF", lastSeen: t0 - 36_000)), now: t0)
    var outputs: [BridgeOutput] = []
    for second in stride(from: 0.0, through: 1000, by: 10) {
      outputs += bridge.handle(.deviceUpdated(Fixture.advert(rssi: -50)), now: t0 + second)
      outputs += bridge.tick(now: t0 + second)
    }
    #expect(clears(outputs).isEmpty)
    #expect(outputs.published("/availability").allSatisfy { $0.json?["state"] == "online" })
  }

  @Test(
    "a device heard again is a device like any other, and its leftovers go when it is forgotten")
  func heardAgain() throws {
    var bridge = bridge()
    _ = bridge.restore(
      previous: list(entry("A4:C1:38:1E:29:DF", availability: "offline", lastSeen: t0 - 100)),
      now: t0)
    _ = bridge.leftover(
      sensor, topic: try TopicName("homeassistant/sensor/gatt2mqtt_A4C1381E29DF/old/config"),
      payload: config)
    let heard = bridge.handle(.deviceUpdated(Fixture.advert(rssi: -50)), now: t0 + 1)
    #expect(heard.published("/availability").first?.json?["state"] == "online")
    #expect(heard.eventTypes.isEmpty, "not a new device")
    #expect(clears(bridge.tick(now: t0 + 60)).isEmpty)
    #expect(
      clears(bridge.tick(now: t0 + 902)).contains(
        "homeassistant/sensor/gatt2mqtt_A4C1381E29DF/old/config"))
  }

  @Test("what the search finds that is not this gateway's is left alone")
  func foreignLeftovers() throws {
    var bridge = bridge(names: [
      Fixture.address("11:22:33:44:55:66"): try DeviceID(friendlyName: "kitchen/gatt/x")
    ])
    _ = bridge.handle(.deviceUpdated(Fixture.advert("11:22:33:44:55:66")), now: t0)
    _ = bridge.restore(previous: list(entry("A4:C1:38:1E:29:DF", id: "kitchen")), now: t0)
    // Restored under its address id: `kitchen` is its old name.
    let other = Array(#"{"device":{"via_device":"gatt2mqtt_bridge_hall"}}"#.utf8)
    for (topic, payload) in [
      ("homeassistant/sensor/gatt2mqtt_A4C1381E29DF/2a19/config", other),  // hall's config
      ("homeassistant/sensor/gatt2mqtt_A4C1381E29DF/2a19/config", Array("not json".utf8)),
      ("gatt2mqtt/kitchen/gatt/x/availability", Array("{}".utf8)),  // another device's
    ] {
      #expect(
        bridge.leftover(sensor, topic: try TopicName(topic), payload: payload).isEmpty, "\(topic)")
    }
    let cleared = clears(bridge.forget(sensor))
    #expect(cleared.contains("gatt2mqtt/A4C1381E29DF/availability"))
    #expect(
      !cleared.contains { $0.hasPrefix("homeassistant/") || $0.contains("kitchen/gatt/x") },
      "\(cleared)")
  }

  @Test(
    "a device heard before the list came back is restored too: what the earlier run left is cleared when it is forgotten"
  )
  func heardBeforeTheList() throws {
    var bridge = bridge()
    _ = bridge.handle(.deviceUpdated(Fixture.advert(rssi: -50)), now: t0)
    let (_, restored) = bridge.restore(previous: list(entry("A4:C1:38:1E:29:DF")), now: t0 + 1)
    #expect(restored.map(\.address) == [sensor])
    #expect(bridge.registry[sensor]?.restored == true)
    #expect(bridge.registry[sensor]?.lastSeen == t0, "its record is kept")
    let topic = try TopicName("gatt2mqtt/A4C1381E29DF/gatt/180f/2a19")
    #expect(bridge.leftover(sensor, topic: topic, payload: Array("64".utf8)).isEmpty)
    let cleared = clears(bridge.tick(now: t0 + 900))
    #expect(cleared.contains(topic.rawValue))
    #expect(cleared.contains("gatt2mqtt/A4C1381E29DF/connection"))
  }

  @Test("heard again after it was forgotten: what the search finds now is this run's, not cleared")
  func heardAgainAfterForgotten() throws {
    var bridge = bridge()
    _ = bridge.restore(
      previous: list(entry("A4:C1:38:1E:29:DF", availability: "offline", lastSeen: t0 - 7200)),
      now: t0)
    _ = bridge.tick(now: t0)  // forgotten
    _ = bridge.handle(.deviceUpdated(Fixture.advert(rssi: -50)), now: t0 + 1)
    #expect(bridge.registry[sensor]?.restored == false)
    let topic = try TopicName("homeassistant/sensor/gatt2mqtt_A4C1381E29DF/2a19/config")
    #expect(bridge.leftover(sensor, topic: topic, payload: config).isEmpty)
    #expect(!clears(bridge.tick(now: t0 + 2)).contains(topic.rawValue))
  }

  @Test(
    "the devices list waits for the restore: the earlier run's list is not replaced before it is read"
  )
  func listHeldUntilRestored() {
    var bridge = bridge()
    bridge.holdsDevicesList = true
    _ = bridge.handle(.deviceUpdated(Fixture.advert(rssi: -50)), now: t0)
    #expect(bridge.tick(now: t0).published("/devices").isEmpty)
    #expect(bridge.tick(now: t0 + 10).published("/devices").isEmpty)
    _ = bridge.restore(previous: list(), now: t0 + 11)
    #expect(bridge.tick(now: t0 + 11).published("/devices").count == 1)
  }

  @Test(
    "only this gateway's entries that fit and are unknown are taken; malformed ones are counted")
  func whatIsTaken() throws {
    var bridge = DiscoveryBridge(
      topics: Fixture.topics,
      configuration: .init(registry: DeviceRegistry(capacity: 3), devicesInterval: 0))
    _ = bridge.handle(.deviceUpdated(Fixture.advert("11:22:33:44:55:66", rssi: -50)), now: t0)
    let (outputs, restored) = bridge.restore(
      previous: list(
        entry("11:22:33:44:55:66", lastSeen: t0 - 5),  // known: marked, its record kept
        entry("22:22:33:44:55:66", owner: "other"),  // another gateway's
        entry("33:22:33:44:55:66", owner: nil),  // no one's
        "{\"id\":\"X\"}", "17",  // malformed
        entry("77:22:33:44:55:66", id: "11:22:33:44:55:66"),  // another device's address id
        entry("77:22:33:44:55:66", id: "112233445566"),  // the same, compact
        entry("44:22:33:44:55:66"),  // taken
        entry("66:22:33:44:55:66", owner: nil, restored: true),  // restored by a run of ours
        entry("55:22:33:44:55:66")),  // the registry is full
      now: t0)
    #expect(
      restored.map(\.address) == [
        Fixture.address("11:22:33:44:55:66"), Fixture.address("44:22:33:44:55:66"),
        Fixture.address("66:22:33:44:55:66"),
      ])
    #expect(outputs.published("/event").first?.json?["data"]?["invalid"] == 4)
    #expect(bridge.registry.evictions == 0, "nothing is evicted for an earlier run's device")
    #expect(bridge.registry[Fixture.address("11:22:33:44:55:66")]?.lastSeen == t0)
  }

  @Test("a list that is not a JSON array restores nothing and says why")
  func malformedList() {
    var bridge = bridge()
    for payload in [Array("{}".utf8), Array("[".utf8), [0xFF, 0xFE]] {
      let (outputs, restored) = bridge.restore(previous: payload, now: t0)
      #expect(restored.isEmpty)
      #expect(outputs.published("/event").first?.json?["data"]?["message"]?.stringValue != nil)
    }
  }

  @Test(
    "a device listed under a friendly name it no longer has: the old name's topics are cleared at once"
  )
  func renamedMeanwhile() throws {
    var bridge = bridge()
    let (outputs, restored) = bridge.restore(
      previous: list(entry("A4:C1:38:1E:29:DF", id: "kitchen/thermo")), now: t0)
    #expect(restored.first?.previousID?.rawValue == "kitchen/thermo")
    #expect(restored.first?.id.rawValue == "A4C1381E29DF")
    #expect(
      clears(outputs) == [
        "gatt2mqtt/kitchen/thermo/availability", "gatt2mqtt/kitchen/thermo/presence",
        "gatt2mqtt/kitchen/thermo/connection", "gatt2mqtt/kitchen/thermo/gatt",
      ])
    let value = bridge.leftover(
      sensor, topic: try TopicName("gatt2mqtt/kitchen/thermo/gatt/180f/2a19"),
      payload: Array("64".utf8))
    #expect(clears(value) == ["gatt2mqtt/kitchen/thermo/gatt/180f/2a19"], "cleared at once")
  }

  @Test("an old name another device has now is not cleared")
  func oldNameTaken() {
    let other = Fixture.address("11:22:33:44:55:66")
    var bridge = bridge(names: [other: try! DeviceID(friendlyName: "kitchen")])
    let (outputs, restored) = bridge.restore(
      previous: list(entry("A4:C1:38:1E:29:DF", id: "kitchen")), now: t0)
    #expect(restored.count == 1)
    #expect(restored.first?.previousID == nil)
    #expect(clears(outputs).isEmpty)
  }
}

@Suite("Devices restored from an earlier run, with fleet ownership")
struct DeviceRestoreOwnershipTests {
  let t0 = Fixture.t0
  let hall = GatewayInstance(id: "hall1", started: 0)

  /// Gateway `pi` with ownership on; `pi` and `hall` online; it restores the sensor, which it
  /// owned, last seen long ago.
  func restoredBridge(availability: String = "offline") -> CentralBridge {
    var bridge = CentralBridge(
      discovery: DiscoveryBridge(topics: Fixture.topics, configuration: .init(devicesInterval: 0)),
      gatt: GATTBridge(topics: Fixture.topics),
      ownership: OwnershipArbiter(topics: Fixture.topics, instance: "run0", freeSlots: 5))
    _ = bridge.fleetMessage(
      .state(GatewayID("pi")),
      payload: GatewayInstance(id: "run0", started: 0).statePayload(online: true), now: t0)
    _ = bridge.fleetMessage(
      .state(GatewayID("hall")), payload: hall.statePayload(online: true), now: t0)
    let list = """
      [{"id":"A4C1381E29DF","address":"A4:C1:38:1E:29:DF","addr_type":"public","owner":"pi",\
      "availability":"\(availability)","last_seen":\(Int64((t0 - 5000) * 1000))},
      {"id":"112233445566","address":"11:22:33:44:55:66","addr_type":"public","owner":"hall",\
      "availability":"online"}]
      """
    let (_, restored) = bridge.restore(previous: Array(list.utf8), now: t0)
    #expect(restored.map(\.id.rawValue) == ["A4C1381E29DF"], "only what pi owned")
    return bridge
  }

  @Test("a restored device no gateway owns when it is forgotten: this gateway clears its topics")
  func unownedIsCleared() {
    var bridge = restoredBridge()
    let cleared = clears(bridge.tick(now: t0 + 1))
    #expect(cleared.contains("gatt2mqtt/A4C1381E29DF/availability"))
    #expect(cleared.contains("gatt2mqtt/A4C1381E29DF/connection"))
  }

  /// A retained claim of `address` by `gateway`'s run `instance`, as the broker hands it over.
  func claim(
    _ address: BluetoothAddress, by gateway: String, instance: String,
    on bridge: inout CentralBridge
  ) {
    _ = bridge.fleetMessage(
      .owner(address),
      payload: OwnershipClaim(
        gateway: GatewayID(gateway), instance: instance, rssi: -50, reason: "unowned"
      ).payload, now: t0)
  }

  @Test(
    "the claim an earlier run of this gateway left is cleared when the restored device is forgotten"
  )
  func earlierRunsClaimIsCleared() throws {
    var bridge = restoredBridge()
    let address = Fixture.address("A4:C1:38:1E:29:DF")
    claim(address, by: "pi", instance: "run-old", on: &bridge)
    #expect(bridge.ownership?.owner(of: address) == nil, "not a run that is online")
    let outputs = bridge.tick(now: t0 + 1)
    var cleared: [String] = []
    for case .fleet(.claim(let topic, let payload)) in outputs where payload.isEmpty {
      cleared.append(topic.rawValue)
    }
    #expect(cleared == ["gatt2mqtt/A4C1381E29DF/owner"])
  }

  @Test("a restored device no gateway owns goes offline on schedule, said by this gateway")
  func unownedGoesOffline() {
    var bridge = restoredBridge(availability: "online")
    let offline = bridge.tick(now: t0 + 91)
    var states: [String] = []
    for case .discovery(.publish(let topic, let payload, true)) in offline
    where topic.rawValue == "gatt2mqtt/A4C1381E29DF/availability" {
      states.append(String(decoding: payload, as: UTF8.self))
    }
    #expect(states == [#"{"state":"offline"}"#])
  }

  @Test("a restored device another gateway owns now: its topics are the owner's, none is cleared")
  func ownedElsewhereIsKept() {
    var bridge = restoredBridge()
    let address = Fixture.address("A4:C1:38:1E:29:DF")
    claim(address, by: "hall", instance: "hall1", on: &bridge)
    #expect(bridge.ownership?.owner(of: address) == GatewayID("hall"))
    #expect(clears(bridge.tick(now: t0 + 1)).isEmpty)
  }
}

@Suite("Devices restored from an earlier run, in the central bridge")
struct DeviceRestoreCentralTests {
  let t0 = Fixture.t0
  let sensor = GATTHarness.sensor
  let list = Array(
    #"[{"id":"A4C1381E29DF","address":"A4:C1:38:1E:29:DF","owner":"pi","availability":"online"}]"#
      .utf8)

  func bridge(policy: Set<BluetoothAddress> = []) -> CentralBridge {
    var bridge = CentralBridge(
      discovery: DiscoveryBridge(
        topics: Fixture.topics,
        configuration: .init(registry: DeviceRegistry(offlineAfter: 90, forgetAfter: 900))),
      gatt: GATTBridge(
        topics: Fixture.topics, configuration: .init(policy: ConnectionPolicy(addresses: policy))))
    _ = bridge.restore(previous: list, now: t0)
    return bridge
  }

  @Test("forgotten without a link: the earlier run's connection and GATT tree are cleared")
  func withoutALink() {
    var bridge = bridge()
    let cleared = clears(bridge.tick(now: t0 + 900))
    #expect(cleared.contains("gatt2mqtt/A4C1381E29DF/connection"))
    #expect(cleared.contains("gatt2mqtt/A4C1381E29DF/gatt"))
  }

  @Test(
    "forgotten while this run keeps its link (configured by address): its connection state stays")
  func withALink() {
    var bridge = bridge(policy: [sensor])
    var outputs = bridge.tick(now: t0)
    // The configured link's attempt fails: the stack does not know the device (it waits for
    // an advertisement, not live).
    outputs += bridge.connections(now: t0) {
      $0.connectFinished(sensor, error: CentralError(.notFound, message: "unknown"), now: t0)
    }
    for second in stride(from: 1.0, through: 901, by: 100) {
      outputs += bridge.tick(now: t0 + second)
    }
    #expect(bridge.discovery.registry[sensor] == nil, "forgotten")
    #expect(bridge.gatt?.state(of: sensor) != nil, "the link stays")
    let cleared = clears(outputs)
    #expect(cleared.contains("gatt2mqtt/A4C1381E29DF/availability"))
    #expect(!cleared.contains("gatt2mqtt/A4C1381E29DF/connection"), "\(cleared)")
  }

  @Test(
    "retained values the earlier run left: cleared with the device, kept while this run has a link")
  func valuesAndLinks() throws {
    let value = try TopicName("gatt2mqtt/A4C1381E29DF/gatt/180f/2a19")
    var unlinked = bridge()
    _ = unlinked.leftover(sensor, topic: value, payload: Array("64".utf8))
    #expect(clears(unlinked.tick(now: t0 + 900)).contains(value.rawValue))

    var linked = bridge(policy: [sensor])
    _ = linked.tick(now: t0)
    _ = linked.connections(now: t0) {
      $0.connectFinished(sensor, error: CentralError(.notFound, message: "unknown"), now: t0)
    }
    #expect(linked.leftover(sensor, topic: value, payload: Array("64".utf8)).isEmpty)
    var outputs: [CentralBridge.Output] = []
    for second in stride(from: 1.0, through: 901, by: 100) {
      outputs += linked.tick(now: t0 + second)
    }
    #expect(linked.discovery.registry[sensor] == nil)
    #expect(!clears(outputs).contains(value.rawValue), "this run's link publishes it")
  }

  @Test("renamed before it is heard: the old id's connection and GATT tree are cleared too")
  func renamed() throws {
    var bridge = bridge()
    let cleared = clears(
      bridge.rename(sensor, to: try DeviceID(friendlyName: "porch"), now: t0 + 1))
    #expect(cleared.contains("gatt2mqtt/A4C1381E29DF/connection"))
    #expect(cleared.contains("gatt2mqtt/A4C1381E29DF/gatt"))
    #expect(cleared.contains("gatt2mqtt/A4C1381E29DF/availability"))
  }
}
