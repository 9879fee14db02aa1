import BridgeCore
import Mosquitto
import TestSupport
import Testing

@testable import Gateway

@Suite("The peripheral role's centrals reach the central role's registry")
struct CentralRoleSubscribersTests {
  @Test("subscribed, a later MTU, the service stopping: the registry follows")
  func registryFollowsThePeripheral() async throws {
    let broker = try Broker()
    try await broker.start()
    defer { broker.stop() }
    let topics = try Topics(gateway: GatewayID("test"))
    let client = try await connectedClient(configuration(broker))
    defer { Task { await client.shutdown(finalMessages: [], timeout: 1) } }
    let service = CentralRoleService(
      central: FakeGATTCentral(tree: GATTTree(services: [])),
      discovery: DiscoveryBridge(topics: topics), gatt: GATTBridge(topics: topics),
      client: client, qos: .atLeastOnce, logger: quietLogger("subscribers"))
    let phone = try BluetoothAddress("4A:11:22:33:44:55")
    func subscriber() -> DeviceRecord.Subscriber? {
      service.driver.read { $0.discovery.registry[phone]?.subscriber }
    }
    service.peripheralEvent(.subscribed(central: phone, mtu: 185))
    #expect(subscriber()?.mtu == 185)
    service.peripheralEvent(.mtu(central: phone, mtu: 247))
    #expect(subscriber()?.mtu == 247)
    service.peripheralEvent(.stateChanged(.stopped))
    #expect(subscriber() == nil)
    #expect(service.driver.read { $0.discovery.registry[phone] } != nil, "still a device")
    // An MTU of a central that is not subscribed, an anonymous subscription: nothing.
    service.peripheralEvent(.mtu(central: phone, mtu: 100))
    service.peripheralEvent(.subscribed(central: nil, mtu: 23))
    #expect(subscriber() == nil)
    #expect(service.driver.read { $0.discovery.registry.count } == 1)
  }
}
