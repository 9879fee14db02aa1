import BridgeCore
import Testing

@testable import Gateway

@Suite("The search for what an earlier run left: which device a found topic is about")
struct LeftoverSearchTests {
  let sensor = try! BluetoothAddress("A4:C1:38:1E:29:DF")
  let named = try! BluetoothAddress("11:22:33:44:55:66")

  var search: LeftoverSearch {
    var search = LeftoverSearch()
    search.homeAssistantPrefix = "homeassistant/"
    search.nodes = ["gatt2mqtt_A4C1381E29DF": sensor, "gatt2mqtt_112233445566": named]
    search.values = [
      "gatt2mqtt/A4C1381E29DF/gatt/": sensor, "gatt2mqtt/kitchen/fridge/gatt/": named,
    ]
    return search
  }

  @Test("configs and values of the devices searched for; nothing else")
  func devices() {
    #expect(search.device(of: "homeassistant/sensor/gatt2mqtt_A4C1381E29DF/2a19/config") == sensor)
    #expect(search.device(of: "gatt2mqtt/A4C1381E29DF/gatt/180f/2a19") == sensor)
    #expect(search.device(of: "gatt2mqtt/kitchen/fridge/gatt/180f/2a19") == named)
    for other in [
      "homeassistant/sensor/gatt2mqtt_A4C1381E29DF/2a19/state",  // not a config
      "homeassistant/sensor/gatt2mqtt_AABBCCDDEEFF/2a19/config",  // not searched for
      "homeassistant/gatt2mqtt_A4C1381E29DF/2a19/config",  // a level short
      "gatt2mqtt/A4C1381E29DF/gatt/180f/2a19/notify",  // a user's desired state
      "gatt2mqtt/A4C1381E29DF/availability", "gatt2mqtt/fridge/gatt/180f/2a19",
    ] {
      #expect(search.device(of: other) == nil, "\(other)")
    }
    #expect(LeftoverSearch().device(of: "gatt2mqtt/A4C1381E29DF/gatt/180f/2a19") == nil)
  }
}
