import BridgeCore
import Testing

@Suite("Device registry")
struct DeviceRegistryTests {
  let t0 = Fixture.t0

  @Test("a new device gets its address id and is online; a name once seen is kept")
  func observe() throws {
    var registry = DeviceRegistry()
    let result1 = registry.observe(Fixture.advert(name: "Thermo", rssi: -60), now: t0)
    let first = try #require(result1)
    #expect(first.isNew && first.cameOnline && first.listChanged)
    #expect(first.record.id.rawValue == "A4C1381E29DF")
    let result2 = registry.observe(Fixture.advert(name: nil, rssi: -65), now: t0 + 1)
    let second = try #require(result2)
    #expect(!second.isNew && !second.cameOnline)
    #expect(!second.listChanged, "an RSSI change alone does not change the devices list")
    #expect(second.record.name == Array("Thermo".utf8))
    #expect(second.record.rssi == -65)
    #expect(second.record.lastSeen == t0 + 1)
    #expect(
      registry.record(for: DeviceID(address: Fixture.address("A4:C1:38:1E:29:DF")))?.rssi == -65)
  }

  @Test("unseen devices go offline, come back online, and are forgotten later")
  func offlineAndForget() throws {
    var registry = DeviceRegistry(offlineAfter: 90, forgetAfter: 900)
    _ = registry.observe(Fixture.advert(), now: t0)
    let result3 = registry.expire(now: t0 + 89.9)
    #expect(result3.wentOffline.isEmpty)
    let offline = registry.expire(now: t0 + 90)
    #expect(offline.wentOffline.map(\.id.rawValue) == ["A4C1381E29DF"])
    #expect(offline.wentOffline.first?.availabilityJSON.serialized() == #"{"state":"offline"}"#)
    let result4 = registry.expire(now: t0 + 91)
    #expect(result4.wentOffline.isEmpty, "offline is reported once")
    let result5 = registry.observe(Fixture.advert(), now: t0 + 100)
    let back = try #require(result5)
    #expect(back.cameOnline && back.listChanged && !back.isNew)
    #expect(back.record.availabilityJSON.serialized() == #"{"state":"online"}"#)
    let result6 = registry.expire(now: t0 + 999)
    #expect(result6.forgotten.isEmpty)
    let result7 = registry.expire(now: t0 + 1000)
    #expect(result7.forgotten.map(\.id.rawValue) == ["A4C1381E29DF"])
    #expect(registry.count == 0)
  }

  @Test("a connected device is never offline, forgotten or evicted")
  func connectedExempt() throws {
    var registry = DeviceRegistry(offlineAfter: 10, forgetAfter: 20, capacity: 2)
    let connected = Fixture.address("A4:C1:38:1E:29:DF")
    _ = registry.observe(Fixture.advert(), now: t0)
    let result8 = registry.setConnection(connected, .connected, now: t0)
    #expect(result8?.connection == .connected)
    let expiry = registry.expire(now: t0 + 1000)
    #expect(expiry.wentOffline.isEmpty && expiry.forgotten.isEmpty)
    for index in 0..<10 {
      _ = registry.observe(
        Fixture.advert(Fixture.randomAddress(index).description), now: t0 + 1001 + Double(index))
    }
    #expect(registry[connected]?.online == true)
    #expect(registry.count == 2)
    let result9 = registry.setConnection(Fixture.address("00:00:00:00:00:01"), .connected, now: t0)
    #expect(result9 == nil)
  }

  @Test("10,000 rotating random addresses stay within the cap, evicting the longest unseen")
  func rotatingAddresses() throws {
    var registry = DeviceRegistry(capacity: 100)
    let keeper = Fixture.address("A4:C1:38:1E:29:DF")
    _ = registry.observe(Fixture.advert(), now: t0)
    _ = registry.setConnection(keeper, .connected, now: t0)
    var maximum = 0
    var evicted = 0
    for index in 0..<10_000 {
      let advert = Fixture.advert(Fixture.randomAddress(index).description, type: .random)
      let result10 = registry.observe(advert, now: t0 + Double(index) * 0.01)
      let observation = try #require(result10)
      evicted += observation.evicted.count
      if let victim = observation.evicted.first {
        #expect(
          victim.address == Fixture.randomAddress(index - 99), "the longest unseen goes first")
      }
      maximum = max(maximum, registry.count)
    }
    #expect(maximum == 100)
    #expect(registry.evictions == 9_901)
    #expect(evicted == 9_901)
    #expect(registry[keeper] != nil)
    #expect(registry.records.count == 100)
  }

  @Test("when every device is connected a newcomer is refused and counted")
  func refusal() {
    var registry = DeviceRegistry(capacity: 1)
    _ = registry.observe(Fixture.advert(), now: t0)
    _ = registry.setConnection(Fixture.address("A4:C1:38:1E:29:DF"), .ready, now: t0)
    let result11 = registry.observe(Fixture.advert("11:22:33:44:55:66"), now: t0 + 1)
    #expect(result11 == nil)
    #expect(registry.refusals == 1)
    #expect(registry.evictions == 0)
  }

  @Test("friendly names from the configuration as ids, address ids for the rest")
  func naming() throws {
    let friendly = try DeviceID(friendlyName: "kitchen/thermometer")
    var registry = DeviceRegistry(
      naming: DeviceNaming(friendlyNames: [Fixture.address("A4:C1:38:1E:29:DF"): friendly]))
    let names: [(String, String?, String)] = [
      ("A4:C1:38:1E:29:DF", "Whatever", "kitchen/thermometer"),
      ("11:22:33:44:55:01", "Lamp/+#", "112233445501"),
      ("11:22:33:44:55:04", nil, "112233445504"),
    ]
    for (address, name, expected) in names {
      let result12 = registry.observe(Fixture.advert(address, name: name), now: t0)
      let record = try #require(result12).record
      #expect(record.id.rawValue == expected)
      #expect(try TopicName(Fixture.topics.availability(record.id).rawValue).levels.count >= 3)
    }
  }

  @Test("the devices list is the exact JSON, sorted by id")
  func listJSON() throws {
    var registry = DeviceRegistry()
    _ = registry.observe(
      Fixture.advert("C0:00:00:00:00:02", name: nil, rssi: -80, type: .random), now: t0)
    var hostile = Fixture.advert("A4:C1:38:1E:29:DF", rssi: -71)
    hostile.name = [0x41, 0xFF]
    _ = registry.observe(hostile, now: t0 + 0.5)
    _ = registry.setConnection(Fixture.address("C0:00:00:00:00:02"), .connecting, now: t0 + 1)
    #expect(
      registry.json(owner: Fixture.gateway).serialized()
        == #"[{"id":"A4C1381E29DF","address":"A4:C1:38:1E:29:DF","addr_type":"public","#
        + #""name":"A\#u{FFFD}","name_hex":"41ff","rssi":-71,"connection":"disconnected","#
        + #""availability":"online","owner":"pi","last_seen":1700000000500},"#
        + #"{"id":"C00000000002","address":"C0:00:00:00:00:02","addr_type":"random","rssi":-80,"#
        + #""connection":"connecting","availability":"online","owner":"pi","last_seen":1700000001000}]"#
    )
  }
}
