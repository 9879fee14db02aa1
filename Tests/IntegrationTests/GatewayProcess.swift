import BridgeCore
import Foundation
import Mosquitto
import TestSupport

/// The built `gatt2mqtt` executable, next to the test bundle.
let gatewayExecutable: String = {
  let bundle = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
  return bundle.appendingPathComponent("gatt2mqtt").path
}()

/// A `gatt2mqtt` process started by a test, with its log in a file.
final class GatewayProcess: @unchecked Sendable {
  // Safety: used by one test at a time, serially.
  let child: ChildProcess
  let logPath: String
  let id: String

  /// Starts the gateway against `broker` with quick reconnects and health every 0.5 s.
  init(
    broker: Broker, id: String = "it\(UInt16.random(in: 0...UInt16.max))",
    extra: [String] = [], environment: [String: String] = [:]
  ) throws {
    self.id = id
    logPath = broker.directory.path + "/gateway-\(id).log"
    var env = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("GATT2MQTT_") }
    env.merge(environment) { $1 }
    child = try ChildProcess(
      gatewayExecutable,
      [
        "run", "--mqtt.host", "127.0.0.1", "--mqtt.port", "\(broker.port)", "--gateway.id", id,
        "--gateway.health_interval", "0.5", "--mqtt.reconnect.min_delay", "0.1",
        "--mqtt.reconnect.max_delay", "0.5", "--mqtt.keepalive", "5", "--log.level", "debug",
      ] + extra, outputPath: logPath, environment: env)
  }

  deinit {
    child.signal(SIGKILL)
    child.wait()
  }

  var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }

  var stateTopic: String { "gatt2mqtt/bridge/\(id)/state" }
}

/// Subscribes a fresh observer client to `filter` and returns it with its collector.
func observe(
  _ broker: Broker, _ filter: String, version: MQTTClientConfiguration.ProtocolVersion = .v311
)
  async throws -> (MQTTClient, Collector)
{
  let client = try await connectedClient(
    MQTTClientConfiguration(
      host: "127.0.0.1", port: broker.port, clientID: "observer-\(UUID().uuidString.prefix(6))",
      protocolVersion: version, minReconnectDelay: 0.05, maxReconnectDelay: 0.3))
  let collector = Collector(client)
  try await client.subscribe(filter, qos: .atLeastOnce)
  return (client, collector)
}

/// Whether `message` is a gateway state (`{"state":…,"instance":…}`) saying `state`.
func stateIs(_ message: MQTTMessage?, _ state: String) -> Bool {
  guard let message, let json = try? JSONValue.parse(message.payload) else { return false }
  return json["state"]?.stringValue == state && json["instance"]?.stringValue?.count == 16
}
