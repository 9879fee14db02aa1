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

  @Test(
    "the newcomer says so and exits 78 after its grace, leaving the incumbent's state; the incumbent keeps running"
  )
  func newcomerStops() async throws {
    let broker = try Broker()
    try broker.start()
    defer { broker.stop() }
    let (observer, seen) = try await observe(broker, "gatt2mqtt/bridge/twin/#")
    let first = try GatewayProcess(broker: broker, id: "twin", extra: ["--radio", "none"])
    let stateTopic = first.stateTopic
    #expect(
      await eventually {
        seen.messages.contains { $0.topic == stateTopic && stateIs($0, "online") }
      })
    let firstInstance = try #require(
      Self.instance(seen.messages.last { $0.topic == stateTopic }))

    let second = try GatewayProcess(broker: broker, id: "twin", extra: ["--radio", "none"])
    let started = ContinuousClock.now
    // keepalive 5 s: the newcomer waits 1.5 × 5 + 5 = 12.5 s for the other to go offline.
    #expect(await eventually(timeout: 40) { second.child.wait(timeout: 0) != nil })
    let waited = ContinuousClock.now - started
    #expect(waited >= .seconds(10))
    #expect(ChildProcess.exitCode(second.child.wait()) == 78)
    #expect(second.log.contains("another gatt2mqtt"))
    #expect(second.log.contains("gateway.id"))
    let eventTopic = "gatt2mqtt/bridge/twin/event"
    #expect(Self.roles(seen, eventTopic).contains("newcomer"))
    #expect(Self.roles(seen, eventTopic).contains("incumbent"))

    // The incumbent runs on, and the retained state is its own online state.
    #expect(first.child.wait(timeout: 0) == nil)
    let (late, lateSeen) = try await observe(broker, stateTopic)
    #expect(await eventually { lateSeen.messages.first != nil })
    let retained = lateSeen.messages.first
    #expect(stateIs(retained, "online"))
    #expect(Self.instance(retained) == firstInstance)
    await late.shutdown()
    await observer.shutdown()
  }

  @Test(
    "a stale online state (a run that lost power) that turns offline within the grace: the new run carries on"
  )
  func staleSessionClears() async throws {
    let broker = try Broker()
    try broker.start()
    defer { broker.stop() }
    let (observer, seen) = try await observe(broker, "gatt2mqtt/bridge/twin/#")
    // The broker still holds the online state of a run that is gone.
    let ghost = GatewayInstance(id: "00000000deadbeef", started: 1_000)
    try await observer.publish(
      MQTTMessage(
        topic: "gatt2mqtt/bridge/twin/state", payload: ghost.statePayload(online: true),
        qos: .atLeastOnce, retain: true))
    let gateway = try GatewayProcess(broker: broker, id: "twin", extra: ["--radio", "none"])
    let eventTopic = "gatt2mqtt/bridge/twin/event"
    #expect(await eventually { Self.roles(seen, eventTopic).contains("newcomer") })
    // The ghost's last will arrives (the broker gave up on its connection).
    try await observer.publish(
      MQTTMessage(
        topic: "gatt2mqtt/bridge/twin/state", payload: ghost.statePayload(online: false),
        qos: .atLeastOnce, retain: true))
    #expect(await eventually { Self.roles(seen, eventTopic).contains("cleared") })
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
    #expect(gateway.child.wait(timeout: 0) == nil)
    await observer.shutdown()
  }
}
