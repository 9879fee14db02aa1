import BridgeCore
import Testing

@Suite("GATT bridge: connections")
struct GATTBridgeConnectionTests {
  typealias H = GATTHarness

  func harness(_ addresses: [BluetoothAddress] = [H.sensor], max: Int = 5) -> GATTHarness {
    GATTHarness(
      .init(policy: ConnectionPolicy(addresses: Set(addresses)), maxConnections: max))
  }

  @Test("a selected device goes disconnected → connecting → connected → discovering → ready")
  func stateMachine() throws {
    var h = harness()
    let first = h.tick()
    #expect(first.connects == [H.sensor])
    h.connected(H.sensor)
    let resolved = h.event(.servicesResolved(H.sensor, H.tree))
    #expect(h.states() == ["connecting", "connected", "discovering", "ready"])
    #expect(h.bridge.state(of: H.sensor) == .ready)
    let gatt = try #require(resolved.first { $0.topic == "gatt2mqtt/A4C1381E29DF/gatt" })
    #expect(gatt.retain == true)
    #expect(gatt.json == H.tree.json)
    #expect(h.events("connected").count == 1)
    #expect(h.events("gatt_resolved").first?["services"] == 4)
    // Every connection state is retained and names the owner.
    for output in h.outputs where output.topic == "gatt2mqtt/A4C1381E29DF/connection" {
      #expect(output.retain == true)
      #expect(output.json?.objectValue?["owner"] == "pi")
    }
  }

  @Test(
    "device/remove while a read runs: the read is answered not_connected at once, its late value is published nowhere"
  )
  func removeWhileReading() throws {
    var h = GATTHarness(
      .init(policy: ConnectionPolicy(addresses: [H.sensor]), retainValues: true))
    h.ready()
    let path = H.path(H.battery, H.batteryLevel)
    let read = try #require(h.send(.get(path), #"{"transaction":"t1"}"#).operations.first)
    let removed = h.record(h.bridge.remove(H.sensor, now: h.now))
    let answer = try #require(h.results(path).last)
    #expect(answer["status"] == "error")
    #expect(answer["error"] == "not_connected")
    #expect(answer["transaction"] == "t1")
    #expect(
      removed.contains { $0.topic == Fixture.topics.value(path).rawValue && $0.payload == [] })
    // The stack answers the read afterwards: nothing is published, retained or not.
    let late = h.finish(read, .success([0x2A]))
    #expect(late.isEmpty)
  }

  @Test("the tree is published as TOPICS.md shows it")
  func treeJSON() {
    let services = H.tree.json.objectValue?["services"]?.arrayValue ?? []
    let battery = services.first { $0.objectValue?["uuid"] == "180f" }
    let text = battery.map { String(decoding: $0.serializedBytes(), as: UTF8.self) }
    #expect(
      text
        == #"{"uuid":"180f","primary":true,"characteristics":[{"uuid":"2a19","flags":["read","notify"],"descriptors":["2902"]}]}"#
    )
    #expect(H.tree.json.objectValue?["mtu"] == 23)
  }

  @Test("a timed-out attempt fails, is reported, and is retried with exponential backoff")
  func timeoutBackoff() {
    var h = GATTHarness(
      .init(
        policy: ConnectionPolicy(addresses: [H.sensor]), retryMinDelay: 2, retryMaxDelay: 10))
    var delays: [Double] = []
    h.tick()
    for _ in 0..<5 {
      h.connected(H.sensor, error: CentralError(.timeout, message: "no answer"))
      let failedAt = h.now
      var waited = 0.0
      while h.tick(0.5).connects.isEmpty { waited += 0.5 }
      delays.append(h.now - failedAt)
      _ = waited
    }
    #expect(delays == [2, 4, 8, 10, 10])
    #expect(h.events("connect_failed").count == 5)
    #expect(h.events("connect_failed").first?["error"] == "timeout")
    #expect(h.states().contains("failed"))
  }

  @Test("retry delays depend on the kind of failure")
  func retryClasses() {
    let bridge = GATTBridge(
      topics: Fixture.topics, configuration: .init(retryMinDelay: 2, retryMaxDelay: 120))
    #expect(bridge.retryDelay(after: .inProgress, attempt: 1) == 1)
    #expect(bridge.retryDelay(after: .inProgress, attempt: 3) == 1)
    #expect(bridge.retryDelay(after: .inProgress, attempt: 5) == 32)
    #expect(bridge.retryDelay(after: .outOfSlots, attempt: 1) == 30)
    #expect(bridge.retryDelay(after: .aborted, attempt: 2) == 4)
    #expect(bridge.retryDelay(after: .timeout, attempt: 20) == 120)
    #expect(bridge.retryDelay(after: .bluezError, attempt: 1) == 2)
  }

  @Test("a device the stack does not know waits for its next advertisement")
  func notFoundWaitsForSighting() {
    var h = harness()
    h.tick()
    h.connected(H.sensor, error: CentralError(.notFound, message: "no such device"))
    for _ in 0..<30 { #expect(h.tick().connects.isEmpty) }
    h.event(.deviceUpdated(Fixture.advert(H.sensor.description, rssi: -60)))
    #expect(h.outputs.connects.count == 2)
  }

  @Test("out of slots waits 30 s, or until another link goes down")
  func outOfSlots() {
    var h = harness([H.sensor, H.actuator])
    h.tick()
    // A4:C1:38:00:00:02 sorts first.
    h.connected(H.actuator)
    h.event(.servicesResolved(H.actuator, H.tree))
    #expect(h.outputs.connects == [H.actuator, H.sensor])
    h.connected(H.sensor, error: CentralError(.outOfSlots, message: "limit"))
    for _ in 0..<5 { #expect(h.tick().connects.isEmpty) }
    h.event(.connectionChanged(H.actuator, connected: false))
    #expect(h.outputs.connects.suffix(1) == [H.sensor])
  }

  @Test("one attempt at a time, and at most max_connections links")
  func bounded() {
    let third = Fixture.address("A4:C1:38:00:00:03")
    var h = harness([H.sensor, H.actuator, third], max: 2)
    #expect(h.tick().connects.count == 1)
    #expect(h.tick().connects.isEmpty)
    h.connected(h.outputs.connects[0])
    #expect(h.outputs.connects.count == 2)
    h.connected(h.outputs.connects[1])
    for _ in 0..<10 { #expect(h.tick().connects.isEmpty) }
    h.event(.connectionChanged(h.outputs.connects[0], connected: false))
    #expect(h.outputs.connects.count == 3)
    #expect(Set(h.outputs.connects).count == 3)
  }

  @Test("an unexpected disconnect is reported and reconnected; a requested one is not")
  func reconnectPolicy() {
    var h = harness()
    h.finishAll(h.ready())
    h.event(.connectionChanged(H.sensor, connected: false))
    #expect(h.events("disconnected").count == 1)
    #expect(h.bridge.counters.unexpectedDisconnects == 1)
    h.tick(2)
    #expect(h.outputs.connects.count == 2)
    h.connected(H.sensor)
    h.finishAll(h.event(.servicesResolved(H.sensor, H.tree)))
    let closing = h.send(.connectionSet(H.device(H.sensor)), #"{"state":"disconnected"}"#)
    // Notifications off first (the transfer characteristic), then the disconnect.
    #expect(closing.operations.map(\.kind) == [.notify(false)])
    #expect(closing.disconnects.isEmpty)
    h.finishAll(closing)
    #expect(h.outputs.disconnects == [H.sensor])
    h.event(.connectionChanged(H.sensor, connected: false))
    for _ in 0..<200 { #expect(h.tick().connects.isEmpty) }
    #expect(h.states().last == "disconnected")
    h.send(.connectionSet(H.device(H.sensor)), #"{"state":"connected","transaction":1}"#)
    #expect(h.outputs.connects.count == 3)
  }

  @Test(
    "a connection that comes up after its link was torn down and dropped is disconnected, not left open"
  )
  func lateConnectionOfADroppedLink() throws {
    var h = GATTHarness(.init(policy: ConnectionPolicy(names: [try NamePattern("Thermo")])))
    h.bridge.requireOwnership()
    h.record(h.bridge.setOwned(H.sensor, true, now: h.now))
    h.event(.deviceUpdated(Fixture.advert(rssi: -50)))
    if h.outputs.connects.isEmpty { h.tick() }
    #expect(h.outputs.connects == [H.sensor])
    h.record(h.bridge.setOwned(H.sensor, false, now: h.now))  // lost while connecting
    #expect(h.bridge.state(of: H.sensor) == .disconnected)
    h.record(h.bridge.forgotten(H.sensor))  // then forgotten: the link goes
    #expect(h.bridge.state(of: H.sensor) == nil)
    let late = h.connected(H.sensor)
    #expect(late.disconnects == [H.sensor])
    #expect(h.connected(H.sensor, error: CentralError(.timeout, message: "late")).isEmpty)
  }

  @Test("connection requests for devices never seen, and malformed ones, are reported")
  func badConnectionRequests() {
    var h = harness([])
    let stranger = Fixture.address("11:22:33:44:55:66")
    h.send(.connectionSet(H.device(stranger)), #"{"state":"connected"}"#)
    #expect(h.events("request_error").first?["error"] == "unknown_device")
    h.send(.connectionSet(H.device(stranger)), #"{"state":"sideways"}"#)
    #expect(h.events("request_error").last?["error"] == "invalid_payload")
    h.send(.connectionSet(H.device(stranger)), "not json")
    #expect(h.events("request_error").count == 3)
    #expect(h.outputs.connects.isEmpty)
    // Each outcome is also a result on <dev>/connection/result, with the transaction.
    h.send(.connectionSet(H.device(stranger)), #"{"state":"connected","transaction":9}"#)
    let results = h.outputs.filter { $0.topic == "gatt2mqtt/112233445566/connection/result" }
    #expect(results.count == 4)
    #expect(results.last?.json?["status"] == "error")
    #expect(results.last?.json?["error"] == "unknown_device")
    #expect(results.last?.json?["transaction"] == 9)
    // Once seen, the same request connects.
    h.event(.deviceUpdated(Fixture.advert(stranger.description, rssi: -70)))
    h.send(.connectionSet(H.device(stranger)), #"{"state":"connected"}"#)
    #expect(h.outputs.connects == [stranger])
    let accepted = h.outputs.filter { $0.topic == "gatt2mqtt/112233445566/connection/result" }
    #expect(accepted.last?.json?["status"] == "ok")
    #expect(accepted.last?.json?["state"] == "connecting")
  }

  @Test("device/connect and device/disconnect answer on the bridge plane")
  func deviceRequests() {
    var h = harness([])
    h.event(.deviceUpdated(Fixture.advert(H.sensor.description, rssi: -70)))
    let (outputs, response) = h.bridge.deviceRequest(
      connect: true, body: ["device": "A4C1381E29DF"], now: h.now)
    #expect(response.ok)
    #expect(response.data["state"] == "connecting")
    #expect(outputs.connects == [H.sensor])
    let bad = h.bridge.deviceRequest(connect: true, body: ["device": 5], now: h.now)
    #expect(bad.response.errorCode == "invalid_payload")
    let unknown = h.bridge.deviceRequest(connect: true, body: ["device": "nope"], now: h.now)
    #expect(unknown.response.errorCode == "unknown_device")
    let extra = h.bridge.deviceRequest(
      connect: false, body: ["device": "A4C1381E29DF", "force": true], now: h.now)
    #expect(extra.response.errorCode == "invalid_payload")
    // Disconnecting: a device seen but never linked is simply not connected; one never seen is
    // an error, not an "ok".
    h.event(.deviceUpdated(Fixture.advert("11:11:11:11:11:11", rssi: -70)))
    let seen = h.bridge.deviceRequest(
      connect: false, body: ["device": "11:11:11:11:11:11"], now: h.now)
    #expect(seen.response.ok)
    let never = h.bridge.deviceRequest(
      connect: false, body: ["device": "22:22:22:22:22:22"], now: h.now)
    #expect(never.response.errorCode == "unknown_device")
    #expect(never.outputs.isEmpty)
  }

  @Test("devices are selected by name pattern and advertised service")
  func policySelection() throws {
    var h = GATTHarness(
      .init(
        policy: ConnectionPolicy(
          names: [try NamePattern("Thermo*")], uuids: [BluetoothUUID(uuid16: 0x180D)])))
    h.event(.deviceUpdated(Fixture.advert("11:11:11:11:11:11", name: "Other", rssi: -50)))
    #expect(h.outputs.connects.isEmpty)
    h.event(.deviceUpdated(Fixture.advert("22:22:22:22:22:22", name: "thermometer", rssi: -50)))
    #expect(h.outputs.connects == [Fixture.address("22:22:22:22:22:22")])
    h.connected(Fixture.address("22:22:22:22:22:22"))
    h.event(
      .deviceUpdated(Fixture.advert("33:33:33:33:33:33", name: nil, rssi: -50, uuids: [0x180D])))
    #expect(h.outputs.connects.count == 2)
    // Cached devices (no RSSI) are not sightings.
    h.event(.deviceAppeared(Fixture.advert("44:44:44:44:44:44", name: "Thermo2", rssi: nil)))
    #expect(h.outputs.connects.count == 2)
  }

  @Test("shutdown turns notifications off, then disconnects, then is idle")
  func orderlyShutdown() {
    var h = harness()
    let arming = h.ready()
    let notifyOn = arming.operations
    #expect(notifyOn.count == 1)  // the transfer characteristic
    h.finish(notifyOn[0])
    #expect(!h.bridge.isIdle)
    let down = h.record(h.bridge.shutdown(now: h.now))
    #expect(down.operations.map(\.kind) == [.notify(false)])
    #expect(down.disconnects.isEmpty)
    let after = h.finish(down.operations[0])
    #expect(after.disconnects == [H.sensor])
    h.event(.connectionChanged(H.sensor, connected: false))
    #expect(h.bridge.isIdle)
    #expect(h.tick(60).connects.isEmpty)
  }

  @Test(
    "bluetoothd going away drops every link; no attempt while it is gone; one at once when an adapter is back"
  )
  func stackLost() {
    var h = harness()
    h.ready()
    h.event(.stackLost)
    #expect(h.states().last == "disconnected")
    h.tick(2)
    h.tick(30)
    #expect(h.outputs.connects.count == 1, "attempts without a stack run up the backoff")
    // An adapter that is not powered is not the stack being usable.
    #expect(h.event(.adapterChanged(AdapterInfo(id: "hci0", powered: false))).connects.isEmpty)
    #expect(h.event(.adapterChanged(AdapterInfo(id: "hci0", powered: true))).connects == [H.sensor])
  }

  @Test(
    "a link that failed for want of a stack or of power retries as soon as an adapter is powered")
  func stackErrorRetriesAtPowerOn() {
    var h = harness()
    #expect(h.tick().connects == [H.sensor])
    for _ in 0..<4 {
      h.connected(H.sensor, error: CentralError(.poweredOff, message: "adapter off"))
      h.tick(60)
    }
    // Backed off by now; the power coming back cuts the wait short.
    h.connected(H.sensor, error: CentralError(.poweredOff, message: "adapter off"))
    #expect(h.tick(0.1).connects.isEmpty)
    #expect(h.event(.adapterChanged(AdapterInfo(id: "hci0", powered: true))).connects == [H.sensor])
    // Other failures keep their backoff: a discovering flip does not shorten it.
    h.connected(H.sensor, error: CentralError(.timeout, message: "no answer"))
    #expect(
      h.event(.adapterChanged(AdapterInfo(id: "hci0", powered: true, discovering: true))).connects
        .isEmpty)
    // Nor does it shorten a stack error's backoff: only an adapter becoming powered does.
    #expect(h.tick(600).connects == [H.sensor])
    h.connected(H.sensor, error: CentralError(.poweredOff, message: "adapter off"))
    #expect(
      h.event(.adapterChanged(AdapterInfo(id: "hci0", powered: true, discovering: false))).connects
        .isEmpty)
    #expect(h.event(.adapterChanged(AdapterInfo(id: "hci1", powered: true))).connects == [H.sensor])
  }
}
