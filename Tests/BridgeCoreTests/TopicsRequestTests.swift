import BridgeCore
import Testing

@Suite("Topics.parseRequest")
struct TopicsRequestTests {
  let topics: Topics
  let device: DeviceID
  let battery = BluetoothUUID(uuid16: 0x180F)
  let level = BluetoothUUID(uuid16: 0x2A19)

  init() throws {
    topics = try Topics(base: "gatt2mqtt", gateway: GatewayID("pi"))
    device = try DeviceID(friendlyName: "A4C1381E29DF")
  }

  private func parse(_ string: String) throws -> Topics.Request? {
    topics.parseRequest(try TopicName(string))
  }

  private var path: CharacteristicPath {
    CharacteristicPath(device: device, service: battery, characteristic: level)
  }

  @Test("recognises bridge requests, including verbs with levels")
  func bridgeRequests() throws {
    #expect(try parse("gatt2mqtt/bridge/pi/request/scan") == .bridge(verb: "scan"))
    #expect(
      try parse("gatt2mqtt/bridge/pi/request/device/connect") == .bridge(verb: "device/connect"))
    #expect(try parse("gatt2mqtt/bridge/pi/peripheral/text/set") == .peripheralText)
  }

  @Test("recognises fleet-wide requests and the fleet's text; not other gateways' topics")
  func fleetRequests() throws {
    #expect(try parse("gatt2mqtt/bridge/request/health_check") == .fleet(verb: "health_check"))
    #expect(
      try parse("gatt2mqtt/bridge/request/device/connect") == .fleet(verb: "device/connect"))
    #expect(try parse("gatt2mqtt/bridge/peripheral/text/set") == .fleetPeripheralText)
    #expect(try parse("gatt2mqtt/bridge/peripheral/text") == nil)
    #expect(try parse("gatt2mqtt/bridge/other/request/health_check") == nil)
    #expect(try parse("gatt2mqtt/bridge/other/peripheral/text/set") == nil)
    #expect(try parse("elsewhere/bridge/request/health_check") == nil)
    #expect(topics.fleetRequestFilter.rawValue == "gatt2mqtt/bridge/request/#")
    #expect(topics.fleetPeripheralTextSet.rawValue == "gatt2mqtt/bridge/peripheral/text/set")
  }

  @Test("recognises device-plane requests")
  func deviceRequests() throws {
    #expect(try parse("gatt2mqtt/A4C1381E29DF/connection/set") == .connectionSet(device))
    #expect(try parse("gatt2mqtt/A4C1381E29DF/gatt/180f/2a19/get") == .get(path))
    #expect(try parse("gatt2mqtt/A4C1381E29DF/gatt/180f/2a19/set") == .set(path))
    #expect(try parse("gatt2mqtt/A4C1381E29DF/gatt/180f/2a19/notify") == .notify(path))
  }

  @Test("a topic shaped like a device request that does not parse says which level is wrong")
  func deviceRequestProblems() throws {
    func problem(_ string: String) throws -> String? {
      topics.deviceRequestProblem(try TopicName(string))
    }
    #expect(
      try problem("gatt2mqtt/A4C1381E29DF/gatt/zz/2a19/set") == "'zz' is not a Bluetooth UUID")
    #expect(
      try problem("gatt2mqtt/A4C1381E29DF/gatt/180f/\(String(repeating: "q", count: 100))/get")
        == "'\(String(repeating: "q", count: 64))…' is not a Bluetooth UUID")
    let long = String(repeating: "d", count: 1100)  // longer than a device id may be (1024)
    let quoted = "'\(String(repeating: "d", count: 64))…' is not a device id"
    #expect(try problem("gatt2mqtt/\(long)/connection/set") == quoted)
    #expect(try problem("gatt2mqtt/\(long)/gatt/180f/2a19/notify") == quoted)
    // Requests that parse, and topics that are not device requests, have no problem.
    #expect(try problem("gatt2mqtt/A4C1381E29DF/gatt/180f/2a19/set") == nil)
    #expect(try problem("gatt2mqtt/A4C1381E29DF/gatt/180f/2a19/result") == nil)
    #expect(try problem("gatt2mqtt/bridge/pi/request/scan") == nil)
    #expect(try problem("other/A4C1381E29DF/gatt/zz/2a19/set") == nil)
  }

  @Test("a device named by its address in any spelling is that device, by its canonical id")
  func addressSpellings() throws {
    for spelling in ["a4c1381e29df", "A4:C1:38:1E:29:DF", "a4-c1-38-1e-29-df"] {
      #expect(try parse("gatt2mqtt/\(spelling)/gatt/180f/2a19/get") == .get(path), "\(spelling)")
      #expect(try parse("gatt2mqtt/\(spelling)/connection/set") == .connectionSet(device))
    }
    // Not an address: a friendly name, kept as written.
    #expect(
      try parse("gatt2mqtt/kitchen/gatt/180f/2a19/get")
        == .get(
          CharacteristicPath(
            device: try DeviceID(friendlyName: "kitchen"), service: battery,
            characteristic: level)))
  }

  @Test("accepts UUID levels in any form and case")
  func uuidForms() throws {
    #expect(
      try parse("gatt2mqtt/A4C1381E29DF/gatt/180F/00002a19-0000-1000-8000-00805f9b34fb/get")
        == .get(path))
    let nus = try BluetoothUUID("6e400001-b5a3-f393-e0a9-e50e24dcca9e")
    let tx = try BluetoothUUID("6e400002-b5a3-f393-e0a9-e50e24dcca9e")
    #expect(
      try parse(
        "gatt2mqtt/A4C1381E29DF/gatt/6E400001-B5A3-F393-E0A9-E50E24DCCA9E/"
          + "6e400002-b5a3-f393-e0a9-e50e24dcca9e/set")
        == .set(CharacteristicPath(device: device, service: nus, characteristic: tx)))
  }

  @Test("recognises hierarchical friendly names and bases")
  func hierarchy() throws {
    let nested = try Topics(base: "home/ble", gateway: GatewayID("pi"))
    let friendly = try DeviceID(friendlyName: "kitchen/thermometer")
    #expect(
      nested.parseRequest(try TopicName("home/ble/kitchen/thermometer/connection/set"))
        == .connectionSet(friendly))
    #expect(
      nested.parseRequest(try TopicName("home/ble/kitchen/thermometer/gatt/180f/2a19/notify"))
        == .notify(CharacteristicPath(device: friendly, service: battery, characteristic: level)))
    #expect(
      nested.parseRequest(try TopicName("home/ble/bridge/pi/request/scan")) == .bridge(verb: "scan")
    )
    #expect(nested.parseRequest(try TopicName("gatt2mqtt/bridge/pi/request/scan")) == nil)
    #expect(nested.parseRequest(try TopicName("home/bridge/pi/request/scan")) == nil)
  }

  @Test("round-trips every inbound topic it builds")
  func roundTrips() throws {
    #expect(topics.parseRequest(topics.connectionSet(device)) == .connectionSet(device))
    #expect(
      topics.parseRequest(
        topics.characteristic(.get, device, service: battery, characteristic: level))
        == .get(path))
    #expect(
      topics.parseRequest(
        topics.characteristic(.set, device, service: battery, characteristic: level))
        == .set(path))
    #expect(
      topics.parseRequest(
        topics.characteristic(.notify, device, service: battery, characteristic: level))
        == .notify(path))
    #expect(topics.parseRequest(topics.peripheralTextSet) == .peripheralText)
    #expect(
      topics.parseRequest(try topics.bridgeRequest(verb: "peripheral/start"))
        == .bridge(verb: "peripheral/start"))
  }

  @Test(
    "ignores outbound, foreign and garbage topics",
    arguments: [
      "gatt2mqtt", "gatt2mqtt/bridge", "gatt2mqtt/bridge/pi", "gatt2mqtt/bridge/pi/state",
      "gatt2mqtt/bridge/pi/request", "gatt2mqtt/bridge/pi/response/scan",
      "gatt2mqtt/bridge/other/request/scan", "gatt2mqtt/bridge/other/peripheral/text/set",
      "gatt2mqtt/bridge/pi/peripheral/state", "gatt2mqtt/bridge/pi/peripheral/text",
      "gatt2mqtt/bridge/connection/set", "gatt2mqtt/bridge/gatt/180f/2a19/set",
      "gatt2mqtt/A4C1381E29DF/connection", "gatt2mqtt/A4C1381E29DF/availability",
      "gatt2mqtt/connection/set", "gatt2mqtt/A4C1381E29DF/gatt",
      "gatt2mqtt/A4C1381E29DF/gatt/180f/2a19", "gatt2mqtt/A4C1381E29DF/gatt/180f/2a19/result",
      "gatt2mqtt/A4C1381E29DF/gatt/180f/2a19/write", "gatt2mqtt/A4C1381E29DF/gatt/zz/2a19/set",
      "gatt2mqtt/A4C1381E29DF/gatt/180f/battery/set", "gatt2mqtt/A4C1381E29DF/GATT/180f/2a19/set",
      "gatt2mqtt/gatt/180f/2a19/set", "other/A4C1381E29DF/connection/set",
      "Gatt2mqtt/A4C1381E29DF/connection/set", "gatt2mqttx/A4C1381E29DF/connection/set",
      "gatt2mqtt/A4C1381E29DF/Connection/set", "gatt2mqtt/A4C1381E29DF/connection/SET",
      "gatt2mqtt/x/gatt/180f/connection/set/x", "$SYS/broker/uptime",
    ])
  func ignoresOtherTopics(_ string: String) throws {
    #expect(try parse(string) == nil)
  }

  @Test("a friendly name containing 'gatt' levels still parses unambiguously")
  func ambiguousLookingNames() throws {
    let odd = try DeviceID(friendlyName: "x/gatt/180f/2a19")
    #expect(try parse("gatt2mqtt/x/gatt/180f/2a19/connection/set") == .connectionSet(odd))
    #expect(topics.parseRequest(topics.connectionSet(odd)) == .connectionSet(odd))
    #expect(
      topics.parseRequest(topics.characteristic(.set, odd, service: battery, characteristic: level))
        == .set(CharacteristicPath(device: odd, service: battery, characteristic: level)))
  }
}
