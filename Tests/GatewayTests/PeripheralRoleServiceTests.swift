import BridgeCore
import Foundation
import Mosquitto
import TestSupport
import Testing

@testable import Gateway

@Suite("Peripheral role service with a real broker")
struct PeripheralRoleServiceTests {
  @Test("a text from MQTT reaches a subscribed central as paced chunks then EOM, reported as sent")
  func textToNotifications() async throws {
    let broker = try Broker()
    try await broker.start()
    defer { broker.stop() }
    let topics = try Topics(gateway: GatewayID("test"))
    let client = try await connectedClient(configuration(broker))
    defer { Task { await client.shutdown(finalMessages: [], timeout: 1) } }
    let peripheral = FakePeripheral()
    let service = ConnectionlessPeripheral.make(peripheral, topics: topics, client: client)
    let running = Task { await service.run() }
    defer { running.cancel() }

    let observer = try await connectedClient(configuration(broker))
    let collector = Collector(observer)
    try await observer.subscribe("gatt2mqtt/bridge/test/peripheral/#", qos: .atLeastOnce)
    #expect(await eventually(timeout: 10) { !peripheral.state.withLock { $0.started.isEmpty } })

    let text = Array(String(repeating: "Grüße 🚀 ", count: 40).utf8)
    service.text(MQTTMessage(topic: topics.peripheralTextSet.rawValue, payload: text))
    #expect(await eventually(timeout: 5) { peripheral.state.withLock { $0.readValue } == text })
    peripheral.emit(.subscribed(central: nil, mtu: nil))
    let done = await eventually(timeout: 10) {
      peripheral.state.withLock { $0.notifications.last } == Array("EOM".utf8)
    }
    #expect(done)
    let sent = peripheral.state.withLock { $0.notifications }
    #expect(Array(sent.dropLast().joined()) == text)
    #expect(sent.dropLast().allSatisfy { $0.count <= 20 })
    #expect(peripheral.state.withLock { $0.maxInFlight } == 1)
    let events = await eventually(timeout: 5) {
      collector.messages.contains {
        $0.topic == topics.peripheralEvent.rawValue
          && String(decoding: $0.payload, as: UTF8.self).contains("\"sent\"")
      }
    }
    #expect(events)
    let state = collector.messages.last { $0.topic == topics.peripheralState.rawValue }
    #expect(
      state.map { String(decoding: $0.payload, as: UTF8.self) }?.contains("advertising") == true)
  }
}

@Suite("Pacing of the peripheral role's notifications")
struct ChunkPacerTests {
  static let start = ContinuousClock.now

  static func at(_ milliseconds: Int) -> ContinuousClock.Instant {
    start + .milliseconds(milliseconds)
  }

  @Test(
    "unpaced values leave one per interval counted from the first, the send's own time included")
  func deadlines() {
    var pacer = ChunkPacer(interval: 0.05)
    // Quick sends (1 ms each) wait for their deadline: 50, 100, 150 ms after the first.
    #expect(pacer.next(after: .unpaced, now: Self.at(1)) == Self.at(51))
    #expect(pacer.next(after: .unpaced, now: Self.at(52)) == Self.at(101))
    #expect(pacer.next(after: .unpaced, now: Self.at(102)) == Self.at(151))
    // A send that took as long as the interval waits no more (a pause after each send would).
    #expect(pacer.next(after: .unpaced, now: Self.at(201)) == nil)
    // Behind: no burst to catch up; the next deadline counts from now.
    #expect(pacer.next(after: .unpaced, now: Self.at(400)) == nil)
    #expect(pacer.next(after: .unpaced, now: Self.at(401)) == Self.at(450))
  }

  @Test("values with back-pressure are not paced; an idle pause starts a new run")
  func flowControlledAndReset() {
    var pacer = ChunkPacer(interval: 0.5)
    #expect(pacer.next(after: .flowControlled, now: Self.at(0)) == nil)
    #expect(pacer.next(after: .flowControlled, now: Self.at(1)) == nil)
    #expect(pacer.next(after: .unpaced, now: Self.at(2)) == Self.at(502))
    pacer.reset()
    #expect(pacer.next(after: .unpaced, now: Self.at(600)) == Self.at(1100))
    var unpaced = ChunkPacer(interval: 0)
    #expect(unpaced.next(after: .unpaced, now: Self.at(0)) == nil)
  }
}

/// Builds the service under test with the default definition.
enum ConnectionlessPeripheral {
  static func make(_ peripheral: FakePeripheral, topics: Topics, client: MQTTClient)
    -> PeripheralRoleService
  {
    PeripheralRoleService(
      peripheral: peripheral, bridge: PeripheralBridge(topics: topics, service: .init()),
      definition: .init(), startAtLaunch: true, chunkInterval: 0.001, client: client,
      logger: quietLogger("peripheral"))
  }
}
