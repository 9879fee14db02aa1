import BridgeCore
import Foundation
import Mosquitto
import TestSupport
import Testing

@Suite(
  "The gatt2mqtt process against a real mosquitto", .serialized,
  .enabled(if: Broker.isAvailable, "mosquitto is not installed (apt-get install mosquitto)"))
struct GatewayProcessTests {
  @Test("publishes retained online state, retained info and periodic health")
  func onlineInfoHealth() async throws {
    let broker = try Broker()
    try await broker.start()
    let gateway = try GatewayProcess(broker: broker)
    let (observer, seen) = try await observe(broker, "gatt2mqtt/bridge/\(gateway.id)/#")
    #expect(
      await eventually {
        seen.messages.contains { $0.topic.hasSuffix("/state") && stateIs($0, "online") }
      },
      "log: \(gateway.log)")
    #expect(await eventually { seen.messages.contains { $0.topic.hasSuffix("/info") } })
    // A newcomer receives state and info as retained messages.
    let (late, lateSeen) = try await observe(broker, "gatt2mqtt/bridge/\(gateway.id)/+")
    #expect(await eventually { lateSeen.messages.filter(\.retain).count >= 2 })
    let info = try #require(lateSeen.messages.first { $0.topic.hasSuffix("/info") })
    #expect(info.retain)
    #expect(lateSeen.messages.first { $0.topic.hasSuffix("/state") }?.retain == true)
    await late.shutdown()
    let infoJSON = try JSONValue.parse(info.payload)
    #expect(infoJSON["version"]?.stringValue == "0.1.0")
    #expect(infoJSON["gateway"]?.stringValue == gateway.id)
    #expect(await eventually { seen.messages.filter { $0.topic.hasSuffix("/health") }.count >= 2 })
    let health = try JSONValue.parse(
      try #require(seen.messages.last { $0.topic.hasSuffix("/health") }).payload)
    #expect((health["mqtt"]?["published"]?.integerValue ?? 0) >= 2)
    #expect(health["uptime"]?.doubleValue != nil)
    #expect((health["rss_bytes"]?.integerValue ?? 0) > 0)
    await observer.shutdown()
  }

  @Test("SIGKILL: the broker publishes the retained offline will")
  func killedGatewayLeavesWill() async throws {
    let broker = try Broker()
    try await broker.start()
    let gateway = try GatewayProcess(broker: broker)
    let (observer, seen) = try await observe(broker, "gatt2mqtt/bridge/+/state")
    #expect(await eventually { stateIs(seen.messages.last, "online") })
    gateway.child.signal(SIGKILL)
    #expect(await eventually(timeout: 15) { stateIs(seen.messages.last, "offline") })
    // A newcomer sees the retained offline state.
    let (late, lateSeen) = try await observe(broker, gateway.stateTopic)
    #expect(await eventually { stateIs(lateSeen.messages.first, "offline") })
    #expect(lateSeen.messages.first?.retain == true)
    await observer.shutdown()
    await late.shutdown()
  }

  @Test("SIGTERM: the gateway publishes offline itself, disconnects cleanly and exits 0")
  func terminatedGatewayPublishesOffline() async throws {
    let broker = try Broker()
    try await broker.start()
    let gateway = try GatewayProcess(broker: broker)
    let (observer, seen) = try await observe(broker, gateway.stateTopic)
    #expect(await eventually { stateIs(seen.messages.last, "online") })
    gateway.child.signal(SIGTERM)
    let status = try #require(await gateway.child.wait(timeout: 10), "the gateway did not exit")
    #expect(ChildProcess.exitCode(status) == 0, "log: \(gateway.log)")
    #expect(await eventually { stateIs(seen.messages.last, "offline") })
    // A clean DISCONNECT, so the offline state came from the gateway, not from the will.
    #expect(broker.log.contains("Received DISCONNECT from gatt2mqtt-\(gateway.id)"))
    await observer.shutdown()
  }

  @Test("SIGINT behaves like SIGTERM")
  func interruptedGatewayExitsCleanly() async throws {
    let broker = try Broker()
    try await broker.start()
    let gateway = try GatewayProcess(broker: broker)
    #expect(await eventually { gateway.log.contains("MQTT connected") })
    gateway.child.signal(SIGINT)
    let status = try #require(await gateway.child.wait(timeout: 10))
    #expect(ChildProcess.exitCode(status) == 0)
  }

  @Test("broker killed and restarted: the gateway reconnects and is online again (retained)")
  func brokerRestart() async throws {
    let broker = try Broker()
    try await broker.start()
    let gateway = try GatewayProcess(broker: broker)
    #expect(await eventually { gateway.log.contains("MQTT connected") })
    broker.stop(signal: SIGKILL)  // the retained state dies with it
    try await broker.start()
    #expect(
      await eventually(timeout: 15) {
        gateway.log.components(separatedBy: "MQTT connected").count == 3
      }, "log: \(gateway.log)")
    try await Task.sleep(for: .milliseconds(200))
    // A newcomer after the restart sees the state the gateway published again, retained.
    let (observer, seen) = try await observe(broker, gateway.stateTopic)
    #expect(await eventually { stateIs(seen.messages.first, "online") })
    #expect(seen.messages.first?.retain == true)
    #expect(gateway.log.contains("MQTT connection lost"))
    #expect(gateway.child.isRunning)
    await observer.shutdown()
  }

  @Test(
    "wrong password: the error is logged clearly, the gateway keeps retrying and connects once the broker accepts",
    arguments: ["3.1.1", "5"])
  func wrongPassword(protocolVersion: String) async throws {
    let broker = try Broker(configuration: "allow_anonymous false")
    let file = try await broker.passwordFile(user: "gw", password: "right")
    broker.reconfigure("allow_anonymous false\npassword_file \(file)")
    try await broker.start()
    let gateway = try GatewayProcess(
      broker: broker, extra: ["--mqtt.username", "gw", "--mqtt.protocol", protocolVersion],
      environment: ["GATT2MQTT_MQTT_PASSWORD": "not-the-password"])
    #expect(
      await eventually {
        gateway.log.components(separatedBy: "not_authorized").count > 3
      }, "log: \(gateway.log)")
    #expect(gateway.log.contains("broker refused the credentials"))
    #expect(!gateway.log.contains("not-the-password"), "the password leaked into the log")
    #expect(gateway.child.isRunning)
    broker.stop()
    _ = try await broker.passwordFile(user: "gw", password: "not-the-password")
    try await broker.start()
    let observer = try await connectedClient(
      MQTTClientConfiguration(
        host: "127.0.0.1", port: broker.port, clientID: "observer", username: "gw",
        password: "not-the-password"))
    let seen = Collector(observer)
    try await observer.subscribe(gateway.stateTopic)
    #expect(await eventually(timeout: 15) { stateIs(seen.messages.last, "online") })
    await observer.shutdown()
  }

  @Test("health_check over MQTT 5 answers on the response topic with the correlation data")
  func healthCheckRequest() async throws {
    let broker = try Broker()
    try await broker.start()
    let gateway = try GatewayProcess(broker: broker, extra: ["--mqtt.protocol", "5"])
    let (client, seen) = try await observe(broker, "gatt2mqtt/clients/me/#", version: .v5)
    try await client.subscribe("gatt2mqtt/bridge/\(gateway.id)/response/#")
    #expect(await eventually { gateway.log.contains("subscribed to bridge requests") })
    try await client.publish(
      MQTTMessage(
        topic: "gatt2mqtt/bridge/\(gateway.id)/request/health_check",
        text: #"{"transaction":"t-1"}"#, qos: .atLeastOnce,
        properties: MQTTPublishProperties(
          responseTopic: "gatt2mqtt/clients/me/response", correlationData: [9, 9])))
    #expect(await eventually { seen.messages.count >= 2 })
    let direct = try #require(
      seen.messages.first { $0.topic == "gatt2mqtt/clients/me/response" })
    #expect(direct.properties.correlationData == [9, 9])
    let body = try JSONValue.parse(direct.payload)
    #expect(body["status"]?.stringValue == "ok")
    #expect(body["transaction"]?.stringValue == "t-1")
    #expect(body["data"]?["healthy"]?.boolValue == true)
    // Bad input gets an error response and does not stop the gateway.
    try await client.publish(
      MQTTMessage(
        topic: "gatt2mqtt/bridge/\(gateway.id)/request/health_check", payload: [0xFF, 0xFE],
        qos: .atLeastOnce))
    try await client.publish(
      MQTTMessage(
        topic: "gatt2mqtt/bridge/\(gateway.id)/request/no_such_verb", text: "{}",
        qos: .atLeastOnce))
    #expect(await eventually { seen.messages.count >= 4 })
    let errors = seen.messages.filter { $0.topic.contains("/response/") }.compactMap {
      try? JSONValue.parse($0.payload)["error"]?.stringValue
    }
    #expect(errors.contains("invalid_payload"))
    #expect(errors.contains("unknown_request"))
    #expect(gateway.child.isRunning)
    await client.shutdown()
  }
}

@Suite("The gatt2mqtt command line")
struct CommandLineTests {
  static let exampleFile: String = {
    var url = URL(fileURLWithPath: #filePath)
    for _ in 0..<3 { url.deleteLastPathComponent() }
    return url.appendingPathComponent("config/gatt2mqtt.example.yaml").path
  }()

  @Test("check-config accepts the example file")
  func checkExample() async throws {
    let result = try await runProcess(gatewayExecutable, ["check-config", Self.exampleFile])
    #expect(result.status == 0, "\(result.output)")
    #expect(result.output.contains("configuration is valid"))
  }

  @Test("check-config rejects a broken file, naming the key, with a non-zero exit")
  func checkBroken() async throws {
    let directory = try makeTemporaryDirectory(prefix: "cfg")
    let file = directory.appendingPathComponent("bad.yaml").path
    try "mqtt:\n  port: lots\n".write(toFile: file, atomically: true, encoding: .utf8)
    let result = try await runProcess(gatewayExecutable, ["check-config", file])
    #expect(result.status != 0)
    #expect(result.output.contains("mqtt.port"), "\(result.output)")
    try "mqtt:\n  tls:\n    ca_flie: /x\n".write(toFile: file, atomically: true, encoding: .utf8)
    let unknown = try await runProcess(gatewayExecutable, ["check-config", file])
    #expect(unknown.status != 0)
    #expect(unknown.output.contains("mqtt.tls.ca_flie"), "\(unknown.output)")
  }

  @Test("check-config checks what run checks: TLS files, the world file, --radio and --world")
  func checkConfigMatchesRun() async throws {
    let directory = try makeTemporaryDirectory(prefix: "cfg")
    let missing = directory.appendingPathComponent("absent.pem").path
    let tls = try await runProcess(
      gatewayExecutable, ["check-config", "--mqtt.tls.ca-file", missing])
    #expect(tls.status == 78, "\(tls.output)")
    #expect(tls.output.contains("absent.pem"), "\(tls.output)")

    let noWorld = try await runProcess(
      gatewayExecutable, ["check-config", "--radio", "simulated", "--world", missing])
    #expect(noWorld.status == 78, "\(noWorld.output)")
    #expect(noWorld.output.contains("bluetooth.simulation"), "\(noWorld.output)")

    let world = directory.appendingPathComponent("world.yaml").path
    try "devices:\n  - kind: battery\n".write(toFile: world, atomically: true, encoding: .utf8)
    let good = try await runProcess(
      gatewayExecutable, ["check-config", "--radio", "simulated", "--world", world])
    #expect(good.status == 0, "\(good.output)")
    #expect(good.output.contains("bluetooth.radio: simulated"), "\(good.output)")

    let unused = try await runProcess(
      gatewayExecutable, ["check-config", "--radio", "none", "--world", world])
    #expect(unused.status == 0, "\(unused.output)")
    #expect(unused.output.contains("warning: bluetooth.simulation"), "\(unused.output)")
  }

  @Test("run refuses a bad option before connecting anywhere")
  func runRejectsBadOption() async throws {
    let result = try await runProcess(gatewayExecutable, ["run", "--mqtt.prot", "1"])
    #expect(result.status != 0)
    #expect(result.output.contains("mqtt.prot"), "\(result.output)")
  }

  @Test("--version prints the version")
  func version() async throws {
    let result = try await runProcess(gatewayExecutable, ["--version"])
    #expect(result.status == 0)
    #expect(result.output.trimmingCharacters(in: .whitespacesAndNewlines) == "0.1.0")
  }

  @Test("--help works on every command", arguments: [[], ["run"], ["check-config"]])
  func help(command: [String]) async throws {
    let result = try await runProcess(gatewayExecutable, command + ["--help"])
    #expect(result.status == 0, "\(result.output)")
    #expect(result.output.contains("USAGE"))
  }
}
