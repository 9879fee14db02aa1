import BridgeCore
import Foundation
import Mosquitto
import Synchronization
import TestSupport
import Testing

/// Signals the gateway stops on, by name for the test's arguments.
enum StopSignal: String, CaseIterable, Sendable {
  case term, int, hup, quit

  var number: Int32 {
    switch self {
    case .term: SIGTERM
    case .int: SIGINT
    case .hup: SIGHUP
    case .quit: SIGQUIT
    }
  }
}

@Suite(
  "The gatt2mqtt process: bounded stops, bounded memory, MQTT 5 answers kept in their place",
  .serialized,
  .enabled(if: Broker.isAvailable, "mosquitto is not installed (apt-get install mosquitto)"))
struct GatewayHardeningTests {
  /// Waits up to 10 s for the gateway to end after `signal` (sent at `started`), and expects
  /// exit status 0 within 2 s: the exit's own time, taken on the reaping thread, not the test
  /// task's.
  private func expectExitZero(
    _ gateway: GatewayProcess, after signal: StopSignal, sentAt started: ContinuousClock.Instant
  ) async {
    let exit = await gateway.child.waitTimed(timeout: 10)
    #expect(
      exit != nil, "still running 10 s after SIG\(signal.rawValue.uppercased()): \(gateway.log)")
    if let exit { #expect(exit.exited - started < .seconds(2)) }
    #expect(exit.map { ChildProcess.exitCode($0.status) } == 0, "log: \(gateway.log)")
  }

  @Test(
    "broker never reached: every stop signal ends the process within 2 s, exit 0",
    arguments: StopSignal.allCases)
  func stopWithoutBroker(signal: StopSignal) async throws {
    let broker = try Broker()  // never started: its port refuses connections
    let gateway = try GatewayProcess(broker: broker)
    #expect(
      await eventually { gateway.log.contains("failed") }, "log: \(gateway.log)")
    let started = ContinuousClock.now
    gateway.child.signal(signal.number)
    await expectExitZero(gateway, after: signal, sentAt: started)
    #expect(!gateway.log.contains("Program crashed"))
  }

  @Test(
    "broker up: every stop signal publishes offline itself and ends within 2 s",
    arguments: StopSignal.allCases)
  func stopWithBroker(signal: StopSignal) async throws {
    let broker = try Broker()
    try await broker.start()
    let gateway = try GatewayProcess(broker: broker, extra: ["--radio", "simulated"])
    let (observer, seen) = try await observe(broker, gateway.stateTopic)
    #expect(await eventually { stateIs(seen.messages.last, "online") })
    let started = ContinuousClock.now
    gateway.child.signal(signal.number)
    await expectExitZero(gateway, after: signal, sentAt: started)
    #expect(await eventually { stateIs(seen.messages.last, "offline") })
    #expect(broker.log.contains("Received DISCONNECT from gatt2mqtt-\(gateway.id)"))
    await observer.shutdown()
  }

  @Test("SIGUSR1 logs the health report and the gateway keeps running")
  func usr1LogsHealth() async throws {
    let broker = try Broker()
    try await broker.start()
    let gateway = try GatewayProcess(broker: broker)
    #expect(await eventually { gateway.log.contains("MQTT connected") })
    try await Task.sleep(for: .milliseconds(300))
    gateway.child.signal(SIGUSR1)
    #expect(await eventually { gateway.log.contains("health (SIGUSR1)") }, "log: \(gateway.log)")
    #expect(gateway.child.isRunning)
  }

  @Test("an MQTT 5 Response Topic outside <base>/…/response, or on an inbound topic, is not used")
  func responseTopicIsNotARelay() async throws {
    let broker = try Broker()
    try await broker.start()
    let gateway = try GatewayProcess(
      broker: broker, extra: ["--mqtt.protocol", "5", "--radio", "simulated"])
    let (client, seen) = try await observe(broker, "#", version: .v5)
    #expect(await eventually { gateway.log.contains("subscribed to bridge requests") })
    let forbidden = [
      "homeassistant/switch/door/set",
      "gatt2mqtt/bridge/other/request/scan",
      "gatt2mqtt/bridge/\(gateway.id)/state",
      "gatt2mqtt/bridge/\(gateway.id)/peripheral/text/set",
      "gatt2mqtt/bridge/other/request/response",
      "gatt2mqtt/clients/me/response/" + String(repeating: "x", count: 600),
    ]
    for (index, topic) in forbidden.enumerated() {
      try await client.publish(
        MQTTMessage(
          topic: "gatt2mqtt/bridge/\(gateway.id)/request/health_check",
          text: #"{"transaction":"relay-\#(index)"}"#, qos: .atLeastOnce,
          properties: MQTTPublishProperties(responseTopic: topic)))
    }
    let allowed = "gatt2mqtt/clients/me/response"
    try await client.publish(
      MQTTMessage(
        topic: "gatt2mqtt/bridge/\(gateway.id)/request/health_check",
        text: #"{"transaction":"ok"}"#, qos: .atLeastOnce,
        properties: MQTTPublishProperties(responseTopic: allowed)))
    #expect(await eventually { seen.messages.contains { $0.topic == allowed } })
    // Every request was answered on the gateway's own response topic.
    let own = "gatt2mqtt/bridge/\(gateway.id)/response/health_check"
    #expect(await eventually { seen.messages.filter { $0.topic == own }.count == 7 })
    // No answer anywhere else (the requests themselves carry "relay-" on the request topic).
    let request = "gatt2mqtt/bridge/\(gateway.id)/request/health_check"
    for topic in forbidden {
      #expect(
        !seen.messages.contains { $0.topic == topic && $0.text?.contains("status") == true },
        "answered on \(topic)")
    }
    #expect(
      !seen.messages.contains {
        ![own, allowed, request].contains($0.topic) && $0.text?.contains("relay-") == true
      })
    #expect(gateway.log.contains("MQTT 5 Response Topic not honoured"))
    // The simulated peripheral still serves its own text, not a relayed answer.
    #expect(
      !seen.messages.contains {
        $0.topic.hasSuffix("/peripheral/event") && $0.text?.contains("relay-") == true
      })
    // health counts the refusals.
    try await client.publish(
      MQTTMessage(
        topic: "gatt2mqtt/bridge/\(gateway.id)/request/health_check", text: "{}",
        qos: .atLeastOnce))
    #expect(await eventually { seen.messages.filter { $0.topic == own }.count == 8 })
    let last = try JSONValue.parse(try #require(seen.messages.last { $0.topic == own }).payload)
    #expect(last["data"]?["errors"]?["replies_refused"]?.integerValue == 6)
    await client.shutdown()
  }

  @Test(
    "odd verbs are answered on response/invalid, briefly; health_check reports the publish rate")
  func oddVerbsAnswered() async throws {
    let broker = try Broker()
    try await broker.start()
    let gateway = try GatewayProcess(broker: broker)
    let (client, seen) = try await observe(broker, "gatt2mqtt/bridge/\(gateway.id)/response/#")
    #expect(await eventually { gateway.log.contains("subscribed to bridge requests") })
    let request = "gatt2mqtt/bridge/\(gateway.id)/request/"
    let long = String(repeating: "v", count: 60_000)
    for verb in ["", "health_check/", long] {
      try await client.publish(MQTTMessage(topic: request + verb, text: "{}", qos: .atLeastOnce))
    }
    let invalid = "gatt2mqtt/bridge/\(gateway.id)/response/invalid"
    #expect(await eventually { seen.messages.filter { $0.topic == invalid }.count == 3 })
    #expect(seen.messages.allSatisfy { $0.payload.count < 1024 })
    #expect(
      seen.messages.allSatisfy {
        (try? JSONValue.parse($0.payload))?["error"]?.stringValue == "unknown_request"
      })
    // After a health interval (0.5 s here) the on-demand report has the rate too.
    try await Task.sleep(for: .milliseconds(1200))
    try await client.publish(
      MQTTMessage(topic: request + "health_check", text: "{}", qos: .atLeastOnce))
    let own = "gatt2mqtt/bridge/\(gateway.id)/response/health_check"
    #expect(await eventually { seen.messages.contains { $0.topic == own } })
    let health = try JSONValue.parse(try #require(seen.messages.first { $0.topic == own }).payload)
    #expect((health["data"]?["rates"]?["publishes_per_s"]?.doubleValue ?? 0) > 0)
    await client.shutdown()
  }

  @Test("a device request whose UUID level does not parse is answered with a request_error event")
  func unparseableDeviceTopic() async throws {
    let broker = try Broker()
    try await broker.start()
    let gateway = try GatewayProcess(broker: broker, extra: ["--radio", "simulated"])
    let (client, seen) = try await observe(broker, "gatt2mqtt/bridge/\(gateway.id)/event")
    // All four device-plane filters subscribed.
    #expect(
      await eventually {
        gateway.log.components(separatedBy: "subscribed to device requests").count == 5
      })
    try await client.publish(
      MQTTMessage(
        topic: "gatt2mqtt/A4C1381E29DF/gatt/not-a-uuid/2a19/set", text: #"{"hex":"01"}"#,
        qos: .atLeastOnce))
    #expect(
      await eventually {
        seen.messages.contains { message in
          guard let json = try? JSONValue.parse(message.payload) else { return false }
          return json["type"] == "request_error" && json["data"]?["error"] == "invalid_topic"
            && json["data"]?["message"] == "'not-a-uuid' is not a Bluetooth UUID"
        }
      })
    await client.shutdown()
  }

  @Test("a JSON key with a newline and ESC is logged escaped: no forged log line")
  func logInjection() async throws {
    let broker = try Broker()
    try await broker.start()
    let gateway = try GatewayProcess(broker: broker, extra: ["--radio", "simulated"])
    let (client, seen) = try await observe(broker, "gatt2mqtt/bridge/\(gateway.id)/response/#")
    #expect(await eventually { gateway.log.contains("subscribed to bridge requests") })
    try await client.publish(
      MQTTMessage(
        topic: "gatt2mqtt/bridge/\(gateway.id)/request/device/connect",
        text: #"{"device":"AA:BB:CC:DD:EE:FF","x\nFORGED critical: \u001b[2J":1}"#,
        qos: .atLeastOnce))
    #expect(await eventually { seen.messages.count == 1 })
    #expect(await eventually { gateway.log.contains("invalid_payload") }, "log: \(gateway.log)")
    let lines = gateway.log.split(separator: "\n")
    #expect(!lines.contains { $0.hasPrefix("FORGED") }, "log: \(gateway.log)")
    #expect(!gateway.log.contains("\u{1B}"))
    #expect(gateway.log.contains("x\\nFORGED critical: \\u{1B}[2J"))
    await client.shutdown()
  }

  @Test("oversized requests are answered payload_too_large without being held; others still served")
  func oversizedRequests() async throws {
    let broker = try Broker()
    try await broker.start()
    let gateway = try GatewayProcess(broker: broker)
    let (client, seen) = try await observe(broker, "gatt2mqtt/bridge/\(gateway.id)/response/#")
    #expect(await eventually { gateway.log.contains("subscribed to bridge requests") })
    let request = "gatt2mqtt/bridge/\(gateway.id)/request/health_check"
    // Over mqtt.inbound.max_request_bytes (64 KiB) but small enough to be received…
    let padding = String(repeating: "a", count: 100_000)
    try await client.publish(
      MQTTMessage(topic: request, text: #"{"pad":"\#(padding)"}"#, qos: .atLeastOnce))
    // …and 40 of 4 MiB, which the MQTT client does not even keep (over 1 MiB).
    let huge = [UInt8](repeating: 0x20, count: 4 << 20)
    for _ in 0..<40 {
      try await client.publish(MQTTMessage(topic: request, payload: huge, qos: .atLeastOnce))
    }
    try await client.publish(MQTTMessage(topic: request, text: "{}", qos: .atLeastOnce))
    #expect(await eventually(timeout: 20) { seen.messages.count == 42 }, "log: \(gateway.log)")
    let bodies = try seen.messages.map { try JSONValue.parse($0.payload) }
    #expect(bodies.prefix(41).allSatisfy { $0["error"]?.stringValue == "payload_too_large" })
    #expect(bodies.first?["message"]?.stringValue?.contains("the most is 65536") == true)
    let health = try #require(bodies.last)
    #expect(health["status"]?.stringValue == "ok")
    #expect(health["data"]?["errors"]?["requests_refused"]?.integerValue == 41)
    #expect(health["data"]?["mqtt"]?["received_discarded"]?.integerValue == 40)
    // 160 MiB went past the gateway; it kept none of it.
    let rss = try #require(health["data"]?["rss_bytes"]?.integerValue)
    #expect(rss < 100 << 20, "RSS \(rss) bytes")
    await client.shutdown()
  }
}

@Suite(
  "The gatt2mqtt process: retained state survives a broker that forgot it", .serialized,
  .enabled(if: Broker.isAvailable, "mosquitto is not installed (apt-get install mosquitto)"))
struct RetainedStateRestoreTests {
  @Test(
    "broker restarted without persistence: adapters, devices, connection, gatt, availability retained again"
  )
  func retainedStateAfterBrokerRestart() async throws {
    let broker = try Broker()  // no persistence: a restart loses every retained message
    try await broker.start()
    let gateway = try GatewayProcess(
      broker: broker,
      extra: [
        "--radio", "simulated", "--bluetooth.connect.names", "sim-battery,sim-heart-rate",
      ])
    let suffixes = ["/connection", "/gatt", "/availability"]
    let bridge = "gatt2mqtt/bridge/\(gateway.id)"
    let expected = { @Sendable (topics: Set<String>) -> Bool in
      topics.contains("\(bridge)/adapters") && topics.contains("\(bridge)/devices")
        && topics.contains("\(bridge)/state")
        && suffixes.allSatisfy { suffix in topics.contains { $0.hasSuffix(suffix) } }
    }
    let (before, seenBefore) = try await observe(broker, "gatt2mqtt/#")
    #expect(
      await eventually(timeout: 10) {
        expected(Set(seenBefore.messages.filter(\.retain).map(\.topic)))
          || expected(Set(seenBefore.messages.map(\.topic)))
      }, "topics: \(Set(seenBefore.messages.map(\.topic)).sorted())")
    let connections = Set(
      seenBefore.messages.filter { $0.topic.hasSuffix("/connection") }.map(\.topic))
    await before.shutdown()
    broker.stop(signal: SIGKILL)
    try await broker.start()
    #expect(
      await eventually(timeout: 15) {
        gateway.log.components(separatedBy: "MQTT connected").count == 3
      }, "log: \(gateway.log)")
    // A newcomer sees only what is retained now: the gateway must have published it again.
    // Each probe is a new subscriber: a message the gateway publishes again after a probe
    // subscribed reaches that probe live (retain flag 0 in MQTT 3.1.1), so only a newcomer
    // that subscribes after the re-publication tells what is retained. Every retained message
    // goes out again at QoS 1 in publication order, the Home Assistant discovery configs among
    // them (about 100 here).
    let lastSeen = Mutex<[String]>([])
    #expect(
      await eventually(timeout: 30) {
        guard let (probe, seen) = try? await observe(broker, "gatt2mqtt/#") else { return false }
        try? await Task.sleep(for: .milliseconds(500))
        let retained = Set(seen.messages.filter(\.retain).map(\.topic))
        await probe.shutdown()
        lastSeen.withLock { $0 = retained.sorted() }
        return expected(retained) && connections.isSubset(of: retained)
      }, "retained: \(lastSeen.withLock { $0 })")
  }
}
