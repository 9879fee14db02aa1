import BridgeCore
import Testing

/// The peripheral role's centrals in the one device registry
/// (``DiscoveryBridge/peripheralCentral(_:_:now:)``).
@Suite("Centrals of the peripheral role in the device registry")
struct PeripheralCentralsTests {
  let t0 = Fixture.t0
  let phone = Fixture.address("4A:11:22:33:44:55")

  func bridge(capacity: Int = 1000) -> DiscoveryBridge {
    DiscoveryBridge(
      topics: Fixture.topics,
      configuration: .init(
        registry: DeviceRegistry(offlineAfter: 90, forgetAfter: 900, capacity: capacity),
        devicesInterval: 0))
  }

  func listed(_ bridge: inout DiscoveryBridge, now: Double) -> [JSONValue] {
    bridge.tick(now: now).published("/devices").last?.json?.arrayValue ?? []
  }

  @Test(
    "a subscribing central is listed with its MTU, online, and kept while subscribed; forgotten on schedule after"
  )
  func subscriberLifecycle() throws {
    var bridge = bridge()
    _ = bridge.tick(now: t0)
    let subscribed = bridge.peripheralCentral(phone, .init(mtu: 185), now: t0)
    #expect(subscribed.map(\.topic) == ["gatt2mqtt/4A1122334455/availability"])
    #expect(subscribed.first?.json?["state"] == "online")
    var list = listed(&bridge, now: t0 + 1)
    #expect(list.count == 1)
    #expect(list.first?["subscriber"]?["mtu"] == 185)
    #expect(list.first?["addr_type"] == "random", "a resolvable private address")
    #expect(list.first?["connection"] == "disconnected", "the stack's to write")

    // The same subscription again changes nothing; a later MTU is taken.
    #expect(bridge.peripheralCentral(phone, .init(mtu: 185), now: t0 + 2).isEmpty)
    _ = bridge.peripheralCentral(phone, .init(mtu: 247), now: t0 + 3)
    #expect(listed(&bridge, now: t0 + 4).first?["subscriber"]?["mtu"] == 247)

    // Unheard for longer than forget_after, but subscribed: kept, online.
    #expect(bridge.tick(now: t0 + 2000).filter { $0.text == "" }.isEmpty)
    #expect(bridge.registry[phone]?.online == true)

    #expect(bridge.peripheralCentral(phone, nil, now: t0 + 2001).isEmpty)
    list = listed(&bridge, now: t0 + 2002)
    #expect(list.first?["subscriber"] == nil)
    #expect(
      bridge.tick(now: t0 + 2001 + 91).published("/availability").first?.text?.contains("offline")
        == true)
    let forgotten = bridge.tick(now: t0 + 2001 + 900)
    #expect(
      forgotten.filter { $0.text == "" }.compactMap(\.topic).contains(
        "gatt2mqtt/4A1122334455/availability"))
    #expect(bridge.registry.count == 0)
  }

  @Test("a central heard advertising keeps its record; an unknown central unsubscribing is nothing")
  func knownAndUnknown() throws {
    var bridge = bridge()
    _ = bridge.handle(
      .deviceUpdated(Fixture.advert("4A:11:22:33:44:55", name: "Phone", type: .random)), now: t0)
    #expect(bridge.peripheralCentral(phone, .init(mtu: nil), now: t0 + 1).isEmpty, "already online")
    let entry = try #require(listed(&bridge, now: t0 + 2).first)
    #expect(entry["name"] == "Phone")
    #expect(entry["subscriber"] == .object([:]), "MTU not told")
    #expect(bridge.peripheralCentral(Fixture.address("4A:00:00:00:00:01"), nil, now: t0).isEmpty)
    #expect(bridge.registry.count == 1)
  }

  @Test("a full registry makes room for a subscribing central, and never evicts a subscriber")
  func capacity() throws {
    var bridge = bridge(capacity: 1)
    _ = bridge.handle(.deviceUpdated(Fixture.advert("11:22:33:44:55:66")), now: t0)
    let outputs = bridge.peripheralCentral(phone, .init(mtu: 23), now: t0 + 1)
    #expect(
      outputs.filter { $0.text == "" }.compactMap(\.topic).contains(
        "gatt2mqtt/112233445566/availability"))
    #expect(bridge.registry[phone] != nil)
    _ = bridge.handle(.deviceUpdated(Fixture.advert("11:22:33:44:55:66")), now: t0 + 2)
    #expect(bridge.registry[phone] != nil, "a subscriber is not evicted")
    #expect(bridge.registry.refusals == 1)
  }
}
