import BridgeCore
import Testing

@Suite("Topics")
struct TopicsTests {
  let topics: Topics
  let device: DeviceID
  let battery: BluetoothUUID
  let level: BluetoothUUID
  let nus: BluetoothUUID
  let nusTX: BluetoothUUID

  init() throws {
    topics = try Topics(base: "gatt2mqtt", gateway: GatewayID("pi"))
    device = DeviceID(address: try BluetoothAddress("A4:C1:38:1E:29:DF"))
    battery = BluetoothUUID(uuid16: 0x180F)
    level = BluetoothUUID(uuid16: 0x2A19)
    nus = try BluetoothUUID("6E400001-B5A3-F393-E0A9-E50E24DCCA9E")
    nusTX = try BluetoothUUID("6E400003-B5A3-F393-E0A9-E50E24DCCA9E")
  }

  @Test("builds every bridge-plane topic")
  func bridgePlane() throws {
    #expect(topics.bridgeState.rawValue == "gatt2mqtt/bridge/pi/state")
    #expect(topics.bridgeInfo.rawValue == "gatt2mqtt/bridge/pi/info")
    #expect(topics.bridgeAdapters.rawValue == "gatt2mqtt/bridge/pi/adapters")
    #expect(topics.bridgeDevices.rawValue == "gatt2mqtt/bridge/pi/devices")
    #expect(topics.bridgeEvent.rawValue == "gatt2mqtt/bridge/pi/event")
    #expect(topics.bridgeHealth.rawValue == "gatt2mqtt/bridge/pi/health")
    #expect(
      try topics.bridgeRequest(verb: "scan").rawValue == "gatt2mqtt/bridge/pi/request/scan")
    #expect(
      try topics.bridgeRequest(verb: "device/connect").rawValue
        == "gatt2mqtt/bridge/pi/request/device/connect")
    #expect(
      try topics.bridgeResponse(verb: "health_check").rawValue
        == "gatt2mqtt/bridge/pi/response/health_check")
    #expect(
      try topics.bridgeResponse(verb: "device/remove").rawValue
        == "gatt2mqtt/bridge/pi/response/device/remove")
    #expect(topics.bridgeRequestFilter.rawValue == "gatt2mqtt/bridge/pi/request/#")
  }

  @Test("builds every peripheral-plane topic")
  func peripheralPlane() {
    #expect(topics.peripheralTextSet.rawValue == "gatt2mqtt/bridge/pi/peripheral/text/set")
    #expect(topics.peripheralState.rawValue == "gatt2mqtt/bridge/pi/peripheral/state")
    #expect(topics.peripheralEvent.rawValue == "gatt2mqtt/bridge/pi/peripheral/event")
  }

  @Test("builds every device-plane topic")
  func devicePlane() {
    #expect(topics.advertisement(device).rawValue == "gatt2mqtt/A4C1381E29DF/advertisement")
    #expect(topics.presence(device).rawValue == "gatt2mqtt/A4C1381E29DF/presence")
    #expect(topics.availability(device).rawValue == "gatt2mqtt/A4C1381E29DF/availability")
    #expect(topics.connection(device).rawValue == "gatt2mqtt/A4C1381E29DF/connection")
    #expect(topics.connectionSet(device).rawValue == "gatt2mqtt/A4C1381E29DF/connection/set")
    #expect(topics.gatt(device).rawValue == "gatt2mqtt/A4C1381E29DF/gatt")
    #expect(topics.transfer(device).rawValue == "gatt2mqtt/A4C1381E29DF/transfer")
    #expect(
      topics.value(device, service: battery, characteristic: level).rawValue
        == "gatt2mqtt/A4C1381E29DF/gatt/180f/2a19")
    #expect(
      topics.characteristic(.get, device, service: battery, characteristic: level).rawValue
        == "gatt2mqtt/A4C1381E29DF/gatt/180f/2a19/get")
    #expect(
      topics.characteristic(.set, device, service: battery, characteristic: level).rawValue
        == "gatt2mqtt/A4C1381E29DF/gatt/180f/2a19/set")
    #expect(
      topics.characteristic(.notify, device, service: battery, characteristic: level).rawValue
        == "gatt2mqtt/A4C1381E29DF/gatt/180f/2a19/notify")
    #expect(
      topics.characteristic(.result, device, service: battery, characteristic: level).rawValue
        == "gatt2mqtt/A4C1381E29DF/gatt/180f/2a19/result")
  }

  @Test("uses the full lower-case form for vendor UUIDs")
  func vendorUUIDs() {
    #expect(
      topics.value(device, service: nus, characteristic: nusTX).rawValue
        == "gatt2mqtt/A4C1381E29DF/gatt/6e400001-b5a3-f393-e0a9-e50e24dcca9e/"
        + "6e400003-b5a3-f393-e0a9-e50e24dcca9e")
  }

  @Test("characteristic paths give the same topics")
  func characteristicPaths() {
    let path = CharacteristicPath(device: device, service: battery, characteristic: level)
    #expect(topics.value(path) == topics.value(device, service: battery, characteristic: level))
    #expect(topics.result(path).rawValue == "gatt2mqtt/A4C1381E29DF/gatt/180f/2a19/result")
    #expect(path.description == "A4C1381E29DF/gatt/180f/2a19")
  }

  @Test("hierarchical bases and friendly names nest")
  func hierarchy() throws {
    let nested = try Topics(base: "home/ble", gateway: GatewayID("attic-pi"))
    let friendly = try DeviceID(friendlyName: "kitchen/thermometer")
    #expect(nested.bridgeState.rawValue == "home/ble/bridge/attic-pi/state")
    #expect(nested.availability(friendly).rawValue == "home/ble/kitchen/thermometer/availability")
    #expect(
      nested.characteristic(.set, friendly, service: battery, characteristic: level).rawValue
        == "home/ble/kitchen/thermometer/gatt/180f/2a19/set")
  }

  @Test("defaults the base to gatt2mqtt")
  func defaultBase() throws {
    #expect(
      try Topics(gateway: GatewayID("pi")).bridgeState.rawValue == "gatt2mqtt/bridge/pi/state")
  }

  @Test(
    "refuses unusable base topics",
    arguments: [
      ("", TopicError.empty), ("a/+", .wildcard(offset: 2)), ("#", .wildcard(offset: 0)),
      ("/gatt2mqtt", .emptyLevel(index: 0)), ("gatt2mqtt/", .emptyLevel(index: 1)),
      ("$SYS", .reservedName("$SYS")), ("a\u{0}", .forbiddenCharacter("\u{0}", offset: 1)),
      (String(repeating: "b", count: 1025), .tooLong(byteCount: 1025, limit: 1024)),
    ])
  func refusesBadBase(_ base: String, _ error: TopicError) {
    #expect(throws: error) { try Topics(base: base, gateway: GatewayID("pi")) }
  }

  @Test("refuses verbs that are not topic levels")
  func refusesBadVerbs() {
    #expect(throws: TopicError.wildcard(offset: 28)) { try topics.bridgeRequest(verb: "+") }
    #expect(throws: TopicError.emptyLevel(index: 4)) { try topics.bridgeRequest(verb: "") }
    #expect(throws: TopicError.emptyLevel(index: 5)) { try topics.bridgeResponse(verb: "a//b") }
  }

  @Test("the request filters cover exactly the inbound topics")
  func requestFilters() throws {
    #expect(
      topics.deviceRequestFilters.map(\.rawValue) == [
        "gatt2mqtt/+/connection/set", "gatt2mqtt/+/gatt/+/+/get", "gatt2mqtt/+/gatt/+/+/set",
        "gatt2mqtt/+/gatt/+/+/notify",
      ])
    let friendly = try DeviceID(friendlyName: "kitchen/thermometer")
    #expect(
      topics.deviceRequestFilters(for: friendly).map(\.rawValue) == [
        "gatt2mqtt/kitchen/thermometer/connection/set",
        "gatt2mqtt/kitchen/thermometer/gatt/+/+/get",
        "gatt2mqtt/kitchen/thermometer/gatt/+/+/set",
        "gatt2mqtt/kitchen/thermometer/gatt/+/+/notify",
      ])
    let inbound = [
      topics.connectionSet(device),
      topics.characteristic(.get, device, service: battery, characteristic: level),
      topics.characteristic(.set, device, service: battery, characteristic: level),
      topics.characteristic(.notify, device, service: battery, characteristic: level),
    ]
    let outbound = [
      topics.connection(device), topics.value(device, service: battery, characteristic: level),
      topics.characteristic(.result, device, service: battery, characteristic: level),
      topics.advertisement(device),
    ]
    for topic in inbound {
      #expect(topics.deviceRequestFilters.contains { $0.matches(topic) }, "\(topic)")
    }
    for topic in outbound {
      #expect(!topics.deviceRequestFilters.contains { $0.matches(topic) }, "\(topic)")
    }
    #expect(topics.bridgeRequestFilter.matches(try topics.bridgeRequest(verb: "device/connect")))
    #expect(!topics.bridgeRequestFilter.matches(try topics.bridgeResponse(verb: "scan")))
  }

  @Test(
    "every request is answered: verbs that make no good topic are answered on response/invalid",
    arguments: [
      ("health_check", "gatt2mqtt/bridge/pi/response/health_check"),
      ("device/connect", "gatt2mqtt/bridge/pi/response/device/connect"),
      ("", "gatt2mqtt/bridge/pi/response/invalid"),
      ("health_check/", "gatt2mqtt/bridge/pi/response/invalid"),
      ("a//b", "gatt2mqtt/bridge/pi/response/invalid"),
      (String(repeating: "v", count: 65), "gatt2mqtt/bridge/pi/response/invalid"),
      (
        String(repeating: "v", count: 64),
        "gatt2mqtt/bridge/pi/response/" + String(repeating: "v", count: 64)
      ),
    ])
  func responseTopicForAnyVerb(verb: String, expected: String) throws {
    let topics = try Topics(gateway: GatewayID("pi"))
    #expect(topics.bridgeResponse(answering: verb).rawValue == expected)
  }
}
