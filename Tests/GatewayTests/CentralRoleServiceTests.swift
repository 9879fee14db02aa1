import BridgeCore
import Foundation
import Mosquitto
import TestSupport
import Testing

@testable import Gateway

@Suite("Connection service with a real broker")
struct CentralRoleServiceTests {
  static let address = try! BluetoothAddress("A4:C1:38:1E:29:DF")
  static let control = BluetoothUUID(uuid16: 0xFFF0)
  static let command = BluetoothUUID(uuid16: 0xFFF1)
  static let level = BluetoothUUID(uuid16: 0x2A19)
  static let tree = GATTTree(
    services: [
      .init(uuid: control, characteristics: [.init(uuid: command, flags: ["read", "write"])]),
      .init(
        uuid: BluetoothUUID(uuid16: 0x180F),
        characteristics: [.init(uuid: level, flags: ["read", "notify"])]),
    ])

  @Test("concurrent /set on one characteristic never overlap, all succeed in order, through MQTT")
  func concurrentWritesThroughTheBroker() async throws {
    let broker = try Broker()
    try await broker.start()
    defer { broker.stop() }
    let topics = try Topics(gateway: GatewayID("test"))
    let gatewayClient = try await connectedClient(configuration(broker))
    defer { Task { await gatewayClient.shutdown(finalMessages: [], timeout: 1) } }
    let central = FakeGATTCentral(tree: Self.tree)
    let service = CentralRoleService(
      central: central, discovery: DiscoveryBridge(topics: topics),
      gatt: GATTBridge(
        topics: topics,
        configuration: .init(policy: ConnectionPolicy(addresses: [Self.address]))),
      client: gatewayClient, qos: .atLeastOnce, logger: quietLogger("connections"))
    let running = Task { await service.run() }
    defer { running.cancel() }

    let observer = try await connectedClient(configuration(broker))
    let collector = Collector(observer)
    try await observer.subscribe("gatt2mqtt/#", qos: .atLeastOnce)
    let device = DeviceID(address: Self.address)
    let ready = await eventually(timeout: 10) {
      collector.messages.contains {
        $0.topic == topics.connection(device).rawValue
          && String(decoding: $0.payload, as: UTF8.self).contains("\"ready\"")
      }
    }
    #expect(ready)

    let path = CharacteristicPath(
      device: device, service: Self.control, characteristic: Self.command)
    for index in 0..<20 {
      let payload = Array(
        #"{"hex":"\#(String(format: "%02x", index))","transaction":\#(index)}"#.utf8)
      service.request(
        .set(path),
        message: MQTTMessage(
          topic: topics.characteristic(
            .set, path.device, service: path.service, characteristic: path.characteristic
          )
          .rawValue, payload: payload))
    }
    let resultTopic = topics.result(path).rawValue
    let all = await eventually(timeout: 10) { collector.count(topic: resultTopic) == 20 }
    #expect(all)
    let results = collector.messages.filter { $0.topic == resultTopic }.compactMap {
      try? JSONValue.parse($0.payload).objectValue
    }
    #expect(results.map { $0["status"] } == Array(repeating: .string("ok"), count: 20))
    #expect(results.map { $0["transaction"] } == (0..<20).map { .integer(Int64($0)) })
    let written = central.state.withLock {
      $0.writes[
        GATTCharacteristicID(
          address: Self.address, service: Self.control, characteristic: Self.command)]
    }
    #expect(written == (0..<20).map { [UInt8($0)] })
    #expect(central.state.withLock { $0.overlaps } == 0)

    // Orderly shutdown: disconnected at the end.
    await service.shutdown(timeout: 2)
    #expect(central.state.withLock { $0.disconnects } == [Self.address])
  }
}
