import BridgeCore
import Testing

@Suite("Discovery bridge")
struct DiscoveryBridgeTests {
  let t0 = Fixture.t0
  let hci0 = AdapterInfo(id: "hci0", address: Fixture.address("00:1A:7D:DA:71:13"), powered: true)

  /// The gateway's loop in miniature: events from the central into the bridge, publishes
  /// collected, discovery commands sent back to the central (failures reported to the bridge).
  func drive(
    _ bridge: inout DiscoveryBridge, _ central: FakeCentral, times: [Double]
  ) async -> [BridgeOutput] {
    var published: [BridgeOutput] = []
    var iterator = central.events().makeAsyncIterator()
    for time in times {
      guard let event = await iterator.next() else { break }
      var pending = bridge.handle(event, now: time)
      while !pending.isEmpty {
        let output = pending.removeFirst()
        switch output {
        case .publish: published.append(output)
        case .startDiscovery(let adapter, let filter):
          do {
            try await central.startDiscovery(adapter: adapter, filter: filter)
          } catch {
            pending += bridge.discoveryFailed(adapter: adapter, error: error)
          }
        case .stopDiscovery(let adapter): try? await central.stopDiscovery(adapter: adapter)
        case .removeDevice(let address): try? await central.removeDevice(address)
        }
      }
    }
    return published
  }

  @Test("a central's events become the topics of TOPICS.md with the right retain flags")
  func endToEnd() async throws {
    let central = FakeCentral()
    var bridge = DiscoveryBridge(topics: Fixture.topics)
    central.emit(.adapterChanged(hci0))
    central.emit(.deviceAppeared(Fixture.advert(name: "Thermo", rssi: nil)))
    central.emit(.deviceUpdated(Fixture.advert(name: "Thermo", rssi: -60)))
    let outputs = await drive(&bridge, central, times: [t0, t0, t0 + 1])
    #expect(await central.calls == ["start hci0"])
    #expect(bridge.counters.ignored == 1, "a cached device without RSSI is no sighting")
    let summary = outputs.map { "\($0.topic!) \($0.retain! ? "R" : "-")" }
    #expect(
      summary == [
        "gatt2mqtt/bridge/pi/event -", "gatt2mqtt/bridge/pi/adapters R",
        "gatt2mqtt/bridge/pi/event -", "gatt2mqtt/A4C1381E29DF/availability R",
        "gatt2mqtt/A4C1381E29DF/advertisement -", "gatt2mqtt/A4C1381E29DF/presence R",
      ])
    #expect(outputs.eventTypes == ["adapter_added", "device_discovered"])
    #expect(outputs.published("/advertisement").first?.json?["name"] == "Thermo")
    #expect(outputs.published("/presence").first?.json?["state"] == "present")

    let list = bridge.tick(now: t0 + 1)
    #expect(list.map(\.topic) == ["gatt2mqtt/bridge/pi/devices"])
    #expect(list.first?.json?.arrayValue?.first?["id"] == "A4C1381E29DF")
    let result1 = bridge.tick(now: t0 + 2)
    #expect(result1.isEmpty, "an unchanged list is not republished")

    let away = bridge.tick(now: t0 + 31)
    #expect(away.map(\.topic) == ["gatt2mqtt/A4C1381E29DF/presence"])
    #expect(away.first?.json?["state"] == "away")
    let offline = bridge.tick(now: t0 + 91)
    #expect(offline.published("/availability").first?.text == #"{"state":"offline"}"#)
    #expect(offline.published("/bridge/pi/devices").count == 1)
    let forgotten = bridge.tick(now: t0 + 901)
    #expect(forgotten.published("/availability").first?.payloadIsEmpty == true)
    #expect(forgotten.published("/presence").first?.payloadIsEmpty == true)
    #expect(forgotten.published("/availability").first?.retain == true)
    #expect(
      bridge.registry.count == 0 && bridge.presence.count == 0 && bridge.rateLimiter.count == 0)
  }

  @Test("forgetting a device clears its retained messages and every table")
  func forget() {
    var bridge = DiscoveryBridge(topics: Fixture.topics)
    _ = bridge.tick(now: t0)
    _ = bridge.handle(.deviceUpdated(Fixture.advert()), now: t0)
    let outputs = bridge.forget(Fixture.address("A4:C1:38:1E:29:DF"))
    #expect(
      outputs.map(\.topic) == [
        "gatt2mqtt/A4C1381E29DF/availability", "gatt2mqtt/A4C1381E29DF/presence",
      ])
    #expect(outputs.allSatisfy { $0.payloadIsEmpty == true && $0.retain == true })
    #expect(
      bridge.registry.count == 0 && bridge.presence.count == 0 && bridge.rateLimiter.count == 0)
    let list = bridge.tick(now: t0 + 10)
    #expect(list.first?.text == "[]")
    #expect(bridge.forget(Fixture.address("A4:C1:38:1E:29:DF")).isEmpty)
  }

  @Test(
    "with Home Assistant: configs before the first advertisement, decoded values, cleared on forget"
  )
  func homeAssistant() {
    var bridge = DiscoveryBridge(
      topics: Fixture.topics,
      configuration: .init(homeAssistant: HomeAssistantDiscovery(topics: Fixture.topics)))
    _ = bridge.tick(now: t0)
    var advert = Fixture.advert()
    advert.serviceData = [BluetoothUUID(uuid16: 0xFCD2): [0x40, 0x02, 0xCA, 0x09]]
    let outputs = bridge.handle(.deviceUpdated(advert), now: t0)
    let topics = outputs.compactMap(\.topic)
    let advertisement = topics.firstIndex(of: "gatt2mqtt/A4C1381E29DF/advertisement")
    let temperature = topics.firstIndex(
      of: "homeassistant/sensor/gatt2mqtt_A4C1381E29DF/temperature/config")
    #expect(temperature != nil && advertisement != nil && temperature! < advertisement!)
    #expect(
      outputs.published("/advertisement").first?.json?["decoded"]?["temperature"] == .number(25.06))
    advert.rssi = -61
    #expect(
      !bridge.handle(.deviceUpdated(advert), now: t0 + 20).contains {
        $0.topic?.hasSuffix("/config") == true
      },
      "nothing new: no config")
    #expect(bridge.homeAssistantRepublish().count == 3)
    let cleared = bridge.forget(Fixture.address("A4:C1:38:1E:29:DF")).filter {
      $0.topic?.hasPrefix("homeassistant/") == true
    }
    #expect(
      cleared.count == 3 && cleared.allSatisfy { $0.payloadIsEmpty == true && $0.retain == true })
  }

  @Test("bluetooth.decode off: no 'decoded' member")
  func decodingOff() {
    var bridge = DiscoveryBridge(topics: Fixture.topics, configuration: .init(decode: false))
    _ = bridge.tick(now: t0)
    var advert = Fixture.advert()
    advert.serviceData = [BluetoothUUID(uuid16: 0xFCD2): [0x40, 0x02, 0xCA, 0x09]]
    let outputs = bridge.handle(.deviceUpdated(advert), now: t0)
    #expect(outputs.published("/advertisement").first?.json?["servicedata"] != nil)
    #expect(outputs.published("/advertisement").first?.json?["decoded"] == nil)
  }

  @Test("filtered advertisements publish nothing and are not remembered")
  func filtered() {
    let filter = AdvertisementFilter(rssiFloor: -80)
    var bridge = DiscoveryBridge(topics: Fixture.topics, configuration: .init(filter: filter))
    let result2 = bridge.handle(.deviceUpdated(Fixture.advert(rssi: -81)), now: t0)
    #expect(result2.isEmpty)
    #expect(bridge.counters.filtered == 1)
    #expect(bridge.registry.count == 0)
    let result3 = bridge.handle(.deviceUpdated(Fixture.advert(rssi: -79)), now: t0)
    #expect(!result3.isEmpty)
  }

  @Test("10,000 rotating random addresses keep every per-device table within the cap")
  func rotatingAddresses() throws {
    var bridge = DiscoveryBridge(
      topics: Fixture.topics, configuration: .init(registry: DeviceRegistry(capacity: 200)))
    var cleared = 0
    for index in 0..<10_000 {
      let advert = Fixture.advert(
        Fixture.randomAddress(index).description, name: nil, type: .random)
      let outputs = bridge.handle(.deviceUpdated(advert), now: t0 + Double(index) * 0.01)
      cleared += outputs.filter { $0.payloadIsEmpty == true }.count
      for output in outputs { _ = try TopicName(try #require(output.topic)) }
      #expect(bridge.registry.count <= 200)
    }
    #expect(bridge.registry.evictions == 9_800)
    #expect(cleared == 2 * 9_800, "evicted devices' retained availability and presence are cleared")
    #expect(bridge.rateLimiter.count == 200)
    #expect(bridge.presence.count == 200)
    #expect(bridge.healthJSON["device_evictions"] == 9_800)
    #expect(bridge.healthJSON["devices"] == 200)
  }

  @Test(
    "the stack removing a private random address forgets it at once; public, static and connected devices stay"
  )
  func removedDevices() throws {
    var bridge = DiscoveryBridge(topics: Fixture.topics)
    _ = bridge.tick(now: t0)
    let rotated = Fixture.address("5A:11:22:33:44:55")  // 01 in the top bits: resolvable private
    let unresolvable = Fixture.address("1A:11:22:33:44:55")  // 00: non-resolvable private
    let fixedRandom = Fixture.address("DA:11:22:33:44:55")  // 11: random static
    let fixedPublic = Fixture.address("5A:66:22:33:44:55")
    let connected = Fixture.address("6A:11:22:33:44:55")
    for address in [rotated, unresolvable, fixedRandom, connected] {
      _ = bridge.handle(
        .deviceUpdated(Fixture.advert(address.description, name: nil, type: .random)), now: t0)
    }
    _ = bridge.handle(.deviceUpdated(Fixture.advert(fixedPublic.description)), now: t0)
    _ = bridge.handle(.connectionChanged(connected, connected: true), now: t0)
    #expect(bridge.registry.count == 5)

    let outputs = bridge.handle(.deviceRemoved(rotated), now: t0 + 31)
    #expect(
      outputs.map(\.topic) == [
        "gatt2mqtt/5A1122334455/availability", "gatt2mqtt/5A1122334455/presence",
      ])
    #expect(outputs.allSatisfy { $0.payloadIsEmpty == true && $0.retain == true })
    #expect(bridge.handle(.deviceRemoved(unresolvable), now: t0 + 31).count == 2)
    for address in [fixedRandom, fixedPublic, connected] {
      #expect(bridge.handle(.deviceRemoved(address), now: t0 + 31).isEmpty)
    }
    #expect(bridge.registry.count == 3)
    #expect(bridge.presence.count == 3 && bridge.rateLimiter.count == 3)
    #expect(bridge.registry[rotated] == nil && bridge.registry[fixedRandom] != nil)
    // The devices list follows.
    let list = try #require(
      bridge.tick(now: t0 + 40).first { $0.topic == "gatt2mqtt/bridge/pi/devices" })
    #expect(list.text?.contains("5A1122334455") == false)
    #expect(list.text?.contains("DA1122334455") == true)
  }

  @Test("a scanner watchdog step from the central is published as a bridge event")
  func watchdogStep() throws {
    var bridge = DiscoveryBridge(topics: Fixture.topics)
    let outputs = bridge.handle(
      .scannerWatchdog(.discoveryRestarted(adapter: "hci0", silence: .seconds(60))), now: t0)
    #expect(outputs.count == 1)
    let output = try #require(outputs.first)
    #expect(output.topic == "gatt2mqtt/bridge/pi/event")
    #expect(output.retain == false)
    let json = try JSONValue.parse(Array(try #require(output.text).utf8))
    #expect(json["type"] == "scanner_restarted")
    #expect(json["data"]?["adapter"] == "hci0")
    #expect(json["data"]?["silence_s"] == 60)
  }

  @Test(
    "device/remove forgets the device, clears its retained state and asks the stack to remove it")
  func removeRequest() throws {
    var bridge = DiscoveryBridge(topics: Fixture.topics)
    _ = bridge.tick(now: t0)
    _ = bridge.handle(.deviceUpdated(Fixture.advert()), now: t0)
    let address = Fixture.address("A4:C1:38:1E:29:DF")
    let (outputs, response) = bridge.remove(["device": "A4C1381E29DF"])
    #expect(response.ok)
    #expect(response.data == ["device": "A4C1381E29DF", "forgotten": true])
    #expect(
      outputs.map(\.topic) == [
        "gatt2mqtt/A4C1381E29DF/availability", "gatt2mqtt/A4C1381E29DF/presence", nil,
      ])
    #expect(outputs.last == .removeDevice(address))
    #expect(bridge.registry.count == 0)
    // Unknown to the gateway: the stack is asked all the same.
    let (again, unknown) = bridge.remove(["device": "A4:C1:38:1E:29:DF"])
    #expect(again == [.removeDevice(address)])
    #expect(unknown.data["forgotten"] == false)
    // Bad requests.
    #expect(bridge.remove([:]).response.errorCode == "invalid_payload")
    #expect(
      bridge.remove(["device": "A4C1381E29DF", "force": true]).response.errorCode
        == "invalid_payload")
    #expect(bridge.remove(["device": 12]).response.errorCode == "invalid_payload")
    let long = String(repeating: "x", count: 10_000)
    let refused = bridge.remove(["device": .string(long)]).response
    #expect(refused.errorCode == "unknown_device")
    #expect((refused.message ?? "").count < 120)
  }

  @Test("a hostile name reaches the payload raw while the topic stays the address")
  func hostileName() {
    var bridge = DiscoveryBridge(topics: Fixture.topics)
    var advert = Fixture.advert(rssi: -50)
    advert.name = Array("evil/+/#\u{0}".utf8) + [0xFF]
    let outputs = bridge.handle(.deviceUpdated(advert), now: t0)
    let published = outputs.published("/advertisement")
    #expect(published.first?.topic == "gatt2mqtt/A4C1381E29DF/advertisement")
    #expect(published.first?.json?["name"] == .string("evil/+/#\u{0}\u{FFFD}"))
    #expect(published.first?.json?["name_hex"] == "6576696c2f2b2f2300ff")
  }

  @Test("a connected device stays present and online while it does not advertise")
  func connected() {
    var bridge = DiscoveryBridge(topics: Fixture.topics)
    _ = bridge.handle(.deviceUpdated(Fixture.advert(rssi: -60)), now: t0)
    _ = bridge.handle(
      .connectionChanged(Fixture.address("A4:C1:38:1E:29:DF"), connected: true), now: t0 + 1)
    let later = bridge.tick(now: t0 + 5000)
    #expect(later.published("/availability").isEmpty)
    #expect(later.published("/presence").count == 1)
    #expect(later.published("/presence").allSatisfy { $0.json?["state"] == "present" })
    #expect(later.published("/presence").first?.json?["rssi"] == nil, "the stale mean is dropped")
    #expect(bridge.presence.state(of: Fixture.address("A4:C1:38:1E:29:DF")) == .present)
    #expect(bridge.registry.records.first?.connection == .connected)
  }

  @Test("scan requests through the router: start with a filter, stop, errors")
  func scanRequests() async throws {
    let router = BridgeRequestRouter()
    let health = { HealthReport(uptime: 1) }
    var bridge = DiscoveryBridge(topics: Fixture.topics, configuration: .init(scanOnStart: false))
    let result4 = bridge.handle(.adapterChanged(hci0), now: t0)
    #expect(result4.allSatisfy { $0.topic != nil })
    var commands: [BridgeOutput] = []
    let start = router.respond(
      verb: "scan",
      payload: Array(#"{"action":"start","filter":{"min_rssi":-70},"transaction":"t1"}"#.utf8),
      health: health
    ) { command in
      let (outputs, response) = bridge.apply(command)
      commands += outputs
      return response
    }
    #expect(start.ok)
    #expect(
      start.json.serialized()
        == #"{"status":"ok","data":{"scanning":true,"filter":{"min_rssi":-70},"adapters":["hci0"]},"transaction":"t1"}"#
    )
    #expect(commands == [.startDiscovery(adapter: "hci0", filter: DiscoveryFilter(rssiFloor: -70))])
    #expect(bridge.filter.rssiFloor == -70)
    let stop = router.respond(
      verb: "scan", payload: Array(#"{"action":"stop"}"#.utf8), health: health
    ) {
      command in
      let (outputs, response) = bridge.apply(command)
      commands += outputs
      return response
    }
    #expect(stop.json["data"] == ["scanning": false])
    #expect(commands.last == .stopDiscovery(adapter: "hci0"))
  }

  @Test("a failed discovery start becomes a discovery_failed event")
  func failedStart() async {
    let central = FakeCentral()
    await central.failStarts(
      with: CentralError(.poweredOff, message: "Not Ready", detail: "org.bluez.Error.NotReady"))
    var bridge = DiscoveryBridge(topics: Fixture.topics)
    central.emit(.adapterChanged(hci0))
    let outputs = await drive(&bridge, central, times: [t0])
    #expect(outputs.eventTypes == ["adapter_added", "discovery_failed"])
    #expect(outputs.published("/event").last?.json?["data"]?["error"] == "powered_off")
  }
}

extension BridgeOutput {
  /// Whether this publish has an empty payload (a retained message being deleted).
  var payloadIsEmpty: Bool? {
    if case .publish(_, let payload, _) = self { return payload.isEmpty }
    return nil
  }
}
