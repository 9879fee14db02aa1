import BridgeCore
import Foundation
import Mosquitto
import TestSupport
import Testing

/// A `gatt2mqtt run --radio simulated` process with a world of a test's own, a real
/// mosquitto and an observer of every gatt2mqtt topic.
final class SimulatedRun: @unchecked Sendable {
  // Safety: used by one test at a time, serially; `seen` is itself thread-safe.
  let broker: Broker
  let gateway: GatewayProcess
  let observer: MQTTClient
  let seen: Collector

  /// Starts the broker, the observer, then the gateway with `world` (YAML) and `extra`
  /// options.
  init(world: String, _ extra: [String] = []) async throws {
    broker = try Broker()
    try await broker.start()
    (observer, seen) = try await observe(broker, "gatt2mqtt/#")
    let path = broker.directory.appendingPathComponent("world.yaml").path
    try world.write(toFile: path, atomically: true, encoding: .utf8)
    gateway = try GatewayProcess(
      broker: broker, extra: ["--radio", "simulated", "--world", path] + extra)
  }

  /// Stops the observer (the gateway and broker go with their owners).
  func finish() async {
    await observer.shutdown()
  }

  var base: String { "gatt2mqtt/bridge/\(gateway.id)" }

  /// Messages on `topic`, in order.
  func messages(_ topic: String) -> [MQTTMessage] { seen.messages.filter { $0.topic == topic } }

  /// The JSON payloads on `topic`, in order.
  func json(_ topic: String) -> [JSONValue] {
    messages(topic).compactMap { try? JSONValue.parse($0.payload) }
  }

  /// The events of type `type` on the peripheral role's event topic.
  func peripheralEvents(_ type: String) -> [JSONValue] {
    json("\(base)/peripheral/event").filter { $0["type"]?.stringValue == type }
  }

  /// The device id (topic level) of the simulated device advertising `name`, once seen.
  func device(named name: String, timeout: Double = 10) async -> String? {
    let deadline = Date().addingTimeInterval(timeout)
    // One look after the deadline too: a sleep that overran it (a busy machine) still sees
    // what arrived meanwhile.
    while true {
      let found = seen.messages.first { message in
        message.topic.hasSuffix("/advertisement")
          && (try? JSONValue.parse(message.payload))?["name"]?.stringValue == name
      }
      if let found { return String(found.topic.split(separator: "/")[1]) }
      guard Date() < deadline else { return nil }
      try? await Task.sleep(for: .milliseconds(20))
    }
  }

  /// The message a new subscriber to `topic` receives as retained, if any.
  func retained(_ topic: String) async -> MQTTMessage? {
    guard let (client, collector) = try? await observe(broker, topic) else { return nil }
    _ = await eventually(timeout: 3) { !collector.messages.isEmpty }
    await client.shutdown()
    return collector.messages.first { $0.retain }
  }

  /// Connection states published for `device`, in order.
  func connectionStates(_ device: String) -> [String] {
    json("gatt2mqtt/\(device)/connection").compactMap { $0["state"]?.stringValue }
  }

  /// Publishes `text` on `topic` (QoS 1).
  func publish(_ topic: String, _ text: String, retain: Bool = false) async throws {
    try await observer.publish(
      MQTTMessage(topic: topic, text: text, qos: .atLeastOnce, retain: retain))
  }
}
