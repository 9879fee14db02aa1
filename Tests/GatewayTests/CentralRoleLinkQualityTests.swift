import BridgeCore
import Foundation
import Mosquitto
import Synchronization
import TestSupport
import Testing

@testable import Gateway

/// A link reader that answers a fixed reading, or refuses every read.
final class FakeLinkReader: LinkQualityReader {
  let refusal: CentralError?
  let reads = Mutex(0)
  init(refusal: CentralError? = nil) { self.refusal = refusal }

  func linkQuality(
    of address: BluetoothAddress, type: Advertisement.AddressType, adapter: String
  ) async throws(CentralError) -> LinkQuality {
    reads.withLock { $0 += 1 }
    if let refusal { throw refusal }
    guard adapter == "hci1" else { throw CentralError(.notConnected, message: "not here") }
    return LinkQuality(rssi: -55, txPower: 4, maxTxPower: 10)
  }
}

@Suite("Connected devices' RSSI read from the link (row C11)")
struct CentralRoleLinkQualityTests {
  static let address = try! BluetoothAddress("A4:C1:38:1E:29:DF")

  /// A central role over a fake central that has the device connected, with `reader` every
  /// 0.2 s; the broker's messages in `collector`.
  func start(_ reader: FakeLinkReader, adapter: String?) async throws -> (
    CentralRoleService, Collector, Task<Void, Never>, Broker, MQTTClient
  ) {
    let broker = try Broker()
    try await broker.start()
    let topics = try Topics(gateway: GatewayID("test"))
    let client = try await connectedClient(configuration(broker))
    let central = FakeGATTCentral(tree: GATTTree(services: []))
    let service = CentralRoleService(
      central: central,
      discovery: DiscoveryBridge(
        topics: topics, configuration: .init(presence: PresenceEstimator(reportInterval: 0))),
      gatt: GATTBridge(
        topics: topics,
        configuration: .init(policy: ConnectionPolicy(addresses: [Self.address]))),
      client: client, qos: .atLeastOnce, linkQuality: (reader, 0.2, adapter),
      logger: quietLogger("link"))
    let observer = try await connectedClient(configuration(broker))
    let collector = Collector(observer)
    try await observer.subscribe("gatt2mqtt/#", qos: .atLeastOnce)
    let running = Task { await service.run() }
    central.emit(
      .deviceAppeared(Advertisement(address: Self.address, addressType: .public, rssi: -70)))
    central.emit(.adapterChanged(AdapterInfo(id: "hci0", address: nil, name: "a", powered: true)))
    central.emit(.adapterChanged(AdapterInfo(id: "hci1", address: nil, name: "b", powered: true)))
    return (service, collector, running, broker, client)
  }

  func events(_ collector: Collector, _ type: String) -> [JSONValue] {
    collector.messages.filter { $0.topic == "gatt2mqtt/bridge/test/event" }.compactMap {
      try? JSONValue.parse($0.payload)
    }.filter { $0["type"]?.stringValue == type }
  }

  @Test("readings reach presence; device/rssi reads now, on the adapter that has the link")
  func readings() async throws {
    let reader = FakeLinkReader()
    let (service, collector, running, broker, client) = try await start(reader, adapter: nil)
    defer {
      running.cancel()
      broker.stop()
    }
    let presence = "gatt2mqtt/A4C1381E29DF/presence"
    // The periodic reading (on hci1, after hci0 said not connected) becomes a presence sample.
    #expect(
      await eventually(timeout: 10) {
        collector.messages.contains {
          $0.topic == presence && String(decoding: $0.payload, as: UTF8.self).contains("-55")
        }
      })
    let response = await service.readLinkQuality(["device": "a4:c1:38:1e:29:df"])
    #expect(response.ok)
    #expect(response.data["rssi"] == -55)
    #expect(response.data["tx_power"] == 4)
    #expect(response.data["max_tx_power"] == 10)
    #expect(response.data["device"] == "A4C1381E29DF")
    let other = await service.readLinkQuality(["device": "11:22:33:44:55:66"])
    #expect(other.errorCode == "not_connected")
    #expect(events(collector, "connection_rssi_unavailable").isEmpty)
    await client.shutdown(finalMessages: [], timeout: 1)
  }

  @Test("without CAP_NET_ADMIN: said once, never tried again, device/rssi says why")
  func refused() async throws {
    let reader = FakeLinkReader(
      refusal: CentralError(.notPermitted, message: "needs CAP_NET_ADMIN"))
    let (service, collector, running, broker, client) = try await start(reader, adapter: "hci0")
    defer {
      running.cancel()
      broker.stop()
    }
    #expect(
      await eventually(timeout: 10) {
        !events(collector, "connection_rssi_unavailable").isEmpty
      })
    try await Task.sleep(for: .seconds(1))
    let said = events(collector, "connection_rssi_unavailable")
    #expect(said.count == 1)
    #expect(said.first?["data"]?["error"] == "not_permitted")
    #expect(said.first?["data"]?["message"] == "needs CAP_NET_ADMIN")
    #expect(reader.reads.withLock { $0 } == 1)
    let response = await service.readLinkQuality(["device": "A4C1381E29DF"])
    #expect(response.errorCode == "not_permitted")
    #expect(reader.reads.withLock { $0 } == 1)
    // The role itself carries on: a read request is still answered (seen in the lab: the
    // reading task ending took the whole role down with it).
    let path = CharacteristicPath(
      device: DeviceID(address: Self.address), service: BluetoothUUID(uuid16: 0x180F),
      characteristic: BluetoothUUID(uuid16: 0x2A19))
    service.request(
      .get(path),
      message: MQTTMessage(topic: "gatt2mqtt/A4C1381E29DF/gatt/180f/2a19/get", payload: []))
    #expect(
      await eventually(timeout: 10) {
        collector.messages.contains { $0.topic == "gatt2mqtt/A4C1381E29DF/gatt/180f/2a19/result" }
      })
    await client.shutdown(finalMessages: [], timeout: 1)
  }
}
