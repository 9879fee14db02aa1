import BridgeCore
import Testing

/// A restart: what an earlier run left retained for devices not heard again is cleared on the
/// usual schedule (``DiscoveryBridge/restore(previous:now:)``).
@Suite("Devices restored from an earlier run")
struct DeviceRestoreTests {
  let t0 = Fixture.t0

  /// An entry of the devices list as ``DeviceRecord/json(owner:wallClockOffset:)`` writes it.
  func entry(
    _ address: String, id: String? = nil, owner: String? = "pi", availability: String = "online",
    lastSeen: Double? = nil
  ) -> String {
    let compact = address.replacingOccurrences(of: ":", with: "")
    var fields = [
      "\"id\":\"\(id ?? compact)\"", "\"address\":\"\(address)\"", "\"addr_type\":\"public\"",
      "\"name\":\"Thermo\"", "\"rssi\":-70", "\"connection\":\"ready\"",
      "\"availability\":\"\(availability)\"",
      "\"owner\":" + (owner.map { "\"\($0)\"" } ?? "null"),
    ]
    if let lastSeen { fields.append("\"last_seen\":\(Int64(lastSeen * 1000))") }
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

  @Test(
    "a device not heard again goes offline and away, then is forgotten with everything the earlier run left"
  )
  func unheardDeviceIsCleared() throws {
    var bridge = bridge()
    _ = bridge.tick(now: t0)
    let (outputs, restored) = bridge.restore(
      previous: list(entry("A4:C1:38:1E:29:DF", lastSeen: t0 - 10)), now: t0)
    #expect(restored.map(\.id.rawValue) == ["A4C1381E29DF"])
    #expect(outputs.eventTypes == ["devices_restored"])
    #expect(outputs.published("/event").first?.json?["data"]?["devices"] == 1)
    #expect(outputs.filter { $0.topic != "gatt2mqtt/bridge/pi/event" }.isEmpty)
    let record = try #require(bridge.registry[Fixture.address("A4:C1:38:1E:29:DF")])
    #expect(record.connection == .disconnected, "no connection survives a restart")
    #expect(record.lastSeen == t0 - 10)
    #expect(bridge.tick(now: t0 + 1).published("/devices").first?.json?.arrayValue?.count == 1)

    let leftovers = [
      "homeassistant/sensor/gatt2mqtt_A4C1381E29DF/2a19/config",
      "gatt2mqtt/A4C1381E29DF/gatt/180f/2a19",
    ]
    for topic in leftovers {
      #expect(
        bridge.leftover(Fixture.address("A4:C1:38:1E:29:DF"), topic: try TopicName(topic))
          .isEmpty, "kept until the device is forgotten")
    }

    let offline = bridge.tick(now: t0 + 80)
    #expect(offline.published("/availability").first?.json?["state"] == "offline")
    #expect(
      offline.published("/presence").first?.json?["state"] == "away",
      "its retained presence is the earlier run's")
    #expect(bridge.tick(now: t0 + 880).published("/A4C1381E29DF/availability").isEmpty)

    let forgotten = bridge.tick(now: t0 + 890)
    let clears = forgotten.filter { $0.text == "" && $0.retain == true }.compactMap(\.topic)
    #expect(
      Set(clears)
        == Set(
          [
            "gatt2mqtt/A4C1381E29DF/availability", "gatt2mqtt/A4C1381E29DF/presence",
            "gatt2mqtt/A4C1381E29DF/connection", "gatt2mqtt/A4C1381E29DF/gatt",
          ] + leftovers))
    #expect(bridge.registry.count == 0)
  }

  @Test("a device last seen longer ago than forget_after is cleared at the first tick")
  func longGoneDeviceIsClearedAtOnce() {
    var bridge = bridge()
    _ = bridge.restore(
      previous: list(entry("A4:C1:38:1E:29:DF", lastSeen: t0 - 7200)), now: t0)
    let clears = bridge.tick(now: t0).filter { $0.text == "" }.compactMap(\.topic)
    #expect(clears.contains("gatt2mqtt/A4C1381E29DF/availability"))
    #expect(clears.contains("gatt2mqtt/A4C1381E29DF/gatt"))
  }

  @Test(
    "a device heard again is a device like any other, and its leftovers go when it is forgotten")
  func heardAgain() throws {
    var bridge = bridge()
    _ = bridge.restore(
      previous: list(entry("A4:C1:38:1E:29:DF", availability: "offline", lastSeen: t0 - 100)),
      now: t0)
    _ = bridge.leftover(
      Fixture.address("A4:C1:38:1E:29:DF"),
      topic: try TopicName("homeassistant/sensor/gatt2mqtt_A4C1381E29DF/old/config"))
    let heard = bridge.handle(.deviceUpdated(Fixture.advert(rssi: -50)), now: t0 + 1)
    #expect(heard.published("/availability").first?.json?["state"] == "online")
    #expect(heard.eventTypes.isEmpty, "not a new device")
    #expect(bridge.tick(now: t0 + 60).filter { $0.text == "" }.isEmpty)
    let clears = bridge.tick(now: t0 + 902).filter { $0.text == "" }.compactMap(\.topic)
    #expect(clears.contains("homeassistant/sensor/gatt2mqtt_A4C1381E29DF/old/config"))
  }

  @Test(
    "only this gateway's entries that fit and are unknown are taken; malformed ones are counted")
  func whatIsTaken() throws {
    var bridge = DiscoveryBridge(
      topics: Fixture.topics,
      configuration: .init(registry: DeviceRegistry(capacity: 2), devicesInterval: 0))
    _ = bridge.handle(.deviceUpdated(Fixture.advert("11:22:33:44:55:66", rssi: -50)), now: t0)
    let (outputs, restored) = bridge.restore(
      previous: list(
        entry("11:22:33:44:55:66", lastSeen: t0 - 5),  // known
        entry("22:22:33:44:55:66", owner: "other"),  // another gateway's
        entry("33:22:33:44:55:66", owner: nil),  // no one's
        "{\"id\":\"X\"}", "17",  // malformed
        entry("44:22:33:44:55:66"),  // taken
        entry("55:22:33:44:55:66")),  // the registry is full
      now: t0)
    #expect(restored.map(\.address) == [Fixture.address("44:22:33:44:55:66")])
    #expect(outputs.published("/event").first?.json?["data"]?["invalid"] == 2)
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
    let clears = outputs.filter { $0.text == "" && $0.retain == true }.compactMap(\.topic)
    #expect(
      clears == [
        "gatt2mqtt/kitchen/thermo/availability", "gatt2mqtt/kitchen/thermo/presence",
        "gatt2mqtt/kitchen/thermo/connection", "gatt2mqtt/kitchen/thermo/gatt",
      ])
    let value = bridge.leftover(
      Fixture.address("A4:C1:38:1E:29:DF"),
      topic: try TopicName("gatt2mqtt/kitchen/thermo/gatt/180f/2a19"))
    #expect(value.map(\.topic) == ["gatt2mqtt/kitchen/thermo/gatt/180f/2a19"])
    #expect(value.first?.text == "", "a value under the old name is cleared at once")
  }

  @Test("an old name another device has now is not cleared")
  func oldNameTaken() {
    let other = Fixture.address("11:22:33:44:55:66")
    var bridge = bridge(names: [other: try! DeviceID(friendlyName: "kitchen")])
    let (outputs, restored) = bridge.restore(
      previous: list(entry("A4:C1:38:1E:29:DF", id: "kitchen")), now: t0)
    #expect(restored.count == 1)
    #expect(restored.first?.previousID == nil)
    #expect(outputs.filter { $0.text == "" }.isEmpty)
  }
}

@Suite("Devices restored from an earlier run, with fleet ownership")
struct DeviceRestoreOwnershipTests {
  let t0 = Fixture.t0
  let hall = GatewayInstance(id: "hall1", started: 0)

  /// Gateway `pi` with ownership on; `pi` and `hall` online; it restores the sensor, which it
  /// owned, last seen long ago.
  func restoredBridge() -> CentralBridge {
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
      "availability":"online","last_seen":\(Int64((t0 - 5000) * 1000))},
      {"id":"112233445566","address":"11:22:33:44:55:66","addr_type":"public","owner":"hall",\
      "availability":"online"}]
      """
    let (_, restored) = bridge.restore(previous: Array(list.utf8), now: t0)
    #expect(restored.map(\.id.rawValue) == ["A4C1381E29DF"], "only what pi owned")
    return bridge
  }

  func clears(_ outputs: [CentralBridge.Output]) -> [String] {
    outputs.compactMap {
      guard case .discovery(.publish(let topic, let payload, true)) = $0, payload.isEmpty else {
        return nil
      }
      return topic.rawValue
    }
  }

  @Test("a restored device no gateway owns when it is forgotten: this gateway clears its topics")
  func unownedIsCleared() {
    var bridge = restoredBridge()
    let cleared = clears(bridge.tick(now: t0 + 1))
    #expect(cleared.contains("gatt2mqtt/A4C1381E29DF/availability"))
    #expect(cleared.contains("gatt2mqtt/A4C1381E29DF/connection"))
  }

  @Test("a restored device another gateway owns now: its topics are the owner's, none is cleared")
  func ownedElsewhereIsKept() {
    var bridge = restoredBridge()
    let address = Fixture.address("A4:C1:38:1E:29:DF")
    _ = bridge.fleetMessage(
      .owner(address),
      payload: OwnershipClaim(
        gateway: GatewayID("hall"), instance: "hall1", rssi: -50, reason: "unowned"
      ).payload, now: t0)
    #expect(bridge.ownership?.owner(of: address) == GatewayID("hall"))
    #expect(clears(bridge.tick(now: t0 + 1)).isEmpty)
  }
}
