import BridgeCore
import Foundation
import Mosquitto
import TestSupport
import Testing

/// Requests to the whole fleet (`<base>/bridge/request/<verb>`) and the fleet's peripheral text
/// (`<base>/bridge/peripheral/text/set`), with two real gateway processes on one real mosquitto.
@Suite(
  "Fleet-wide requests and text: every gateway answers on its own topic", .serialized,
  .enabled(if: Broker.isAvailable, "mosquitto is not installed (apt-get install mosquitto)"))
struct FleetRequestTests {
  /// Two gateways on the simulated radio (one beacon each), both with a peripheral role.
  func fleet(_ broker: Broker) throws -> [GatewayProcess] {
    let world = broker.directory.appendingPathComponent("world.yaml").path
    try "devices:\n  - kind: beacon\n    name: fleet-beacon\n".write(
      toFile: world, atomically: true, encoding: .utf8)
    return try ["kitchen", "garage"].map { id in
      try GatewayProcess(
        broker: broker, id: id,
        extra: ["--radio", "simulated", "--world", world, "--peripheral.enabled", "true"])
    }
  }

  @Test(
    "health_check, devices and scan answered by every gateway with gw in data; others not_supported, by each"
  )
  func fleetVerbs() async throws {
    let broker = try Broker()
    try await broker.start()
    let gateways = try fleet(broker)
    let (client, seen) = try await observe(broker, "gatt2mqtt/bridge/+/response/#")
    for gateway in gateways {
      #expect(await eventually { gateway.log.contains("subscribed to fleet-wide requests") })
    }
    func answers(_ verb: String, _ transaction: String) async -> [JSONValue] {
      _ = await eventually(timeout: 10) {
        seen.messages.filter {
          (try? JSONValue.parse($0.payload))?["transaction"]?.stringValue == transaction
        }.count >= 2
      }
      return seen.messages.compactMap { message -> JSONValue? in
        guard let body = try? JSONValue.parse(message.payload),
          body["transaction"]?.stringValue == transaction
        else { return nil }
        return body
      }
    }
    for verb in ["health_check", "devices", "scan"] {
      let transaction = "f-\(verb)"
      let payload =
        verb == "scan"
        ? #"{"action":"start","transaction":"\#(transaction)"}"#
        : #"{"transaction":"\#(transaction)"}"#
      try await client.publish(
        MQTTMessage(topic: "gatt2mqtt/bridge/request/\(verb)", text: payload, qos: .atLeastOnce))
      let bodies = await answers(verb, transaction)
      #expect(
        Set(bodies.compactMap { $0["data"]?["gw"]?.stringValue }) == ["kitchen", "garage"],
        "\(verb): \(bodies)")
      #expect(bodies.allSatisfy { $0["status"]?.stringValue == "ok" }, "\(verb): \(bodies)")
      // Each on its own response topic.
      for id in ["kitchen", "garage"] {
        #expect(
          seen.messages.contains {
            $0.topic == "gatt2mqtt/bridge/\(id)/response/\(verb)"
              && (try? JSONValue.parse($0.payload))?["data"]?["gw"]?.stringValue == id
          })
      }
    }
    // devices carries each gateway's own list.
    let devices = await answers("devices", "f-devices")
    #expect(devices.allSatisfy { $0["data"]?["devices"]?.arrayValue != nil }, "\(devices)")

    // A verb that acts on one gateway's devices is not fleet-wide: each says so, with gw.
    try await client.publish(
      MQTTMessage(
        topic: "gatt2mqtt/bridge/request/device/connect",
        text: #"{"device":"A4C1381E29DF","transaction":"f-connect"}"#, qos: .atLeastOnce))
    let refused = await answers("device/connect", "f-connect")
    #expect(refused.count == 2)
    #expect(refused.allSatisfy { $0["error"]?.stringValue == "not_supported" }, "\(refused)")
    #expect(Set(refused.compactMap { $0["data"]?["gw"]?.stringValue }) == ["kitchen", "garage"])
    await client.shutdown()
  }

  @Test(
    "the fleet's text reaches every gateway's peripheral role; a gateway's own text overrides it")
  func fleetText() async throws {
    let broker = try Broker()
    try await broker.start()
    let gateways = try fleet(broker)
    let (client, seen) = try await observe(broker, "gatt2mqtt/bridge/+/peripheral/state")
    for gateway in gateways {
      #expect(await eventually { gateway.log.contains("subscribed to fleet peripheral text") })
    }
    @Sendable func textBytes(_ id: String) -> Int64? {
      seen.messages.last { $0.topic == "gatt2mqtt/bridge/\(id)/peripheral/state" }
        .flatMap { try? JSONValue.parse($0.payload) }?["text_bytes"]?.integerValue
    }
    try await client.publish(
      MQTTMessage(
        topic: "gatt2mqtt/bridge/peripheral/text/set", text: "twelve bytes", qos: .atLeastOnce,
        retain: true))
    #expect(await eventually { textBytes("kitchen") == 12 && textBytes("garage") == 12 })
    try await client.publish(
      MQTTMessage(
        topic: "gatt2mqtt/bridge/garage/peripheral/text/set", text: "own", qos: .atLeastOnce,
        retain: true))
    #expect(await eventually { textBytes("garage") == 3 })
    try await client.publish(
      MQTTMessage(
        topic: "gatt2mqtt/bridge/peripheral/text/set", text: "a newer fleet text",
        qos: .atLeastOnce, retain: true))
    #expect(await eventually { textBytes("kitchen") == 18 })
    try await Task.sleep(for: .milliseconds(500))
    #expect(textBytes("garage") == 3, "the own text overrides the fleet's")
    // Clearing the own text brings the fleet's back.
    try await client.publish(
      MQTTMessage(
        topic: "gatt2mqtt/bridge/garage/peripheral/text/set", text: "", qos: .atLeastOnce,
        retain: true))
    #expect(await eventually { textBytes("garage") == 18 })
    await client.shutdown()
  }
}
