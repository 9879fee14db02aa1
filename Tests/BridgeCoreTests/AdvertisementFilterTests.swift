import BridgeCore
import Testing

@Suite("Advertisement filter")
struct AdvertisementFilterTests {
  let thermo = Fixture.advert("A4:C1:38:1E:29:DF", name: "Thermo 2", rssi: -70, uuids: [0x181A])

  @Test("the empty filter accepts everything, even cached devices without RSSI")
  func emptyAcceptsAll() {
    let filter = AdvertisementFilter()
    #expect(filter.isEmpty)
    #expect(filter.accepts(thermo))
    #expect(filter.accepts(Fixture.advert(name: nil, rssi: nil)))
  }

  @Test("service UUIDs: any of them, in the UUID list or the service data")
  func serviceUUIDs() {
    let filter = AdvertisementFilter(serviceUUIDs: [
      BluetoothUUID(uuid16: 0x180F), BluetoothUUID(uuid16: 0x181A),
    ])
    #expect(filter.accepts(thermo))
    #expect(filter.rejection(of: Fixture.advert(uuids: [0x1800])) == .noMatchingService)
    var viaServiceData = Fixture.advert(uuids: [])
    viaServiceData.serviceData = [BluetoothUUID(uuid16: 0x180F): [0x64]]
    #expect(filter.accepts(viaServiceData))
  }

  @Test(
    "name pattern: glob, whole name, ignoring case",
    arguments: [
      ("Thermo*", "thermo 2", true), ("Thermo*", "My Thermo", false),
      ("*beacon*", "iBEACON x", true),
      ("T?ermo", "Thermo", true), ("T?ermo", "Theermo", false), ("*", "", true),
      ("a*b*c", "aXbYc", true),
      ("a*b*c", "aXbY", false), ("Küche*", "KÜCHE 1", true), ("**x", "x", true),
    ])
  func namePattern(pattern: String, name: String, matches: Bool) throws {
    #expect(try NamePattern(pattern).matches(name) == matches)
  }

  @Test("name pattern refuses devices without a name")
  func nameless() throws {
    let filter = AdvertisementFilter(namePattern: try NamePattern("*"))
    #expect(filter.rejection(of: Fixture.advert(name: nil)) == .nameMismatch)
    #expect(filter.accepts(Fixture.advert(name: "")))
  }

  @Test("allow list admits only its addresses; deny wins over allow")
  func allowDeny() {
    let other = Fixture.address("11:22:33:44:55:66")
    let allow = AdvertisementFilter(allow: [thermo.address])
    #expect(allow.accepts(thermo))
    #expect(allow.rejection(of: Fixture.advert("11:22:33:44:55:66")) == .notAllowed)
    let both = AdvertisementFilter(allow: [thermo.address, other], deny: [thermo.address])
    #expect(both.rejection(of: thermo) == .denied)
    #expect(both.accepts(Fixture.advert("11:22:33:44:55:66")))
    let denyFirst = AdvertisementFilter(allow: [other], deny: [thermo.address], rssiFloor: -50)
    #expect(denyFirst.rejection(of: thermo) == .denied, "deny is reported before other criteria")
  }

  @Test("RSSI floor: at the floor passes, below or unknown does not")
  func rssiFloor() {
    let filter = AdvertisementFilter(rssiFloor: -80)
    #expect(filter.accepts(Fixture.advert(rssi: -80)))
    #expect(filter.rejection(of: Fixture.advert(rssi: -81)) == .weakSignal)
    #expect(filter.rejection(of: Fixture.advert(rssi: nil)) == .weakSignal)
    // HCI's 127 ("not available") is no strength at all: it fails the floor, as in the kernel.
    #expect(filter.rejection(of: Fixture.advert(rssi: 127)) == .weakSignal)
    #expect(filter.rejection(of: Fixture.advert(rssi: 21)) == .weakSignal)
    #expect(filter.accepts(Fixture.advert(rssi: 20)))
  }

  @Test("parses the JSON form and serialises it back")
  func parseRoundTrip() throws {
    let text =
      #"{"uuids":["180F","0000181a-0000-1000-8000-00805f9b34fb"],"name":"Thermo*","#
      + #""allow":["a4:c1:38:1e:29:df"],"deny":["11-22-33-44-55-66"],"min_rssi":-90}"#
    let filter = try AdvertisementFilter(parsing: #require(JSONValue.parse(text).objectValue))
    #expect(filter.serviceUUIDs == [BluetoothUUID(uuid16: 0x180F), BluetoothUUID(uuid16: 0x181A)])
    #expect(filter.namePattern?.rawValue == "Thermo*")
    #expect(filter.allow == [thermo.address])
    #expect(filter.deny == [Fixture.address("11:22:33:44:55:66")])
    #expect(filter.rssiFloor == -90)
    #expect(
      filter.json.serialized()
        == #"{"uuids":["180f","181a"],"name":"Thermo*","allow":["A4:C1:38:1E:29:DF"],"#
        + #""deny":["11:22:33:44:55:66"],"min_rssi":-90}"#)
    #expect(try AdvertisementFilter(parsing: #require(filter.json.objectValue)) == filter)
    #expect(
      filter.discoveryFilter
        == DiscoveryFilter(
          serviceUUIDs: [BluetoothUUID(uuid16: 0x180F), BluetoothUUID(uuid16: 0x181A)],
          rssiFloor: -90))
  }

  @Test(
    "refuses malformed filters with typed errors",
    arguments: [
      (#"{"uuid":["180f"]}"#, AdvertisementFilter.Error.payload(.unknownKey("uuid"))),
      (
        #"{"uuids":"180f"}"#,
        .payload(.wrongType(key: "uuids", expected: "an array of strings", found: "string"))
      ),
      (#"{"uuids":["180f","xyz"]}"#, .invalidUUID(index: 1, .invalidLength(byteCount: 3))),
      (
        #"{"allow":["A4:C1:38:1E:29"]}"#,
        .invalidAddress(key: "allow", index: 0, .invalidLength(byteCount: 14))
      ),
      (
        #"{"deny":[7]}"#,
        .payload(
          .wrongType(key: "deny", expected: "an array of strings", found: "an array with a number"))
      ),
      (#"{"name":""}"#, .invalidNamePattern(.empty)),
      (#"{"name":3}"#, .payload(.wrongType(key: "name", expected: "a string", found: "number"))),
      (#"{"min_rssi":-128}"#, .rssiOutOfRange(-128)),
      (
        #"{"min_rssi":-70.5}"#,
        .payload(.wrongType(key: "min_rssi", expected: "an integer", found: "number"))
      ),
    ])
  func refusesMalformed(text: String, error: AdvertisementFilter.Error) throws {
    let object = try #require(JSONValue.parse(text).objectValue)
    #expect(throws: error) { try AdvertisementFilter(parsing: object) }
    #expect(error.code == "invalid_payload")
    #expect(!error.description.isEmpty)
  }
}
