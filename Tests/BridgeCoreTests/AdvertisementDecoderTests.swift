import BridgeCore
import Testing

/// The advertisement decoders against the vectors of each format's public specification
/// (bthome.io/format, Apple's iBeacon layout, the Eddystone protocol specification, Ruuvi's
/// data format 5 test vectors), and malformed inputs that decode to an error, never a trap.
@Suite("Advertisement decoders")
struct AdvertisementDecoderTests {
  private static let address = BluetoothAddress(bytes: [0xA4, 0xC1, 0x38, 0x1E, 0x29, 0xDF])!

  /// The `decoded` JSON of an advertisement with the given data.
  private func decoded(
    service: [UInt16: [UInt8]] = [:], manufacturer: [UInt16: [UInt8]] = [:]
  ) -> String {
    let advertisement = Advertisement(
      address: Self.address, rssi: -60, manufacturerData: manufacturer,
      serviceData: Dictionary(
        uniqueKeysWithValues: service.map { (BluetoothUUID(uuid16: $0.key), $0.value) }))
    return AdvertisementDecoder.decode(advertisement).json.serialized()
  }

  private func bthome(_ hex: String) -> String { decoded(service: [0xFCD2: bytes(hex)]) }

  private func bytes(_ hex: String) -> [UInt8] {
    let digits = Array(hex.filter { !$0.isWhitespace })
    return stride(from: 0, to: digits.count, by: 2).map {
      UInt8(String(digits[$0...$0 + 1]), radix: 16)!
    }
  }

  @Test(
    "BTHome v2: each numeric object of the spec's examples",
    arguments: [
      ("40 01 61", #""battery":97"#),
      ("40 02 CA 09", #""temperature":25.06"#),
      ("40 03 BF 13", #""humidity":50.55"#),
      ("40 04 13 8A 01", #""pressure":1008.83"#),
      ("40 05 13 8A 14", #""illuminance":13460.67"#),
      ("40 06 5E 1F", #""mass_kg":80.3"#),
      ("40 08 CA 06", #""dewpoint":17.38"#),
      ("40 09 60", #""count":96"#),
      ("40 0A 13 8A 14", #""energy":1346.067"#),
      ("40 0B 02 1B 00", #""power":69.14"#),
      ("40 0C 02 0C", #""voltage":3.074"#),
      ("40 0D 12 0C", #""pm25":3090"#),
      ("40 12 E2 04", #""co2":1250"#),
      ("40 2E 23", #""humidity":35"#),
      ("40 3F 02 0C", #""rotation":307.4"#),
      ("40 45 11 01", #""temperature":27.3"#),
      ("40 57 EA", #""temperature":-22"#),
      ("40 02 F4 FF", #""temperature":-0.12"#),
      ("40 58 E2", #""temperature":-10.5"#),
      ("40 56 D2 04", #""conductivity":1234"#),
      ("40 25 01", #""presence_detected":true"#),
      ("40 3A 80", #""button":"hold_press""#),
      ("40 F1 04 03 02 01", #""firmware_version":"1.2.3.4""#),
      ("40 F2 00 01 02", #""firmware_version":"2.1.0""#),
    ])
  func bthomeNumbers(_ hex: String, _ member: String) {
    #expect(bthome(hex) == "{\(member),\"formats\":[\"bthome\"]}")
  }

  @Test("BTHome v2: several objects, binary sensors, events, text; a repeated object is numbered")
  func bthomeMixed() {
    #expect(
      bthome("40 00 09 01 5A 02 CA 09 03 BF 13 1A 01 21 00 3A 02 3C 01 03 02 00 01")
        == #"{"packet_id":9,"battery":90,"temperature":25.06,"humidity":50.55,"door":true,"#
        + #""motion":false,"button":"double_press","dimmer":-3,"temperature_2":2.56,"#
        + #""formats":["bthome"]}"#)
    #expect(
      bthome("40 53 02 68 69 54 02 AB CD") == #"{"text":"hi","raw":"abcd","formats":["bthome"]}"#)
  }

  @Test(
    "BTHome v2: malformed data keeps what came before the fault and says where",
    arguments: [
      ("", #"{"formats":[],"error":"bthome: no device information byte"}"#),
      (
        "40 02 CA",
        #"{"formats":["bthome"],"error":"bthome: object 0x02 (temperature) cut short at byte 1"}"#
      ),
      (
        "40 01 61 9F 00",
        #"{"battery":97,"formats":["bthome"],"error":"bthome: unknown object id 0x9f at byte 3"}"#
      ),
      ("41 02 CA 09", #"{"formats":[],"error":"bthome: encrypted (a bind key is not supported)"}"#),
      ("20 02 CA 09", #"{"formats":[],"error":"bthome: version 1 is not BTHome v2"}"#),
      (
        "40 53 05 68",
        #"{"formats":["bthome"],"error":"bthome: object 0x53 (text) cut short at byte 1"}"#
      ),
    ])
  func bthomeMalformed(_ hex: String, _ json: String) {
    #expect(bthome(hex) == json)
  }

  @Test("iBeacon: UUID, major, minor and the measured power; other Apple data is left alone")
  func iBeacon() {
    let frame = "02 15 E2C56DB5DFFB48D2B060D0F5A71096E0 0001 0102 C5"
    #expect(
      decoded(manufacturer: [0x004C: bytes(frame)])
        == #"{"ibeacon_uuid":"e2c56db5-dffb-48d2-b060-d0f5a71096e0","ibeacon_major":1,"#
        + #""ibeacon_minor":258,"tx_power_1m":-59,"formats":["ibeacon"]}"#)
    #expect(decoded(manufacturer: [0x004C: bytes("10 05 01 18 44 C5 6E")]) == #"{"formats":[]}"#)
    #expect(
      decoded(manufacturer: [0x004C: bytes("02 15 E2C56DB5DFFB")])
        == #"{"formats":[],"error":"ibeacon: 8 bytes with length field 21, 23 and 21 expected"}"#)
  }

  @Test("Eddystone: UID, URL with its expansions, unencrypted TLM; unknown frames are errors")
  func eddystone() {
    #expect(
      decoded(service: [0xFEAA: bytes("00 E7 00112233445566778899 AABBCCDDEEFF 0000")])
        == #"{"eddystone_namespace":"00112233445566778899","eddystone_instance":"aabbccddeeff","#
        + #""tx_power_0m":-25,"formats":["eddystone_uid"]}"#)
    #expect(
      decoded(service: [0xFEAA: bytes("10 EB 03 676F6F676C65 07")])
        == #"{"url":"https://google.com","tx_power_0m":-21,"formats":["eddystone_url"]}"#)
    #expect(
      decoded(service: [0xFEAA: bytes("10 EB 00 6578616D706C65 00 6162")])
        == #"{"url":"http://www.example.com/ab","tx_power_0m":-21,"formats":["eddystone_url"]}"#)
    #expect(
      decoded(service: [0xFEAA: bytes("20 00 0BB8 1880 0000000A 0000012C")])
        == #"{"voltage":3,"temperature":24.5,"advertisement_count":10,"uptime":30,"#
        + #""formats":["eddystone_tlm"]}"#)
    // "Not supported" battery and temperature are left out.
    #expect(
      decoded(service: [0xFEAA: bytes("20 00 0000 8000 00000001 00000001")])
        == #"{"advertisement_count":1,"uptime":0.1,"formats":["eddystone_tlm"]}"#)
    #expect(
      decoded(service: [0xFEAA: bytes("30 00")])
        == #"{"formats":[],"error":"eddystone: frame type 0x30 not decoded"}"#)
    #expect(
      decoded(service: [0xFEAA: bytes("10 EB 09 61")])
        == #"{"formats":[],"error":"eddystone_url: unknown URL scheme 0x09"}"#)
    #expect(
      decoded(service: [0xFEAA: bytes("20 00 0BB8")])
        == #"{"formats":[],"error":"eddystone_tlm: 4 bytes, 14 expected"}"#)
  }

  @Test("Ruuvi RAWv2: the valid, maximum, minimum and invalid vectors of the data format 5 spec")
  func ruuvi() {
    #expect(
      decoded(manufacturer: [0x0499: bytes("0512FC5394C37C0004FFFC040CAC364200CDCBB8334C884F")])
        == #"{"temperature":24.3,"humidity":53.49,"pressure":1000.44,"acceleration_x":0.004,"#
        + #""acceleration_y":-0.004,"acceleration_z":1.036,"voltage":2.977,"tx_power":4,"#
        + #""movement_counter":66,"measurement_sequence":205,"mac":"CB:B8:33:4C:88:4F","#
        + #""formats":["ruuvi_v5"]}"#)
    #expect(
      decoded(manufacturer: [0x0499: bytes("057FFFFFFEFFFE7FFF7FFF7FFFFFDEFEFFFECBB8334C884F")])
        == #"{"temperature":163.835,"humidity":163.835,"pressure":1155.34,"#
        + #""acceleration_x":32.767,"acceleration_y":32.767,"acceleration_z":32.767,"#
        + #""voltage":3.646,"tx_power":20,"movement_counter":254,"measurement_sequence":65534,"#
        + #""mac":"CB:B8:33:4C:88:4F","formats":["ruuvi_v5"]}"#)
    #expect(
      decoded(manufacturer: [0x0499: bytes("058001000000008001800180010000000000CBB8334C884F")])
        == #"{"temperature":-163.835,"humidity":0,"pressure":500,"acceleration_x":-32.767,"#
        + #""acceleration_y":-32.767,"acceleration_z":-32.767,"voltage":1.6,"tx_power":-40,"#
        + #""movement_counter":0,"measurement_sequence":0,"mac":"CB:B8:33:4C:88:4F","#
        + #""formats":["ruuvi_v5"]}"#)
    #expect(
      decoded(manufacturer: [0x0499: bytes("058000FFFFFFFF800080008000FFFFFFFFFFFFFFFFFFFFFF")])
        == #"{"formats":["ruuvi_v5"]}"#)
    #expect(
      decoded(manufacturer: [0x0499: bytes("0512FC5394")])
        == #"{"formats":[],"error":"ruuvi_v5: 5 bytes, 24 expected"}"#)
    #expect(
      decoded(manufacturer: [0x0499: bytes("03291A1ECE1EFC18F94202CA0B53")])
        == #"{"formats":[],"error":"ruuvi: data format 3 not decoded (5 is)"}"#)
  }

  @Test("SIG service data: battery, temperature, humidity, pressure; ATC1441 and pvvx")
  func sigServiceData() {
    #expect(decoded(service: [0x180F: [0x5A]]) == #"{"battery":90,"formats":["sig"]}"#)
    #expect(
      decoded(service: [
        0x2A6E: [0x34, 0x08], 0x2A6F: [0x88, 0x13], 0x2A6D: [0x40, 0x42, 0x0F, 0x00],
      ])
        == #"{"pressure":1000,"temperature":21,"humidity":50,"formats":["sig"]}"#)
    #expect(
      decoded(service: [0x181A: bytes("A4C138123456 00D2 37 5A 0BB8 1F")])
        == #"{"temperature":21,"humidity":55,"battery":90,"voltage":3,"packet_id":31,"#
        + #""formats":["atc1441"]}"#)
    #expect(
      decoded(service: [0x181A: bytes("563412 38C1A4 3408 7C15 B80B 5A 07 00")])
        == #"{"temperature":21,"humidity":55,"voltage":3,"battery":90,"packet_id":7,"#
        + #""formats":["pvvx"]}"#)
    #expect(
      decoded(service: [0x180F: [0x5A, 0x00]])
        == #"{"formats":[],"error":"sig: battery level: 2 bytes, 1 expected"}"#)
    #expect(
      decoded(service: [0x180F: [101]])
        == #"{"formats":[],"error":"sig: battery level 101 % over 100"}"#)
    #expect(
      decoded(service: [0x181A: [1, 2, 3]])
        == #"{"formats":[],"error":"environmental_sensing: 3 bytes, 13 (ATC1441) or 15 (pvvx) expected"}"#
    )
    // Unknown service data and manufacturers decode to nothing.
    #expect(
      AdvertisementDecoder.decode(
        Advertisement(
          address: Self.address, manufacturerData: [0xFFFF: [1, 2]],
          serviceData: [BluetoothUUID(uuid16: 0x1234): [1]])
      ).isEmpty)
  }

  @Test("the advertisement JSON carries 'decoded' before 'gw'; nothing when empty")
  func advertisementJSON() {
    let advertisement = Advertisement(
      address: Self.address, rssi: -60,
      serviceData: [BluetoothUUID(uuid16: 0xFCD2): bytes("40 01 61")])
    let gateway = GatewayID("pi")
    let text = String(
      decoding: advertisement.jsonBytes(
        gateway: gateway, time: 1, decoded: AdvertisementDecoder.decode(advertisement)),
      as: UTF8.self)
    #expect(
      text
        == #"{"id":"A4:C1:38:1E:29:DF","addr_type":"public","rssi":-60,"#
        + #""servicedata":{"fcd2":"400161"},"decoded":{"battery":97,"formats":["bthome"]},"#
        + #""gw":"pi","ts":1000}"#)
    let plain = Advertisement(address: Self.address, rssi: -60)
    #expect(
      !String(
        decoding: plain.jsonBytes(
          gateway: gateway, time: 1, decoded: AdvertisementDecoder.decode(plain)), as: UTF8.self
      ).contains("decoded"))
  }

  @Test(
    "the decoded member is written straight into the advertisement's bytes exactly as its JSON value serialises, errors included",
    arguments: ["40 01 61 02 CA 09", "40 01 61 9F 01", "", "41 02 CA 09"])
  func decodedWrittenDirectly(data: String) throws {
    let advertisement = Advertisement(
      address: Self.address, rssi: -60, serviceData: [BluetoothUUID(uuid16: 0xFCD2): bytes(data)])
    let decoded = AdvertisementDecoder.decode(advertisement)
    #expect(!decoded.isEmpty)
    let written = try JSONValue.parse(
      advertisement.jsonBytes(gateway: GatewayID("pi"), time: 1, decoded: decoded))
    #expect(written.objectValue?["decoded"] == decoded.json)
  }

  @Test("no input traps: every byte string up to 4 bytes after each format's header")
  func totality() {
    let headers: [(UInt16, [UInt8], Bool)] = [
      (0xFCD2, [0x40], true), (0xFEAA, [0x00], true), (0xFEAA, [0x10, 0x00], true),
      (0xFEAA, [0x20, 0x00], true), (0x181A, [], true), (0x180F, [], true),
      (0x004C, [0x02, 0x15], false), (0x0499, [0x05], false),
    ]
    var decodedCount = 0
    for (key, header, isService) in headers {
      for length in 0...4 {
        for seed in 0..<64 {
          var generator = SplitMix64(seed: UInt64(seed * 31 + length))
          let tail = (0..<length).map { _ in UInt8(truncatingIfNeeded: generator.next()) }
          let data = header + tail
          let advertisement = Advertisement(
            address: Self.address, rssi: -60,
            manufacturerData: isService ? [:] : [key: data],
            serviceData: isService ? [BluetoothUUID(uuid16: key): data] : [:])
          let result = AdvertisementDecoder.decode(advertisement)
          if !result.isEmpty { decodedCount += 1 }
        }
      }
    }
    #expect(decodedCount > 0)
  }
}
