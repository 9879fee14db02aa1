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
}
