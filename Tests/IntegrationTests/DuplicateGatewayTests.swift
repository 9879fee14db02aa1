import BridgeCore
import Foundation
import Mosquitto
import TestSupport
import Testing

/// Two `gatt2mqtt` processes configured with the same `gateway.id` against one real broker.
@Suite(
  "Duplicate gateway.id", .enabled(if: Broker.isAvailable, "mosquitto is not installed"),
  .timeLimit(.minutes(2)))
struct DuplicateGatewayTests {
  /// The instance id in a state message.
  static func instance(_ message: MQTTMessage?) -> String? {
    message.flatMap { try? JSONValue.parse($0.payload) }?["instance"]?.stringValue
  }

  /// The duplicate_gateway_id events seen, by role.
  static func roles(_ seen: Collector, _ topic: String) -> [String] {
    seen.messages.filter { $0.topic == topic }.compactMap { try? JSONValue.parse($0.payload) }
      .filter { $0["type"]?.stringValue == "duplicate_gateway_id" }
      .compactMap { $0["data"]?["role"]?.stringValue }
  }

  /// Messages of the device plane (a simulated world's devices), not the bridge's, published
  /// while the observer listened (not retained ones of an earlier run).
  static func devicePlane(_ seen: Collector) -> [MQTTMessage] {
    seen.messages.filter { !$0.retain && !$0.topic.hasPrefix("gatt2mqtt/bridge/") }
  }

  /// Health reports of a gateway with the simulated radio (the one without a radio has none).
  static func simulatedHealth(_ seen: Collector) -> [MQTTMessage] {
    seen.messages.filter {
      $0.topic == "gatt2mqtt/bridge/twin/health"
        && (try? JSONValue.parse($0.payload))?["simulation"] != nil
    }
  }

  @Test(
    "the newcomer stands by (no device plane, no health, no answers), says so and exits 78 after its grace, leaving the incumbent's state; the incumbent keeps running"
  )
  func newcomerStops() async throws {
    let broker = try Broker()
    try await broker.start()
    defer { broker.stop() }
    let (observer, seen) = try await observe(broker, "gatt2mqtt/#")
    let first = try GatewayProcess(broker: broker, id: "twin", extra: ["--radio", "none"])
    let stateTopic = first.stateTopic
    #expect(
      await eventually {
        seen.messages.contains { $0.topic == stateTopic && stateIs($0, "online") }
      })
    let firstInstance = try #require(
      Self.instance(seen.messages.last { $0.topic == stateTopic }))

    // The newcomer has a simulated world: acting, it would publish its devices at once.
    let second = try GatewayProcess(broker: broker, id: "twin", extra: ["--radio", "simulated"])
    let started = ContinuousClock.now
    let eventTopic = "gatt2mqtt/bridge/twin/event"
    #expect(await eventually { Self.roles(seen, eventTopic).contains("newcomer") })
    // A request to the id both use is answered once, by the incumbent.
    try await observer.publish(
      MQTTMessage(
        topic: "gatt2mqtt/bridge/twin/request/health_check", text: #"{"transaction":"t1"}"#,
        qos: .atLeastOnce))
    let responseTopic = "gatt2mqtt/bridge/twin/response/health_check"
    #expect(await eventually { seen.messages.contains { $0.topic == responseTopic } })
    try await Task.sleep(for: .seconds(2))
    #expect(seen.messages.filter { $0.topic == responseTopic }.count == 1)
    // keepalive 5 s: the newcomer waits 1.5 × 5 + 5 = 12.5 s for the other to go offline.
    #expect(await eventually(timeout: 40) { await second.child.wait(timeout: 0) != nil })
    #expect(second.log.contains("this one stands by and stops in"))
    #expect(Self.devicePlane(seen).isEmpty, "published: \(Self.devicePlane(seen).map(\.topic))")
    #expect(Self.simulatedHealth(seen).isEmpty)
    let waited = ContinuousClock.now - started
    #expect(waited >= .seconds(10))
    #expect(ChildProcess.exitCode(second.child.wait()) == 78)
    #expect(second.log.contains("another gatt2mqtt"))
    #expect(second.log.contains("gateway.id"))
    #expect(Self.roles(seen, eventTopic).contains("newcomer"))
    #expect(Self.roles(seen, eventTopic).contains("incumbent"))

    // The incumbent runs on, and the retained state is its own online state.
    #expect(await first.child.wait(timeout: 0) == nil)
    let (late, lateSeen) = try await observe(broker, stateTopic)
    #expect(await eventually { lateSeen.messages.first != nil })
    let retained = lateSeen.messages.first
    #expect(stateIs(retained, "online"))
    #expect(Self.instance(retained) == firstInstance)
    await late.shutdown()
    await observer.shutdown()
  }

  /// The types of the events seen on `topic`.
  static func eventTypes(_ seen: Collector, _ topic: String) -> [String] {
    seen.messages.filter { $0.topic == topic }.compactMap { try? JSONValue.parse($0.payload) }
      .compactMap { $0["type"]?.stringValue }
  }

  @Test(
    "with fleet ownership, a newcomer with the same gateway.id takes nothing from the incumbent: no device lost, no claim of its own"
  )
  func fleetIncumbentKeepsItsDevices() async throws {
    let broker = try Broker()
    try await broker.start()
    defer { broker.stop() }
    let (observer, seen) = try await observe(broker, "gatt2mqtt/#")
    let fleet = ["--radio", "simulated", "--fleet.ownership.enabled", "true"]
    let first = try GatewayProcess(broker: broker, id: "twin", extra: fleet)
    let eventTopic = "gatt2mqtt/bridge/twin/event"
    #expect(
      await eventually(timeout: 20) {
        Self.eventTypes(seen, eventTopic).contains("ownership_gained")
      })
    let firstInstance = try #require(
      Self.instance(seen.messages.last { $0.topic == first.stateTopic && stateIs($0, "online") }))
    let second = try GatewayProcess(broker: broker, id: "twin", extra: fleet)
    #expect(await eventually { Self.roles(seen, eventTopic).contains("incumbent") })
    try await Task.sleep(for: .seconds(3))
    // Stopped while standing by (what an operator does after the critical log): it publishes
    // no offline state over the incumbent's, and exits 0.
    second.child.signal(SIGTERM)
    #expect(await second.child.wait(timeout: 5).map(ChildProcess.exitCode) == 0, "\(second.log)")
    try await Task.sleep(for: .seconds(2))
    #expect(
      !seen.messages.contains { $0.topic == first.stateTopic && stateIs($0, "offline") },
      "\(seen.messages.filter { $0.topic == first.stateTopic }.map(\.text))")
    #expect(
      !Self.eventTypes(seen, eventTopic).contains("ownership_lost"),
      "\(Self.eventTypes(seen, eventTopic))")
    // Every claim on the broker is the incumbent's.
    let claims = seen.messages.filter { $0.topic.hasSuffix("/owner") && !$0.payload.isEmpty }
      .compactMap { try? OwnershipClaim(parsing: $0.payload) }
    #expect(!claims.isEmpty)
    #expect(claims.allSatisfy { $0.instance == firstInstance })
    #expect(await first.child.wait(timeout: 0) == nil)
    await observer.shutdown()
  }

  @Test(
    "a stale online state (a run that lost power) that turns offline within the grace: the new run carries on"
  )
  func staleSessionClears() async throws {
    let broker = try Broker()
    try await broker.start()
    defer { broker.stop() }
    let (observer, seen) = try await observe(broker, "gatt2mqtt/#")
    // The broker still holds the online state of a run that is gone.
    let ghost = GatewayInstance(id: "00000000deadbeef", started: 1_000)
    try await observer.publish(
      MQTTMessage(
        topic: "gatt2mqtt/bridge/twin/state", payload: ghost.statePayload(online: true),
        qos: .atLeastOnce, retain: true))
    let gateway = try GatewayProcess(broker: broker, id: "twin", extra: ["--radio", "simulated"])
    let eventTopic = "gatt2mqtt/bridge/twin/event"
    #expect(await eventually { Self.roles(seen, eventTopic).contains("newcomer") })
    // Standing by while the other run may still act.
    try await Task.sleep(for: .seconds(2))
    #expect(Self.devicePlane(seen).isEmpty, "published: \(Self.devicePlane(seen).map(\.topic))")
    #expect(Self.simulatedHealth(seen).isEmpty)
    // The ghost's last will arrives (the broker gave up on its connection).
    try await observer.publish(
      MQTTMessage(
        topic: "gatt2mqtt/bridge/twin/state", payload: ghost.statePayload(online: false),
        qos: .atLeastOnce, retain: true))
    #expect(await eventually { Self.roles(seen, eventTopic).contains("cleared") })
    // Now it acts: its simulated devices and health appear.
    #expect(await eventually { !Self.devicePlane(seen).isEmpty })
    #expect(await eventually { !Self.simulatedHealth(seen).isEmpty })
    // Its own online state is the retained one again.
    let (late, lateSeen) = try await observe(broker, "gatt2mqtt/bridge/twin/state")
    #expect(
      await eventually {
        let last = lateSeen.messages.last
        return stateIs(last, "online") && Self.instance(last) != ghost.id
      })
    await late.shutdown()
    // Past the grace (12.5 s) it still runs.
    try await Task.sleep(for: .seconds(14))
    #expect(await gateway.child.wait(timeout: 0) == nil)
    await observer.shutdown()
  }

  @Test(
    "a run that had to start without the broker and then meets an older run online stops at once with 75 (restarted into standing by)"
  )
  func lateRivalStopsAtOnce() async throws {
    let broker = try Broker(persistence: true)
    try await broker.start()
    defer { broker.stop() }
    let ghost = GatewayInstance(id: "00000000deadbeef", started: 1_000)
    let (setter, _) = try await observe(broker, "gatt2mqtt/bridge/twin/state")
    try await setter.publish(
      MQTTMessage(
        topic: "gatt2mqtt/bridge/twin/state", payload: ghost.statePayload(online: true),
        qos: .atLeastOnce, retain: true))
    await setter.shutdown()
    broker.stop()  // SIGTERM: the retained state is saved
    let gateway = try GatewayProcess(broker: broker, id: "twin", extra: ["--radio", "simulated"])
    // Without a broker it acts after 5 s.
    #expect(await eventually(timeout: 15) { gateway.log.contains("has not handed back") })
    try await broker.start()
    #expect(await eventually(timeout: 20) { await gateway.child.wait(timeout: 0) != nil })
    #expect(ChildProcess.exitCode(gateway.child.wait()) == 75, "log: \(gateway.log)")
    #expect(gateway.log.contains("already acted"))

    // Restarted (as systemd does on 75): the retained online state is the stopped run's, which
    // never answers: the new run stands by for its grace, then calls it stale and acts.
    let (observer, seen) = try await observe(broker, "gatt2mqtt/#")
    let restarted = try GatewayProcess(broker: broker, id: "twin", extra: ["--radio", "simulated"])
    let eventTopic = "gatt2mqtt/bridge/twin/event"
    #expect(await eventually { Self.roles(seen, eventTopic).contains("newcomer") })
    try await Task.sleep(for: .seconds(2))
    #expect(Self.devicePlane(seen).isEmpty, "published: \(Self.devicePlane(seen).map(\.topic))")
    #expect(await eventually(timeout: 30) { Self.roles(seen, eventTopic).contains("stale") })
    #expect(await eventually { !Self.devicePlane(seen).isEmpty })
    #expect(await restarted.child.wait(timeout: 0) == nil)
    await observer.shutdown()
  }
}
