import BridgeCore
import Testing

@Suite("Advertisement JSON and device ids")
struct AdvertisementTests {
  @Test("literal device properties give the exact TOPICS.md JSON with hex maps")
  func exactJSON() throws {
    let custom = try BluetoothUUID("e20a39f4-73f5-4bc4-a12f-17d1ad07a961")
    let advert = Advertisement(
      address: Fixture.address("A4:C1:38:1E:29:DF"), addressType: .public,
      name: Array("ATC_1E29DF".utf8), rssi: -71, txPower: 4,
      manufacturerData: [0x0059: [0xAB], 0x004C: [0x02, 0x15, 0x01]],
      serviceData: [
        custom: [0xFF], BluetoothUUID(uuid16: 0xFCD2): [0x40, 0x00, 0x01],
        BluetoothUUID(uuid16: 0x181A): [0x01],
      ],
      serviceUUIDs: [
        BluetoothUUID(uuid16: 0x180F), BluetoothUUID(uuid16: 0x180A),
        BluetoothUUID(uuid16: 0x180F),
      ])
    let json = String(
      decoding: advert.jsonBytes(gateway: Fixture.gateway, time: 1_700_000_000.1234),
      as: UTF8.self)
    #expect(advert.json(gateway: Fixture.gateway, time: 1_700_000_000.1234).serialized() == json)
    #expect(
      json == #"{"id":"A4:C1:38:1E:29:DF","addr_type":"public","name":"ATC_1E29DF","rssi":-71,"#
        + #""txpower":4,"manufacturerdata":{"004c":"021501","0059":"ab"},"servicedata":{"181a":"01","#
        + #""fcd2":"400001","e20a39f4-73f5-4bc4-a12f-17d1ad07a961":"ff"},"uuids":["180a","180f"],"#
        + #""gw":"pi","ts":1700000000123}"#)
  }

  @Test(
    "the bytes written directly are what the JSON tree of the same members serializes to",
    arguments: hostileNames)
  func directBytesMatchTheTree(name: [UInt8]) throws {
    var seed: UInt64 = 0x9E37_79B9_7F4A_7C15 &+ UInt64(name.count)
    func next() -> UInt64 {
      seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
      return seed >> 33
    }
    for round in 0..<50 {
      let bytes = (0..<Int(next() % 12)).map { _ in UInt8(truncatingIfNeeded: next()) }
      let advert = Advertisement(
        address: try #require(
          BluetoothAddress(bytes: (0..<6).map { _ in UInt8(truncatingIfNeeded: next()) })),
        addressType: round.isMultiple(of: 2) ? .public : .random,
        name: round.isMultiple(of: 3) ? nil : name, rssi: Int(next() % 120) - 110,
        txPower: round.isMultiple(of: 4) ? nil : Int(next() % 20) - 10,
        manufacturerData: [UInt16(truncatingIfNeeded: next()): bytes, 0x004C: bytes.reversed()],
        serviceData: round.isMultiple(of: 5)
          ? [:]
          : [
            BluetoothUUID(uuid16: UInt16(truncatingIfNeeded: next())): bytes,
            try BluetoothUUID("e20a39f4-73f5-4bc4-a12f-17d1ad07a961"): [],
          ],
        serviceUUIDs: [BluetoothUUID(uuid16: 0x180F), BluetoothUUID(uuid16: 0x180A)])
      let written = advert.jsonBytes(gateway: Fixture.gateway, time: Double(next()) / 1000)
      #expect(try JSONValue.parse(written).serializedBytes() == written)
    }
  }

  @Test("DEL, U+2028 and U+2029 are escaped; other non-ASCII characters stay UTF-8")
  func escapes() {
    let advert = Advertisement(
      address: Fixture.address("C0:00:00:00:00:01"),
      name: Array("a\u{7F}b\u{2028}c\u{2029}€😀\"\\\n".utf8))
    let text = String(decoding: advert.jsonBytes(gateway: Fixture.gateway, time: 0), as: UTF8.self)
    #expect(text.contains(#""name":"a\u007fb\u2028c\u2029€😀\"\\\n","gw""#))
  }

  @Test("unknown and empty fields are left out, never null")
  func absentKeys() {
    let advert = Advertisement(address: Fixture.address("C0:00:00:00:00:01"), addressType: .random)
    #expect(
      advert.json(gateway: Fixture.gateway, time: 1.5).serialized()
        == #"{"id":"C0:00:00:00:00:01","addr_type":"random","gw":"pi","ts":1500}"#)
  }

  @Test("empty manufacturer data still shows its company id")
  func emptyManufacturerData() {
    let advert = Advertisement(
      address: Fixture.address("C0:00:00:00:00:01"), manufacturerData: [6: []])
    #expect(advert.json(gateway: Fixture.gateway, time: 0)["manufacturerdata"] == ["0006": ""])
  }

  static let hostileNames: [[UInt8]] = [
    Array("kitchen/+/#".utf8), Array("a\u{0}b".utf8), [0x41, 0xFF, 0xFE, 0x42], [0xC3],
    Array(String(repeating: "é", count: 300).utf8), Array("\u{202E}evil\u{200B}".utf8),
    Array("line\nbreak\t\"quoted\"\\".utf8), Array("bridge".utf8), [],
  ]

  @Test(
    "hostile names stay raw in valid JSON; invalid UTF-8 also as name_hex", arguments: hostileNames)
  func hostileNameJSON(name: [UInt8]) throws {
    let advert = Advertisement(address: Fixture.address("A4:C1:38:1E:29:DF"), name: name, rssi: -50)
    let bytes = advert.json(gateway: Fixture.gateway, time: 0).serializedBytes()
    let parsed = try JSONValue.parse(bytes)
    #expect(parsed["name"]?.stringValue == String(decoding: name, as: UTF8.self))
    let isUTF8 = String(validating: name, as: UTF8.self) != nil
    #expect(parsed["name_hex"]?.stringValue == (isUTF8 ? nil : hexString(name)))
    #expect(
      Fixture.topics.advertisement(DeviceID(address: advert.address)).rawValue
        == "gatt2mqtt/A4C1381E29DF/advertisement")
  }

  @Test("content comparison ignores RSSI and UUID order only")
  func sameContent() {
    let base = Fixture.advert(uuids: [0x180F, 0x180A])
    var other = base
    other.rssi = -99
    other.serviceUUIDs.reverse()
    #expect(base.hasSameContent(as: other))
    other.manufacturerData = [0x004C: [1]]
    #expect(!base.hasSameContent(as: other))
    var renamed = base
    renamed.name = Array("Other".utf8)
    #expect(!base.hasSameContent(as: renamed))
  }

  private func hexString(_ bytes: [UInt8]) -> String {
    let digits = Array("0123456789abcdef")
    return String(bytes.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 15)]] })
  }
}
