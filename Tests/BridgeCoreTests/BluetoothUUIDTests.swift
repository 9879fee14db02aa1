import BridgeCore
import Testing

@Suite("BluetoothUUID")
struct BluetoothUUIDTests {
  @Test(
    "every written form of a SIG UUID is the same value",
    arguments: [
      "180f", "180F", "0x180f", "0X180F", "0000180f", "0x0000180F",
      "0000180f-0000-1000-8000-00805f9b34fb", "0000180F-0000-1000-8000-00805F9B34FB",
      "0000180f00001000800000805f9b34fb",
    ])
  func sigForms(_ string: String) throws {
    let uuid = try BluetoothUUID(string)
    #expect(uuid == BluetoothUUID(uuid16: 0x180F))
    #expect(uuid.shortForm == "180f")
    #expect(uuid.topicSegment == "180f")
    #expect(uuid.longForm == "0000180f-0000-1000-8000-00805f9b34fb")
    #expect(uuid.uuid16 == 0x180F)
    #expect(uuid.uuid32 == 0x180F)
  }

  @Test("a vendor UUID keeps its full lower-case form in topics")
  func vendorUUID() throws {
    let uuid = try BluetoothUUID("6E400001-B5A3-F393-E0A9-E50E24DCCA9E")
    #expect(uuid.shortForm == "6e400001-b5a3-f393-e0a9-e50e24dcca9e")
    #expect(uuid.longForm == "6e400001-b5a3-f393-e0a9-e50e24dcca9e")
    #expect(uuid.uuid16 == nil)
    #expect(uuid.uuid32 == nil)
    #expect(try BluetoothUUID("6e400001b5a3f393e0a9e50e24dcca9e") == uuid)
    #expect(try BluetoothUUID(uuid.shortForm) == uuid)
  }

  @Test("a 32-bit SIG UUID has no 4-digit form")
  func thirtyTwoBit() throws {
    let uuid = try BluetoothUUID("0x12345678")
    #expect(uuid.uuid32 == 0x1234_5678)
    #expect(uuid.uuid16 == nil)
    #expect(uuid.shortForm == "12345678-0000-1000-8000-00805f9b34fb")
    #expect(try BluetoothUUID(uuid.shortForm) == uuid)
  }

  @Test(
    "16-bit values round-trip through the short form",
    arguments: [0, 1, 0x2A19, 0xFFFF] as [UInt16])
  func shortRoundTrip(_ value: UInt16) throws {
    let uuid = BluetoothUUID(uuid16: value)
    #expect(uuid.shortForm.count == 4)
    #expect(try BluetoothUUID(uuid.shortForm) == uuid)
    #expect(try BluetoothUUID(uuid.longForm) == uuid)
    #expect(try BluetoothUUID(uuid.shortForm).uuid16 == value)
  }

  @Test("round-trips through its bytes")
  func bytesRoundTrip() throws {
    let uuid = try BluetoothUUID("6e400001-b5a3-f393-e0a9-e50e24dcca9e")
    #expect(
      uuid.bytes == [
        0x6E, 0x40, 0x00, 0x01, 0xB5, 0xA3, 0xF3, 0x93, 0xE0, 0xA9, 0xE5, 0x0E, 0x24, 0xDC, 0xCA,
        0x9E,
      ])
    #expect(BluetoothUUID(bytes: uuid.bytes) == uuid)
    #expect(BluetoothUUID(bytes: [1]) == nil)
  }

  @Test("a UUID that differs only outside the 16 bits is not a SIG UUID")
  func nearSIGBase() throws {
    let uuid = try BluetoothUUID("0000180f-0000-1000-8000-00805f9b34fc")
    #expect(uuid != BluetoothUUID(uuid16: 0x180F))
    #expect(uuid.shortForm == "0000180f-0000-1000-8000-00805f9b34fc")
  }

  @Test(
    "refuses malformed UUIDs with the offending position",
    arguments: [
      ("", BluetoothUUID.Error.invalidLength(byteCount: 0)),
      ("18f", .invalidLength(byteCount: 3)),
      ("0x18f", .invalidLength(byteCount: 5)),
      ("0x180f0", .invalidLength(byteCount: 7)),
      ("18g0", .invalidCharacter(offset: 2)),
      ("0x18g0", .invalidCharacter(offset: 4)),
      ("0000180f_0000-1000-8000-00805f9b34fb", .invalidCharacter(offset: 8)),
      ("0000180f-0000-1000-8000-00805f9b34fz", .invalidCharacter(offset: 35)),
      ("{0000180f-0000-1000-8000-00805f9b34fb}", .invalidLength(byteCount: 38)),
    ])
  func refusesMalformed(_ string: String, _ error: BluetoothUUID.Error) {
    #expect(throws: error) { try BluetoothUUID(string) }
  }
}
