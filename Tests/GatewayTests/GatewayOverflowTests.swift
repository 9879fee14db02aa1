import BridgeCore
import Foundation
import GatewaySettings
import Mosquitto
import TestSupport
import Testing

@testable import Gateway

@Suite(
  "Gateway: requests the MQTT client could not keep are answered busy",
  .enabled(if: Broker.isAvailable, "mosquitto is not installed"))
struct GatewayOverflowTests {
  /// A gateway on `broker` whose `handle(_:)` the test drives (no `run()`).
  static func service(_ broker: Broker, id: String) throws -> GatewayService {
    var configuration = GatewayConfiguration()
    configuration.mqtt.host = "127.0.0.1"
    configuration.mqtt.port = broker.port
    configuration.gateway.id = id
    return try GatewayService(configuration: configuration, logger: quietLogger("gw"))
  }

  @Test("a bridge request handed over without its payload (inbound queue full) is answered busy")
  func overflowedRequestIsAnsweredBusy() async throws {
    let broker = try Broker()
    try await broker.start()
    defer { broker.stop() }
    let service = try Self.service(broker, id: "flood")
    service.client.start()
    service.beginActingNow()
    defer { Task { await service.client.shutdown(finalMessages: [], timeout: 1) } }
    let observer = try await connectedClient(TestSupport.configuration(broker))
    let seen = Collector(observer)
    try await observer.subscribe("gatt2mqtt/bridge/flood/response/#", qos: .atLeastOnce)
    var overflowed = MQTTMessage(
      topic: "gatt2mqtt/bridge/flood/request/health_check", payload: [])
    overflowed.discarded = .bufferFull(bytes: 40)
    service.handle(overflowed)
    #expect(await eventually { !seen.messages.isEmpty })
    let response = try JSONValue.parse(try #require(seen.messages.first).payload)
    #expect(response["status"] == "error")
    #expect(response["error"] == "busy")
    await observer.shutdown()
  }

  @Test(
    "standing by (before it may act), a request handed to the gateway is not served; acting, it is"
  )
  func standingByServesNothing() async throws {
    let broker = try Broker()
    try await broker.start()
    defer { broker.stop() }
    let service = try Self.service(broker, id: "standby")
    service.client.start()
    defer { Task { await service.client.shutdown(finalMessages: [], timeout: 1) } }
    let observer = try await connectedClient(TestSupport.configuration(broker))
    let seen = Collector(observer)
    try await observer.subscribe("gatt2mqtt/bridge/standby/response/#", qos: .atLeastOnce)
    let request = MQTTMessage(
      topic: "gatt2mqtt/bridge/standby/request/health_check", text: #"{"transaction":1}"#)
    service.handle(request)
    try await Task.sleep(for: .seconds(1))
    #expect(seen.messages.isEmpty)
    service.beginActingNow()
    service.handle(request)
    #expect(await eventually { !seen.messages.isEmpty })
    await observer.shutdown()
  }
}
