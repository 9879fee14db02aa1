import BridgeCore
import Foundation
import Mosquitto
import SimulatedRadio
import TestSupport
import Testing

/// A gateway restarted (same `gateway.id`, same broker): what the earlier run left retained for
/// a device that is not heard again is cleared on schedule, and nothing of a device that is.
@Suite("Restart", .serialized)
struct RestartTests {
  static let first = """
    advertising_interval: 0.2
    devices:
      - kind: beacon
        name: sim-stays
      - kind: battery
        name: sim-gone
    """
  /// The same world without `sim-gone` (same seed: `sim-stays` keeps its address).
  static let second = """
    advertising_interval: 0.2
    devices:
      - kind: beacon
        name: sim-stays
    """

  @Test(
    "the earlier run's device that is not heard again: its availability, presence, connection, GATT tree, values and Home Assistant configs are cleared"
  )
  func unheardDeviceIsCleared() async throws {
    let names = SimulatedRadio(world: try SimulatedWorld.parse(yaml: Self.first))
      .addressesByName
    let gone = DeviceID(address: try #require(names["sim-gone"])).rawValue
    let stays = DeviceID(address: try #require(names["sim-stays"])).rawValue
    let later = SimulatedRadio(world: try SimulatedWorld.parse(yaml: Self.second))
      .addressesByName
    try #require(later["sim-stays"] == names["sim-stays"], "the worlds share sim-stays")
    try #require(!later.values.contains(try #require(names["sim-gone"])))

    let broker = try Broker()
    try await broker.start()
    let directory = broker.directory
    func world(_ yaml: String, _ name: String) throws -> String {
      let path = directory.appendingPathComponent(name).path
      try yaml.write(toFile: path, atomically: true, encoding: .utf8)
      return path
    }
    let common = [
      "--homeassistant.enabled", "true", "--mqtt.retain_values", "true",
      "--bluetooth.connect.names", "sim-gone",
    ]
    let id = "restart\(UInt16.random(in: 0...UInt16.max))"
    let run1 = try GatewayProcess(
      broker: broker, id: id,
      extra: ["--radio", "simulated", "--world", try world(Self.first, "first.yaml")] + common)
    let (observer, seen) = try await observe(broker, "#")
    /// The retained message a new subscriber to `topic` gets (throws when it cannot subscribe,
    /// so that "nothing retained" is never a failed connection).
    @Sendable func retained(_ topic: String) async throws -> MQTTMessage? {
      let (client, collector) = try await observe(broker, topic)
      _ = await eventually(timeout: 2) { !collector.messages.isEmpty }
      await client.shutdown()
      return collector.messages.first { $0.retain && !$0.payload.isEmpty }
    }
    @Sendable func retainedTopics(below filter: String) async throws -> Set<String> {
      let (client, collector) = try await observe(broker, filter)
      try? await Task.sleep(for: .seconds(1))
      await client.shutdown()
      return Set(collector.messages.filter { $0.retain && !$0.payload.isEmpty }.map(\.topic))
    }
    /// The last JSON payload seen on `topic` whose `key` is `value`.
    @Sendable func last(_ topic: String, _ key: String, is value: String) -> JSONValue? {
      seen.messages.compactMap { $0.topic == topic ? try? JSONValue.parse($0.payload) : nil }
        .last { $0[key]?.stringValue == value }
    }
    // The first run connects sim-gone, reads its tree and a value, makes its entities.
    #expect(
      await eventually(timeout: 20) {
        last("gatt2mqtt/\(gone)/connection", "state", is: "ready") != nil
      }, "log: \(run1.log)")
    try await observer.publish(
      MQTTMessage(
        topic: "gatt2mqtt/\(gone)/gatt/180f/2a19/get", text: "", qos: .atLeastOnce,
        retain: false))
    let goneTopics = [
      "gatt2mqtt/\(gone)/availability", "gatt2mqtt/\(gone)/presence",
      "gatt2mqtt/\(gone)/connection", "gatt2mqtt/\(gone)/gatt",
      "gatt2mqtt/\(gone)/gatt/180f/2a19",
    ]
    for topic in goneTopics {
      #expect(
        try await eventually { try await retained(topic) != nil }, "\(topic) after the first run")
    }
    let configs = try await retainedTopics(below: "homeassistant/+/gatt2mqtt_\(gone)/+/config")
    #expect(configs.count >= 3, "\(configs)")
    // Its devices list names both devices.
    #expect(
      try await eventually {
        let list = try await retained("gatt2mqtt/bridge/\(id)/devices")
        let ids = (list.flatMap { try? JSONValue.parse($0.payload) }?.arrayValue ?? []).compactMap {
          $0["id"]?.stringValue
        }
        return ids.contains(gone) && ids.contains(stays)
      })

    run1.child.signal(SIGTERM)
    _ = await run1.child.wait(timeout: 10)

    // The second run does not hear sim-gone: forgotten 4 s after the first run last saw it.
    let secondRun = seen.messages.count
    let run2 = try GatewayProcess(
      broker: broker, id: id,
      extra: [
        "--radio", "simulated", "--world", try world(Self.second, "second.yaml"),
        "--bluetooth.offline_after", "2", "--bluetooth.forget_after", "4",
      ] + common)
    let events = "gatt2mqtt/bridge/\(id)/event"
    #expect(
      await eventually(timeout: 15) { last(events, "type", is: "devices_restored") != nil },
      "log: \(run2.log)")
    // Both: sim-stays, heard or not yet, and sim-gone.
    #expect(last(events, "type", is: "devices_restored")?["data"]?["devices"] == 2)
    for topic in goneTopics {
      #expect(try await eventually(timeout: 15) { try await retained(topic) == nil }, "\(topic)")
    }
    #expect(
      try await eventually(timeout: 15) {
        try await retainedTopics(below: "homeassistant/+/gatt2mqtt_\(gone)/+/config").isEmpty
      })
    // The device that is still heard keeps its state, never cleared in between; the list no
    // longer names sim-gone.
    let clearedStays = seen.messages[secondRun...].filter {
      $0.topic.contains(stays) && $0.payload.isEmpty
    }
    #expect(clearedStays.isEmpty, "\(clearedStays.map(\.topic))")
    #expect(try await retained("gatt2mqtt/\(stays)/availability") != nil)
    #expect(
      !(try await retainedTopics(below: "homeassistant/+/gatt2mqtt_\(stays)/+/config").isEmpty))
    #expect(
      try await eventually {
        let list = try await retained("gatt2mqtt/bridge/\(id)/devices")
        let ids = (list.flatMap { try? JSONValue.parse($0.payload) }?.arrayValue ?? []).compactMap {
          $0["id"]?.stringValue
        }
        return ids.contains(stays) && !ids.contains(gone)
      })
    #expect(run2.child.isRunning)
    await observer.shutdown()
  }
}
