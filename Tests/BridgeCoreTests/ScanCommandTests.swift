import BridgeCore
import Testing

@Suite("scan request parsing")
struct ScanCommandTests {
  func parse(_ text: String) throws -> ScanCommand {
    try ScanCommand(parsing: try #require(JSONValue.parse(text).objectValue))
  }

  @Test("start with and without a filter, and stop")
  func valid() throws {
    #expect(try parse(#"{"action":"start"}"#) == ScanCommand(.start(nil)))
    #expect(
      try parse(#"{"action":"start","filter":{"uuids":["181a"]}}"#)
        == ScanCommand(.start(AdvertisementFilter(serviceUUIDs: [BluetoothUUID(uuid16: 0x181A)]))))
    #expect(try parse(#"{"action":"stop","transaction":"x"}"#) == ScanCommand(.stop))
  }

  @Test(
    "refuses malformed commands with typed errors",
    arguments: [
      (#"{}"#, ScanCommand.Error.payload(.missingKey("action"))),
      (
        #"{"action":1}"#, .payload(.wrongType(key: "action", expected: "a string", found: "number"))
      ),
      (
        #"{"action":"pause"}"#,
        .payload(.unsupportedValue(key: "action", allowed: ["start", "stop"]))
      ),
      (#"{"action":"start","verbose":true}"#, .payload(.unknownKey("verbose"))),
      (
        #"{"action":"start","filter":[]}"#,
        .payload(.wrongType(key: "filter", expected: "an object", found: "array"))
      ),
      (#"{"action":"stop","filter":{}}"#, .payload(.unknownKey("filter"))),
      (
        #"{"action":"start","transaction":{}}"#,
        .payload(
          .wrongType(
            key: "transaction", expected: "a string, number, boolean or null", found: "object"))
      ),
      (#"{"action":"start","filter":{"min_rssi":99}}"#, .filter(.rssiOutOfRange(99))),
    ])
  func invalid(text: String, error: ScanCommand.Error) throws {
    #expect(throws: error) { try parse(text) }
    #expect(error.code == "invalid_payload")
  }
}
