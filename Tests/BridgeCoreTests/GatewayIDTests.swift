import BridgeCore
import Testing

@Suite("GatewayID")
struct GatewayIDTests {
  @Test(
    "reduces names to A-Z a-z 0-9 _ -",
    arguments: [
      ("raspberrypi", "raspberrypi"),
      ("Pi-4_b", "Pi-4_b"),
      ("pi.local", "pi_local"),
      ("küche 2", "k_che_2"),
      ("a/b+c#d", "a_b_c_d"),
      ("a...b", "a_b"),
      ("  gw1\n", "gw1"),
      ("gw_", "gw_"),
      ("📡gw", "_gw"),
    ])
  func reduces(_ raw: String, _ expected: String) {
    #expect(GatewayID(raw).rawValue == expected)
  }

  @Test(
    "falls back to 'gateway' when nothing alphanumeric is left",
    arguments: ["", "  ", "日本", "___", "-", "."])
  func fallsBack(_ raw: String) {
    #expect(GatewayID(raw).rawValue == "gateway")
  }

  @Test("caps the id at 64 characters")
  func capsLength() {
    #expect(GatewayID(String(repeating: "g", count: 300)).rawValue.count == 64)
  }

  @Test("the fleet's own levels are never a gateway: 'request', 'peripheral' and 'names' get _gw")
  func reserved() {
    #expect(GatewayID("request").rawValue == "request_gw")
    #expect(GatewayID("peripheral").rawValue == "peripheral_gw")
    #expect(GatewayID("names").rawValue == "names_gw")
    #expect(!GatewayID.isValid("names"))
    #expect(GatewayID("requests").rawValue == "requests")
    #expect(!GatewayID.isValid("request"))
  }

  @Test("tells whether a configured id is kept unchanged")
  func validity() {
    #expect(GatewayID.isValid("pi-1"))
    #expect(!GatewayID.isValid("pi.local"))
    #expect(!GatewayID.isValid(""))
  }

  @Test("every reduced id is a valid topic segment")
  func reducedIsSegment() throws {
    for raw in ["a/b", "+", "#", "\u{0}", "x y"] {
      let id = GatewayID(raw)
      #expect(try TopicSegment(id.rawValue).rawValue == id.rawValue)
    }
  }
}
