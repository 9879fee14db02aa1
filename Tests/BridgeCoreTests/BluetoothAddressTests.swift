import BridgeCore
import Testing

@Suite("BluetoothAddress")
struct BluetoothAddressTests {
  @Test(
    "parses colon, dash and bare forms of either case",
    arguments: ["a4:c1:38:1e:29:df", "A4:C1:38:1E:29:DF", "A4-C1-38-1E-29-DF", "a4c1381e29df"])
  func parses(_ string: String) throws {
    let address = try BluetoothAddress(string)
    #expect(address.description == "A4:C1:38:1E:29:DF")
    #expect(address.compactForm == "A4C1381E29DF")
    #expect(address.bytes == [0xA4, 0xC1, 0x38, 0x1E, 0x29, 0xDF])
    #expect(address.value == 0xA4C1_381E_29DF)
  }

  @Test("round-trips through its bytes")
  func bytesRoundTrip() throws {
    let address = try #require(BluetoothAddress(bytes: [0, 1, 2, 0xFD, 0xFE, 0xFF]))
    #expect(address.description == "00:01:02:FD:FE:FF")
    #expect(try BluetoothAddress(address.description) == address)
    #expect(BluetoothAddress(bytes: [1, 2, 3]) == nil)
  }

  @Test(
    "refuses malformed addresses with the offending position",
    arguments: [
      ("", BluetoothAddress.Error.invalidLength(byteCount: 0)),
      ("a4:c1:38:1e:29", .invalidLength(byteCount: 14)),
      ("a4:c1:38:1e:29:df:00", .invalidLength(byteCount: 20)),
      ("g4:c1:38:1e:29:df", .invalidCharacter(offset: 0)),
      ("a4:c1-38:1e:29:df", .invalidCharacter(offset: 5)),
      ("a4.c1.38.1e.29.df", .invalidCharacter(offset: 2)),
      ("a4c1381e29dz", .invalidCharacter(offset: 11)),
      ("a4:c1:38:1e:29:d ", .invalidCharacter(offset: 16)),
    ])
  func refusesMalformed(_ string: String, _ error: BluetoothAddress.Error) {
    #expect(throws: error) { try BluetoothAddress(string) }
    #expect(error.code == "invalid_payload")
  }

  @Test("orders numerically")
  func orders() throws {
    #expect(try BluetoothAddress("00:00:00:00:00:02") < BluetoothAddress("00:00:00:00:01:00"))
  }
}
