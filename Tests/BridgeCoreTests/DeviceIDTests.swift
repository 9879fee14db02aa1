import BridgeCore
import Testing

@Suite("DeviceID")
struct DeviceIDTests {
  @Test("an address gives the MAC without colons in upper case")
  func fromAddress() throws {
    let id = DeviceID(address: try BluetoothAddress("a4:c1:38:1e:29:df"))
    #expect(id.rawValue == "A4C1381E29DF")
    #expect(id.description == "A4C1381E29DF")
    #expect(id.levels == ["A4C1381E29DF"])
  }

  @Test("friendly names may have hierarchy")
  func friendlyNames() throws {
    let id = try DeviceID(friendlyName: "kitchen/thermometer")
    #expect(id.rawValue == "kitchen/thermometer")
    #expect(id.levels == ["kitchen", "thermometer"])
    #expect(try DeviceID(friendlyName: "Küche Sensor 🌡️").rawValue == "Küche Sensor 🌡️")
  }

  @Test(
    "refuses friendly names that would break topics",
    arguments: [
      ("", TopicError.empty), ("a//b", .emptyLevel(index: 1)), ("/a", .emptyLevel(index: 0)),
      ("a/", .emptyLevel(index: 1)), ("a+", .wildcard(offset: 1)), ("#", .wildcard(offset: 0)),
      ("a\u{0}", .forbiddenCharacter("\u{0}", offset: 1)),
      ("tab\t", .forbiddenCharacter("\t", offset: 3)),
      ("bridge", .reservedName("bridge")), ("bridge/x", .reservedName("bridge")),
    ])
  func refusesBadFriendlyNames(_ name: String, _ error: TopicError) {
    #expect(throws: error) { try DeviceID(friendlyName: name) }
  }

  @Test("allows 'bridge' below the first level and as part of a level")
  func bridgeElsewhere() throws {
    #expect(try DeviceID(friendlyName: "x/bridge").rawValue == "x/bridge")
    #expect(try DeviceID(friendlyName: "bridges").rawValue == "bridges")
  }

  @Test("caps friendly names at 1024 bytes")
  func capsLength() throws {
    #expect(try DeviceID(friendlyName: String(repeating: "d", count: 1024)).rawValue.count == 1024)
    #expect(throws: TopicError.tooLong(byteCount: 1025, limit: 1024)) {
      try DeviceID(friendlyName: String(repeating: "d", count: 1025))
    }
  }

  @Test("a friendly name spelled like an address equals the address id")
  func addressSpelling() throws {
    let address = try BluetoothAddress("A4:C1:38:1E:29:DF")
    #expect(try DeviceID(friendlyName: "A4C1381E29DF") == DeviceID(address: address))
  }
}
