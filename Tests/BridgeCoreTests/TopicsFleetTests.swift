import BridgeCore
import Testing

@Suite("Fleet topics: claims, gateways' states and names are read strictly")
struct TopicsFleetTests {
  let topics = try! Topics(base: "home/ble", gateway: GatewayID("pi"))
  let sensor = try! BluetoothAddress("A4:C1:38:1E:29:DF")

  @Test func theThreeKindsAreRead() {
    #expect(topics.parseFleet("home/ble/A4C1381E29DF/owner") == .owner(sensor))
    #expect(topics.parseFleet("home/ble/bridge/hall-2/state") == .state(GatewayID("hall-2")))
    #expect(topics.parseFleet("home/ble/bridge/names/A4C1381E29DF") == .name(sensor))
  }

  @Test(arguments: [
    // Gateway levels that are no gateway id: wildcards, reserved words, odd characters.
    "home/ble/bridge/+/state", "home/ble/bridge/#/state", "home/ble/bridge/request/state",
    "home/ble/bridge/names/state", "home/ble/bridge/pi.local/state", "home/ble/bridge//state",
    // Device levels that are no address id, and other shapes.
    "home/ble/a4c1381e29df/owner", "home/ble/A4:C1:38:1E:29:DF/owner", "home/ble/kitchen/owner",
    "home/ble/A4C1381E29DF/owner/x", "home/ble/bridge/names/not-an-address", "home/ble/owner",
    "home/blex/A4C1381E29DF/owner", "other/A4C1381E29DF/owner", "home/ble", "home/ble/",
  ])
  func anythingElseIsNotAFleetMessage(_ topic: String) {
    #expect(topics.parseFleet(topic) == nil)
  }
}
