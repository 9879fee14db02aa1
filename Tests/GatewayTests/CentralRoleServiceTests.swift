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

  /// A service connected to three devices, for the shutdown tests.
  private func connectedToThree(
    _ broker: Broker, _ central: FakeGATTCentral
  ) async throws -> (CentralRoleService, Task<Void, Never>, [BluetoothAddress]) {
    let topics = try Topics(gateway: GatewayID("test"))
    let addresses = try ["A4:C1:38:00:00:01", "A4:C1:38:00:00:02", "A4:C1:38:00:00:03"].map(
      BluetoothAddress.init)
    let gatewayClient = try await connectedClient(configuration(broker))
    let service = CentralRoleService(
      central: central, discovery: DiscoveryBridge(topics: topics),
      gatt: GATTBridge(
        topics: topics,
        configuration: .init(
          policy: ConnectionPolicy(addresses: Set(addresses)),
          notify: [try CharacteristicSelector(parsing: "*/180f/2a19")])),
      client: gatewayClient, qos: .atLeastOnce, logger: quietLogger("connections"))
    let running = Task { await service.run() }
    let notifying = await eventually(timeout: 10) {
      central.state.withLock { $0.notifyCalls.filter(\.1).count } == 3
    }
    try #require(notifying)
    // The orderly teardown (notifications off first) never gets to its Disconnect: each one
    // the fake sees is forced.
    central.state.withLock { $0.notifyOffHangs = true }
    return (service, running, addresses)
  }

  @Test("links left at shutdown are disconnected all at once, not one after the other")
  func forcedDisconnectionsRunTogether() async throws {
    let broker = try Broker()
    try await broker.start()
    defer { broker.stop() }
    let central = FakeGATTCentral(tree: Self.tree)
    let (service, running, addresses) = try await connectedToThree(broker, central)
    defer { running.cancel() }
    central.state.withLock { $0.disconnectDelay = .seconds(3) }
    let started = ContinuousClock.now
    // No time for the orderly teardown: all three are forced.
    await service.shutdown(timeout: 0, forcedLimit: 15)
    let took = ContinuousClock.now - started
    #expect(Set(central.state.withLock { $0.disconnected }) == Set(addresses))
    // One after the other they take 9 s; together 3 s, with room for a loaded machine.
    #expect(took < .seconds(6), "took \(took)")
  }

  @Test("a stop cut short still has bluetoothd disconnect the links left: only the wait ends")
  func forcedDisconnectionsOutliveCancellation() async throws {
    // Cancelled while it waits 5 s for the forced disconnections' answers.
    try await cancelledShutdown(timeout: 0, disconnectDelay: .milliseconds(400))
  }

  @Test("a stop cancelled during the orderly teardown stops waiting for it at once")
  func cancelledTeardownWaitEnds() async throws {
    // Cancelled while it waits up to 30 s for the orderly teardown, which never ends
    // (notifications off hangs). A cancelled `Task.sleep` returns at once: a loop on it spins
    // out the 30 s.
    try await cancelledShutdown(timeout: 30, disconnectDelay: .zero)
  }

  /// Cancels a shutdown of three links 100 ms in, and checks that the caller returns without
  /// waiting its limits out (at once; the 10-s bound leaves room for a loaded machine) and that
  /// every link is still disconnected.
  private func cancelledShutdown(timeout: Double, disconnectDelay: Duration) async throws {
    let broker = try Broker()
    try await broker.start()
    defer { broker.stop() }
    let central = FakeGATTCentral(tree: Self.tree)
    let (service, running, addresses) = try await connectedToThree(broker, central)
    defer { running.cancel() }
    central.state.withLock { $0.disconnectDelay = disconnectDelay }
    let stopping = Task { await service.shutdown(timeout: timeout, forcedLimit: 30) }
    try await Task.sleep(for: .milliseconds(100))
    let cancelledAt = ContinuousClock.now
    stopping.cancel()
    await stopping.value
    #expect(ContinuousClock.now - cancelledAt < .seconds(10))
    let all = await eventually(timeout: 5) {
      Set(central.state.withLock { $0.disconnected }) == Set(addresses)
    }
    #expect(all)
  }
}
