import BridgeCore
import Testing

@Suite("Central bridge: one device model for discovery and connections")
struct CentralBridgeTests {
  let t0 = Fixture.t0
  let sensor = GATTHarness.sensor

  /// The devices list published at every tick that changed it; retries after 30 s.
  func bridge() -> CentralBridge {
    CentralBridge(
      discovery: DiscoveryBridge(topics: Fixture.topics, configuration: .init(devicesInterval: 0)),
      gatt: GATTBridge(
        topics: Fixture.topics,
        configuration: .init(
          policy: ConnectionPolicy(addresses: [GATTHarness.sensor]), retryMinDelay: 30)))
  }

  /// A bridge with Home Assistant discovery that connects the sensor by policy.
  func homeAssistantBridge(retainValues: Bool = false) -> CentralBridge {
    CentralBridge(
      discovery: DiscoveryBridge(
        topics: Fixture.topics,
        configuration: .init(
          devicesInterval: 0, homeAssistant: HomeAssistantDiscovery(topics: Fixture.topics))),
      gatt: GATTBridge(
        topics: Fixture.topics,
        configuration: .init(
          policy: ConnectionPolicy(addresses: [GATTHarness.sensor]), retryMinDelay: 30,
          retainValues: retainValues)))
  }

  /// The sensor heard at `t0`, connected by the policy at once and, with a tree, resolved at
  /// `t0 + 1.5`.
  func connectReady(_ bridge: inout CentralBridge, tree: GATTTree? = GATTHarness.tree) {
    _ = bridge.handle(.deviceUpdated(Fixture.advert(rssi: -60)), now: t0)
    _ = bridge.tick(now: t0)
    _ = bridge.connections(now: t0 + 1) { $0.connectFinished(sensor, error: nil, now: t0 + 1) }
    _ = bridge.handle(.connectionChanged(sensor, connected: true), now: t0 + 1)
    if let tree { _ = bridge.handle(.servicesResolved(sensor, tree), now: t0 + 1.5) }
  }

  /// The devices-list entry of the sensor in the last devices list among `outputs`.
  func listed(_ outputs: [CentralBridge.Output]) throws -> JSONValue? {
    let list = outputs.compactMap { output -> [UInt8]? in
      guard case .discovery(.publish(let topic, let payload, _)) = output,
        topic.rawValue == "gatt2mqtt/bridge/pi/devices"
      else { return nil }
      return payload
    }.last
    guard let list else { return nil }
    return try JSONValue.parse(list).arrayValue?.first {
      $0["address"]?.stringValue == "A4:C1:38:1E:29:DF"
    }
  }

  @Test(
    "every link state reaches the devices list in the same step, and agrees with <dev>/connection")
  func linkStatesReachTheRegistry() throws {
    var bridge = bridge()
    _ = bridge.tick(now: t0)  // the policy's attempt starts: connecting
    #expect(bridge.gatt?.state(of: sensor) == .connecting)
    // The device enters the registry while its link is being made: it starts out in step.
    _ = bridge.handle(.deviceUpdated(Fixture.advert(rssi: -60)), now: t0 + 0.5)
    #expect(bridge.discovery.registry[sensor]?.connection == .connecting)

    _ = bridge.connections(now: t0 + 1) { $0.connectFinished(sensor, error: nil, now: t0 + 1) }
    _ = bridge.handle(.connectionChanged(sensor, connected: true), now: t0 + 1)
    _ = bridge.handle(.servicesResolved(sensor, GATTHarness.tree), now: t0 + 1.5)
    #expect(bridge.gatt?.state(of: sensor) == .ready)
    #expect(bridge.discovery.registry[sensor]?.connection == .ready)
    let entry = try #require(try listed(bridge.tick(now: t0 + 10)))
    #expect(entry["connection"] == "ready")

    // A connected device neither goes offline nor is forgotten, however long it stays silent.
    let later = bridge.tick(now: t0 + 2_000)
    #expect(
      !later.contains {
        if case .discovery(.publish(let topic, _, _)) = $0 {
          return topic.rawValue == "gatt2mqtt/A4C1381E29DF/availability"
        }
        return false
      })
    #expect(bridge.discovery.registry[sensor] != nil)

    // The link drops: the registry follows the connection half's state.
    _ = bridge.handle(.connectionChanged(sensor, connected: false), now: t0 + 2_001)
    let state = try #require(bridge.gatt?.state(of: sensor))
    #expect(!state.isConnected)
    #expect(bridge.discovery.registry[sensor]?.connection == state)
    let after = bridge.tick(now: t0 + 2_001.5)
    let now = try #require(bridge.gatt?.state(of: sensor))
    #expect(try listed(after)?["connection"] == .string(now.rawValue))
  }

  @Test("a failed attempt shows as failed in the devices list; presence follows the link")
  func failedAttempt() throws {
    var bridge = bridge()
    _ = bridge.handle(.deviceUpdated(Fixture.advert(rssi: -60)), now: t0)
    _ = bridge.tick(now: t0)
    let outputs = bridge.connections(now: t0 + 1) {
      $0.connectFinished(
        sensor, error: CentralError(.timeout, message: "no answer"), now: t0 + 1)
    }
    #expect(bridge.discovery.registry[sensor]?.connection == .failed)
    #expect(!outputs.isEmpty)
    #expect(try listed(bridge.tick(now: t0 + 10))?["connection"] == "failed")
  }

  @Test(
    "the stack's Connected changes never make the devices list disagree with <dev>/connection: a repeated connected while ready, a disconnected after a failed attempt"
  )
  func stackChangesOfLinkedDevices() throws {
    var bridge = bridge()
    connectReady(&bridge)
    #expect(bridge.gatt?.state(of: sensor) == .ready)

    // The stack says connected again (a snapshot taken anew, another program's call): the
    // link stays ready, and so does the device's record.
    _ = bridge.handle(.connectionChanged(sensor, connected: true), now: t0 + 2)
    #expect(bridge.gatt?.state(of: sensor) == .ready)
    #expect(bridge.discovery.registry[sensor]?.connection == .ready)
    #expect(try listed(bridge.tick(now: t0 + 3))?["connection"] == "ready")

    // The link drops, the next attempt fails; then the stack reports the device disconnected
    // (it had connected at the radio level): the record stays failed, as the link.
    _ = bridge.handle(.connectionChanged(sensor, connected: false), now: t0 + 4)
    _ = bridge.tick(now: t0 + 40)
    #expect(bridge.gatt?.state(of: sensor) == .connecting)
    _ = bridge.connections(now: t0 + 41) {
      $0.connectFinished(sensor, error: CentralError(.timeout, message: "no answer"), now: t0 + 41)
    }
    #expect(bridge.gatt?.state(of: sensor) == .failed)
    _ = bridge.handle(.connectionChanged(sensor, connected: false), now: t0 + 42)
    #expect(bridge.discovery.registry[sensor]?.connection == .failed)
    #expect(try listed(bridge.tick(now: t0 + 43))?["connection"] == "failed")
  }

  /// The retained payloads published to `topic` among `outputs`, as text.
  func published(_ outputs: [CentralBridge.Output], _ topic: String) -> [String] {
    outputs.compactMap { output -> String? in
      switch output {
      case .discovery(.publish(let name, let payload, _)) where name.rawValue == topic,
        .gatt(.publish(let name, let payload, _)) where name.rawValue == topic:
        return String(decoding: payload, as: UTF8.self)
      default: return nil
      }
    }
  }

  @Test(
    "a device that went offline unheard and then connects is online again, and says so: by its link, and by the stack for one connected by another program"
  )
  func connectingBringsItOnline() throws {
    var bridge = CentralBridge(
      discovery: DiscoveryBridge(topics: Fixture.topics, configuration: .init(devicesInterval: 0)),
      gatt: GATTBridge(topics: Fixture.topics))
    // Linked on request after it went offline.
    let asked = Fixture.address("A4:C1:38:00:00:08")
    let askedAvailability = "gatt2mqtt/A4C138000008/availability"
    _ = bridge.handle(.deviceUpdated(Fixture.advert("A4:C1:38:00:00:08", rssi: -70)), now: t0)
    #expect(published(bridge.tick(now: t0 + 91), askedAvailability) == [#"{"state":"offline"}"#])
    var outputs =
      bridge.connections(now: t0 + 92) {
        $0.deviceRequest(connect: true, body: ["device": "A4:C1:38:00:00:08"], now: t0 + 92)
      }?.0 ?? []
    outputs += bridge.tick(now: t0 + 92)
    #expect(bridge.gatt?.state(of: asked) == .connecting)
    outputs += bridge.connections(now: t0 + 93) {
      $0.connectFinished(asked, error: nil, now: t0 + 93)
    }
    outputs += bridge.handle(.connectionChanged(asked, connected: true), now: t0 + 93)
    #expect(published(outputs, askedAvailability) == [#"{"state":"online"}"#])
    #expect(bridge.discovery.registry[asked]?.online == true)

    // No link made for it: connected by another program after it went offline.
    let other = Fixture.address("A4:C1:38:00:00:09")
    let otherAvailability = "gatt2mqtt/A4C138000009/availability"
    _ = bridge.handle(
      .deviceUpdated(Fixture.advert("A4:C1:38:00:00:09", rssi: -70)), now: t0 + 100)
    #expect(published(bridge.tick(now: t0 + 191), otherAvailability) == [#"{"state":"offline"}"#])
    let connected = bridge.handle(.connectionChanged(other, connected: true), now: t0 + 192)
    #expect(published(connected, otherAvailability) == [#"{"state":"online"}"#])
    #expect(bridge.discovery.registry[other]?.connection == .connected)
  }

  @Test(
    "a rename keeps a device's Home Assistant entities: its connection entity when not connected, its GATT entities when ready, under the new id"
  )
  func renameKeepsHomeAssistantEntities() throws {
    var bridge = homeAssistantBridge()
    let battery = "homeassistant/sensor/gatt2mqtt_A4C1381E29DF/battery_180f/config"
    let connection = "homeassistant/sensor/gatt2mqtt_A4C1381E29DF/connection/config"
    connectReady(&bridge, tree: nil)
    let ready = bridge.handle(.servicesResolved(sensor, GATTHarness.tree), now: t0 + 2)
    #expect(
      published(ready, battery).last?.contains(#""gatt2mqtt/A4C1381E29DF/gatt/180f/2a19""#) == true)

    let renamed = bridge.rename(sensor, to: try DeviceID(friendlyName: "kitchen/t"), now: t0 + 3)
    // The old id's state is cleared, not forgotten by prefix: `gatt2mqtt/A4C1381E29DF/…` could
    // be another device's levels.
    #expect(
      !renamed.contains {
        if case .fleet(.forgetRetained) = $0 { true } else { false }
      })
    #expect(published(renamed, "gatt2mqtt/A4C1381E29DF/connection") == [""])
    // Cleared with the old topics, then made again with the new ones.
    #expect(published(renamed, battery).first == "")
    #expect(
      published(renamed, battery).last?.contains(#""gatt2mqtt/kitchen/t/gatt/180f/2a19""#) == true)
    #expect(
      published(renamed, connection).last?.contains(#""gatt2mqtt/kitchen/t/connection""#) == true)

    // Not connected: the connection entity stays through a second rename.
    _ = bridge.handle(.connectionChanged(sensor, connected: false), now: t0 + 4)
    let again = bridge.rename(sensor, to: try DeviceID(friendlyName: "hall/t"), now: t0 + 5)
    #expect(published(again, connection).last?.contains(#""gatt2mqtt/hall/t/connection""#) == true)
  }

  @Test(
    "every tree of a ready device reaches Home Assistant: a battery that appears later gets its entity; a partial tree (as BlueZ reports one while exporting) removes no entity and clears no value"
  )
  func laterTrees() throws {
    var bridge = homeAssistantBridge(retainValues: true)
    let battery = "homeassistant/sensor/gatt2mqtt_A4C1381E29DF/battery_180f/config"
    let value = "gatt2mqtt/A4C1381E29DF/gatt/180f/2a19"
    let heartOnly = GATTTree(
      services: GATTHarness.tree.services.filter { $0.uuid == GATTHarness.heartRate }, mtu: 23)
    connectReady(&bridge, tree: nil)
    let partial = bridge.handle(.servicesResolved(sensor, heartOnly), now: t0 + 2)
    #expect(published(partial, battery).isEmpty)
    let full = bridge.handle(.servicesResolved(sensor, GATTHarness.tree), now: t0 + 3)
    #expect(published(full, battery).count == 1)
    #expect(published(full, battery).first?.isEmpty == false)
    // The same tree again changes nothing.
    #expect(
      published(bridge.handle(.servicesResolved(sensor, GATTHarness.tree), now: t0 + 4), battery)
        .isEmpty)
    _ = bridge.handle(
      .notification(GATTHarness.id(GATTHarness.battery, GATTHarness.batteryLevel), [80]),
      now: t0 + 5)
    let smaller = bridge.handle(.servicesResolved(sensor, heartOnly), now: t0 + 6)
    #expect(published(smaller, battery).isEmpty)
    #expect(published(smaller, value).isEmpty)
  }

  @Test(
    "a full registry never evicts a device being connected; a device readmitted takes its link's state"
  )
  func fullRegistryAndLinks() throws {
    var bridge = CentralBridge(
      discovery: DiscoveryBridge(
        topics: Fixture.topics,
        configuration: .init(registry: DeviceRegistry(capacity: 1), devicesInterval: 0)),
      gatt: GATTBridge(
        topics: Fixture.topics,
        configuration: .init(
          policy: ConnectionPolicy(addresses: [GATTHarness.sensor]), retryMinDelay: 30)))
    _ = bridge.handle(.deviceUpdated(Fixture.advert(rssi: -60)), now: t0)
    _ = bridge.tick(now: t0)
    #expect(bridge.discovery.registry[sensor]?.connection == .connecting)
    // Another device arrives: not admitted, the one being connected stays.
    let other = "A4:C1:38:00:00:07"
    _ = bridge.handle(.deviceUpdated(Fixture.advert(other, rssi: -50)), now: t0 + 1)
    #expect(bridge.discovery.registry[sensor] != nil)
    #expect(bridge.discovery.registry[Fixture.address(other)] == nil)

    // Forgotten while its link is down (a failed attempt, 900 s unheard), then heard again:
    // readmitted with the link's state.
    _ = bridge.connections(now: t0 + 2) {
      $0.connectFinished(sensor, error: CentralError(.timeout, message: "no answer"), now: t0 + 2)
    }
    _ = bridge.handle(.deviceUpdated(Fixture.advert(other, rssi: -50)), now: t0 + 3)
    #expect(bridge.discovery.registry[sensor] == nil)  // evicted: failed is not live
    #expect(bridge.gatt?.state(of: sensor) == .failed)  // configured by address: kept
    _ = bridge.handle(.deviceUpdated(Fixture.advert(rssi: -60)), now: t0 + 4)
    #expect(bridge.discovery.registry[sensor]?.connection == .failed)
    #expect(try listed(bridge.tick(now: t0 + 5))?["connection"] == "failed")
  }

  @Test(
    "a device the discovery half forgets loses its link when nothing wants it by address or request: its retained connection and gatt are cleared"
  )
  func forgottenDevicesLoseTheirLinks() throws {
    var bridge = CentralBridge(
      discovery: DiscoveryBridge(topics: Fixture.topics, configuration: .init(devicesInterval: 0)),
      gatt: GATTBridge(
        topics: Fixture.topics,
        configuration: .init(
          policy: ConnectionPolicy(names: [try NamePattern("Band*")]), retryMinDelay: 30)))
    // A private random address (rotates) matched by name: linked, the attempt fails.
    let band = Fixture.address("5A:00:00:00:00:01")
    _ = bridge.handle(
      .deviceUpdated(Fixture.advert("5A:00:00:00:00:01", name: "Band 7", rssi: -60, type: .random)),
      now: t0)
    _ = bridge.tick(now: t0)
    #expect(bridge.gatt?.state(of: band) == .connecting)
    _ = bridge.connections(now: t0 + 1) {
      $0.connectFinished(band, error: CentralError(.timeout, message: "no answer"), now: t0 + 1)
    }
    // bluetoothd drops it: the address rotated away.
    let removed = bridge.handle(.deviceRemoved(band), now: t0 + 40)
    #expect(bridge.discovery.registry[band] == nil)
    #expect(bridge.gatt?.state(of: band) == nil)
    #expect(published(removed, "gatt2mqtt/5A0000000001/connection") == [""])
    #expect(published(removed, "gatt2mqtt/5A0000000001/gatt") == [""])

    // A device configured by address keeps its link when forgotten after forget_after.
    var configured = self.bridge()
    _ = configured.handle(.deviceUpdated(Fixture.advert(rssi: -60)), now: t0)
    _ = configured.tick(now: t0)
    _ = configured.connections(now: t0 + 1) {
      $0.connectFinished(sensor, error: CentralError(.notFound, message: "gone"), now: t0 + 1)
    }
    _ = configured.tick(now: t0 + 2_000)
    #expect(configured.discovery.registry[sensor] == nil)
    #expect(configured.gatt?.state(of: sensor) != nil)
  }

  @Test(
    "the stack lost: a device another program had connected is disconnected in the devices list; a linked one shows its link's state"
  )
  func stackLostEndsStackConnections() throws {
    var bridge = bridge()
    connectReady(&bridge)
    let other = Fixture.address("A4:C1:38:00:00:09")
    _ = bridge.handle(.deviceUpdated(Fixture.advert("A4:C1:38:00:00:09", rssi: -70)), now: t0 + 2)
    _ = bridge.handle(.connectionChanged(other, connected: true), now: t0 + 2)
    #expect(bridge.discovery.registry[other]?.connection == .connected)

    _ = bridge.handle(.stackLost, now: t0 + 3)
    #expect(bridge.discovery.registry[other]?.connection == .disconnected)
    let link = try #require(bridge.gatt?.state(of: sensor))
    #expect(!link.isConnected)
    #expect(bridge.discovery.registry[sensor]?.connection == link)
    // Not connected any more: forgotten in time like any device.
    _ = bridge.tick(now: t0 + 2_000)
    #expect(bridge.discovery.registry[other] == nil)
  }

  @Test("without a connection half, device-plane steps do nothing and discovery still works")
  func withoutGATT() {
    var bridge = CentralBridge(discovery: DiscoveryBridge(topics: Fixture.topics))
    #expect(bridge.connections(now: t0) { ($0.tick(now: t0), 1) } == nil)
    #expect(bridge.connections(now: t0) { $0.tick(now: t0) }.isEmpty)
    _ = bridge.handle(.deviceUpdated(Fixture.advert(rssi: -60)), now: t0)
    #expect(bridge.discovery.registry.count == 1)
  }

  @Test("the wall-clock offset reaches both halves")
  func wallClockOffset() {
    var bridge = bridge()
    bridge.wallClockOffset = 3600
    #expect(bridge.discovery.wallClockOffset == 3600)
    #expect(bridge.gatt?.wallClockOffset == 3600)
  }

  /// The retained publications among `outputs`: topic → payload.
  func retained(_ outputs: [CentralBridge.Output]) -> [String: [UInt8]] {
    var topics: [String: [UInt8]] = [:]
    for case .gatt(.publish(let topic, let payload, retain: true)) in outputs {
      topics[topic.rawValue] = payload
    }
    return topics
  }

  /// A connected, resolved sensor on a bridge whose policy connects nothing by itself.
  func linkedOnRequest() throws -> CentralBridge {
    var bridge = CentralBridge(
      discovery: DiscoveryBridge(topics: Fixture.topics, configuration: .init(devicesInterval: 0)),
      gatt: GATTBridge(topics: Fixture.topics, configuration: .init(retryMinDelay: 30)))
    _ = bridge.handle(.deviceUpdated(Fixture.advert(rssi: -60)), now: t0)
    let answer = bridge.deviceRequest(connect: true, body: ["device": "A4:C1:38:1E:29:DF"], now: t0)
    #expect(try #require(answer).1.ok)
    _ = bridge.tick(now: t0)
    _ = bridge.connections(now: t0 + 1) { $0.connectFinished(sensor, error: nil, now: t0 + 1) }
    _ = bridge.handle(.connectionChanged(sensor, connected: true), now: t0 + 1)
    _ = bridge.handle(.servicesResolved(sensor, GATTHarness.tree), now: t0 + 1.5)
    #expect(bridge.gatt?.state(of: sensor) == .ready)
    return bridge
  }

  @Test(
    "device/remove of a linked device clears its retained connection and gatt and forgets the link"
  )
  func removeLinked() throws {
    var bridge = try linkedOnRequest()
    let (outputs, response) = bridge.remove(["device": "A4C1381E29DF"], now: t0 + 5)
    #expect(response.ok)
    let cleared = retained(outputs)
    #expect(cleared["gatt2mqtt/A4C1381E29DF/connection"] == [])
    #expect(cleared["gatt2mqtt/A4C1381E29DF/gatt"] == [])
    #expect(
      outputs.contains {
        if case .discovery(.removeDevice(let address)) = $0 { return address == sensor }
        return false
      })
    #expect(outputs.contains(.gatt(.disconnect(sensor))))
    #expect(bridge.gatt?.state(of: sensor) == nil)
    #expect(bridge.discovery.registry[sensor] == nil)
    // The stack's RemoveDevice ends the link: nothing is published for it again, and no
    // attempt to connect follows (the device/connect request went with the link).
    let after = bridge.handle(.connectionChanged(sensor, connected: false), now: t0 + 6)
    #expect(retained(after).isEmpty)
    #expect(
      !bridge.tick(now: t0 + 100).contains {
        if case .gatt(.connect(let address, _)) = $0 { return address == sensor }
        return false
      })
  }

  @Test("device/remove of a device the configuration connects starts its link over, disconnected")
  func removeConfigured() throws {
    var bridge = bridge()
    _ = bridge.tick(now: t0)
    _ = bridge.handle(.deviceUpdated(Fixture.advert(rssi: -60)), now: t0 + 0.5)
    _ = bridge.connections(now: t0 + 1) { $0.connectFinished(sensor, error: nil, now: t0 + 1) }
    _ = bridge.handle(.connectionChanged(sensor, connected: true), now: t0 + 1)
    _ = bridge.handle(.servicesResolved(sensor, GATTHarness.tree), now: t0 + 1.5)
    let (outputs, response) = bridge.remove(["device": "A4:C1:38:1E:29:DF"], now: t0 + 5)
    #expect(response.ok)
    let publications = outputs.compactMap { output -> (String, [UInt8])? in
      guard case .gatt(.publish(let topic, let payload, retain: true)) = output else { return nil }
      return (topic.rawValue, payload)
    }
    // Cleared first, then the fresh link's state: the configuration still wants it.
    #expect(publications.first { $0.0.hasSuffix("/gatt") }?.1 == [])
    let states = publications.filter { $0.0 == "gatt2mqtt/A4C1381E29DF/connection" }.map(\.1)
    #expect(states.count == 2)
    #expect(states.first == [])
    #expect(try JSONValue.parse(try #require(states.last))["state"] == "disconnected")
    #expect(bridge.gatt?.state(of: sensor) == .disconnected)
    // Not connected again before the device is heard: the stack has just forgotten it.
    func connects(_ outputs: [CentralBridge.Output]) -> Bool {
      outputs.contains {
        if case .gatt(.connect(let address, _)) = $0 { return address == sensor }
        return false
      }
    }
    #expect(!connects(bridge.tick(now: t0 + 10)))
    #expect(!connects(bridge.tick(now: t0 + 60)))
    let heard = bridge.handle(.deviceUpdated(Fixture.advert(rssi: -60)), now: t0 + 61)
    #expect(connects(heard + bridge.tick(now: t0 + 61)))
  }

  @Test("device/remove by the device's friendly name forgets it as by its address")
  func removeByName() throws {
    var bridge = try linkedOnRequest()
    _ = bridge.rename(sensor, to: try DeviceID(friendlyName: "kitchen/thermometer"), now: t0 + 2)
    let (outputs, response) = bridge.remove(["device": "kitchen/thermometer"], now: t0 + 5)
    #expect(response.ok)
    #expect(outputs.contains(.gatt(.disconnect(sensor))))
    #expect(bridge.gatt?.state(of: sensor) == nil)
    #expect(bridge.discovery.registry[sensor] == nil)
  }

  @Test("device/remove of an unknown address answers as before and touches no link")
  func removeUnknown() throws {
    var bridge = try linkedOnRequest()
    let (outputs, response) = bridge.remove(["device": "11:22:33:44:55:66"], now: t0 + 5)
    #expect(response.ok)
    #expect(retained(outputs).isEmpty)
    #expect(bridge.gatt?.state(of: sensor) == .ready)
  }
}
