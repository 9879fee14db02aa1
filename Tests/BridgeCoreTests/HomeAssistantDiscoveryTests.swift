import BridgeCore
import Testing

/// Home Assistant discovery payloads for a representative device set, as literal JSON: the
/// keys Home Assistant 2024.3 reads (docs/HOME-ASSISTANT-NOTES.md), the availability list,
/// `expire_after`, units and the device block.
@Suite("Home Assistant discovery")
struct HomeAssistantDiscoveryTests {
  private static let address = BluetoothAddress(bytes: [0xA4, 0xC1, 0x38, 0x1E, 0x29, 0xDF])!
  private static let topics = try! Topics(base: "gatt2mqtt", gateway: GatewayID("pi"))

  private func discovery(_ controls: [String] = []) -> HomeAssistantDiscovery {
    HomeAssistantDiscovery(
      topics: Self.topics,
      configuration: .init(
        prefix: "homeassistant",
        controls: controls.map { try! HomeAssistantControlRule(parsing: $0) }, expireAfter: 90,
        version: "1.2.3"))
  }

  private func record(name: String? = "Thermo") -> DeviceRecord {
    DeviceRecord(
      id: DeviceID(address: Self.address), address: Self.address, addressType: .public,
      name: name.map { Array($0.utf8) }, rssi: -60, firstSeen: 0, lastSeen: 0)
  }

  private func decoded(_ hex: [UInt8]) -> DecodedAdvertisement {
    AdvertisementDecoder.decode(
      Advertisement(
        address: Self.address, rssi: -60, serviceData: [BluetoothUUID(uuid16: 0xFCD2): hex]))
  }

  /// The publications as (topic, payload text, retain).
  private func texts(_ outputs: [BridgeOutput]) -> [(String, String, Bool)] {
    outputs.compactMap {
      guard case .publish(let topic, let payload, let retain) = $0 else { return nil }
      return (topic.rawValue, String(decoding: payload, as: UTF8.self), retain)
    }
  }

  private static let availability =
    #""availability":[{"topic":"gatt2mqtt/bridge/pi/state","value_template":"{{ value_json.state }}"},"#
    + #"{"topic":"gatt2mqtt/A4C1381E29DF/availability","value_template":"{{ value_json.state }}"}],"#
    + #""availability_mode":"all","#
  private static let device =
    #""device":{"identifiers":["gatt2mqtt_A4C1381E29DF"],"connections":[["bluetooth","A4:C1:38:1E:29:DF"]],"#
    + #""name":"Thermo","via_device":"gatt2mqtt_bridge_pi"},"origin":{"name":"gatt2mqtt","sw_version":"1.2.3"}}"#

  @Test("a new device: RSSI, presence and one entity per decoded field with a known class")
  func newDevice() {
    var discovery = discovery()
    // packet id (no entity), battery, temperature, humidity, door.
    let outputs = texts(
      discovery.observed(
        record(),
        decoded: decoded([
          0x40, 0x00, 0x01, 0x01, 0x61, 0x02, 0xCA, 0x09, 0x03, 0xBF, 0x13, 0x1A, 0x01,
        ])))
    #expect(
      outputs.map(\.0) == [
        "homeassistant/sensor/gatt2mqtt_A4C1381E29DF/rssi/config",
        "homeassistant/binary_sensor/gatt2mqtt_A4C1381E29DF/presence/config",
        "homeassistant/sensor/gatt2mqtt_A4C1381E29DF/battery/config",
        "homeassistant/binary_sensor/gatt2mqtt_A4C1381E29DF/door/config",
        "homeassistant/sensor/gatt2mqtt_A4C1381E29DF/humidity/config",
        "homeassistant/sensor/gatt2mqtt_A4C1381E29DF/temperature/config",
      ])
    #expect(outputs.allSatisfy { $0.2 })
    #expect(
      outputs[0].1
        == #"{"unique_id":"gatt2mqtt_A4C1381E29DF_rssi","#
        + #""name":"RSSI","state_topic":"gatt2mqtt/A4C1381E29DF/advertisement","#
        + #""value_template":"{{ value_json.rssi }}","device_class":"signal_strength","#
        + #""unit_of_measurement":"dBm","state_class":"measurement","entity_category":"diagnostic","#
        + #""expire_after":90,"# + Self.availability + Self.device)
    #expect(
      outputs[1].1
        == #"{"unique_id":"gatt2mqtt_A4C1381E29DF_presence","#
        + #""name":"Presence","state_topic":"gatt2mqtt/A4C1381E29DF/presence","#
        + #""value_template":"{{ 'ON' if value_json.state == 'present' else 'OFF' }}","#
        + #""device_class":"presence","# + Self.availability + Self.device)
    #expect(
      outputs[5].1
        == #"{"unique_id":"gatt2mqtt_A4C1381E29DF_temperature","#
        + #""name":"Temperature","state_topic":"gatt2mqtt/A4C1381E29DF/advertisement","#
        + #""value_template":"{% set d = value_json.decoded | default({}) %}{{ d['temperature'] if 'temperature' in d else '' }}","#
        + #""device_class":"temperature","unit_of_measurement":"°C","state_class":"measurement","#
        + #""expire_after":90,"# + Self.availability + Self.device)
    #expect(
      outputs[3].1
        == #"{"unique_id":"gatt2mqtt_A4C1381E29DF_door","#
        + #""name":"Door","state_topic":"gatt2mqtt/A4C1381E29DF/advertisement","#
        + #""value_template":"{% set d = value_json.decoded | default({}) %}{% if 'door' in d %}{{ 'ON' if d['door'] else 'OFF' }}{% endif %}","#
        + #""device_class":"door","expire_after":90,"# + Self.availability + Self.device)
    #expect(outputs[2].1.contains(#""device_class":"battery","unit_of_measurement":"%","#))
  }

  @Test("the advertisement path publishes nothing when nothing is new; a new field adds one config")
  func incremental() {
    var discovery = discovery()
    _ = discovery.observed(record(), decoded: decoded([0x40, 0x01, 0x61]))
    #expect(discovery.observed(record(), decoded: decoded([0x40, 0x01, 0x50])).isEmpty)
    #expect(discovery.observed(record(), decoded: nil).isEmpty)
    #expect(
      texts(discovery.observed(record(), decoded: decoded([0x40, 0x01, 0x50, 0x2E, 0x20]))).map(\.0)
        == ["homeassistant/sensor/gatt2mqtt_A4C1381E29DF/humidity/config"])
  }

  @Test("a renamed device gets every config again under its new name")
  func rename() {
    var discovery = discovery()
    _ = discovery.observed(record(name: nil), decoded: decoded([0x40, 0x01, 0x61]))
    let again = texts(discovery.observed(record(), decoded: nil))
    #expect(again.count == 3)
    #expect(again.allSatisfy { $0.1.contains(#""name":"Thermo","via_device""#) })
  }

  @Test(
    "a rename keeps the GATT configs tracked: the tree resolved again updates them to the new name, forget still clears them"
  )
  func renameKeepsGATTConfigs() {
    var discovery = discovery(["*/fff0/fff1=button"])
    _ = discovery.observed(record(), decoded: nil)
    let tree = GATTTree(services: [
      .init(
        uuid: BluetoothUUID(uuid16: 0xFFF0),
        characteristics: [
          .init(uuid: BluetoothUUID(uuid16: 0xFFF1), flags: ["write"])
        ])
    ])
    #expect(discovery.resolved(record(), tree: tree) { _ in .hex }.count == 1)
    _ = discovery.observed(record(name: "Renamed"), decoded: nil)
    let updated = texts(discovery.resolved(record(name: "Renamed"), tree: tree) { _ in .hex })
    #expect(updated.count == 1)
    #expect(updated.first?.1.contains(#""name":"Renamed""#) == true)
    let cleared = texts(discovery.forget(Self.address)).map(\.0)
    #expect(
      cleared.contains("homeassistant/button/gatt2mqtt_A4C1381E29DF/control_fff0_fff1/config"))
  }

  @Test("an invalid prefix falls back to homeassistant")
  func invalidPrefix() {
    let discovery = HomeAssistantDiscovery(
      topics: Self.topics, configuration: .init(prefix: "bad/+/prefix"))
    #expect(discovery.statusTopic == "homeassistant/status")
  }

  @Test("a device without a name is named by its id")
  func unnamed() {
    var discovery = discovery()
    let outputs = texts(discovery.observed(record(name: nil), decoded: nil))
    #expect(outputs.allSatisfy { $0.1.contains(#""name":"A4C1381E29DF","via_device""#) })
  }

  @Test("a linked device gets its connection entity once; forget clears every config")
  func connectionAndForget() {
    var discovery = discovery()
    #expect(discovery.linked(record()).isEmpty)  // not heard yet
    _ = discovery.observed(record(), decoded: nil)
    let linked = texts(discovery.linked(record()))
    #expect(
      linked.map(\.1) == [
        #"{"unique_id":"gatt2mqtt_A4C1381E29DF_connection","#
          + #""name":"Connection","state_topic":"gatt2mqtt/A4C1381E29DF/connection","#
          + #""value_template":"{{ value_json.state }}","icon":"mdi:bluetooth-connect","#
          + #""entity_category":"diagnostic","# + Self.availability + Self.device
      ])
    #expect(discovery.linked(record()).isEmpty)
    #expect(texts(discovery.republish()).count == 3)
    let cleared = texts(discovery.forget(Self.address))
    #expect(
      cleared.map(\.0).sorted() == [
        "homeassistant/binary_sensor/gatt2mqtt_A4C1381E29DF/presence/config",
        "homeassistant/sensor/gatt2mqtt_A4C1381E29DF/connection/config",
        "homeassistant/sensor/gatt2mqtt_A4C1381E29DF/rssi/config",
      ])
    #expect(cleared.allSatisfy { $0.1.isEmpty && $0.2 })
    #expect(discovery.forget(Self.address).isEmpty)
    #expect(discovery.republish().isEmpty)
  }

  @Test("a resolved GATT tree: SIG value sensors by value format, and the configured controls")
  func resolved() {
    var discovery = discovery(["*/fff0/fff1=button", "*/fff0/fff2=switch", "*/fff0/fff3=text"])
    _ = discovery.observed(record(), decoded: nil)
    let tree = GATTTree(services: [
      .init(
        uuid: BluetoothUUID(uuid16: 0x180F),
        characteristics: [
          .init(uuid: BluetoothUUID(uuid16: 0x2A19), flags: ["read", "notify"])
        ]),
      .init(
        uuid: BluetoothUUID(uuid16: 0x180D),
        characteristics: [
          .init(uuid: BluetoothUUID(uuid16: 0x2A37), flags: ["notify"])
        ]),
      .init(
        uuid: BluetoothUUID(uuid16: 0xFFF0),
        characteristics: [
          .init(uuid: BluetoothUUID(uuid16: 0xFFF1), flags: ["write"]),
          .init(uuid: BluetoothUUID(uuid16: 0xFFF2), flags: ["write-without-response"]),
          .init(uuid: BluetoothUUID(uuid16: 0xFFF3), flags: ["write"]),
          .init(uuid: BluetoothUUID(uuid16: 0xFFF4), flags: ["read"]),
        ]),
    ])
    let outputs = texts(
      discovery.resolved(record(), tree: tree) {
        $0.characteristic == BluetoothUUID(uuid16: 0x2A37) ? .decoded : .hex
      })
    #expect(
      outputs.map(\.0) == [
        "homeassistant/sensor/gatt2mqtt_A4C1381E29DF/battery_180f/config",
        "homeassistant/sensor/gatt2mqtt_A4C1381E29DF/heart_rate_180d/config",
        "homeassistant/button/gatt2mqtt_A4C1381E29DF/control_fff0_fff1/config",
        "homeassistant/switch/gatt2mqtt_A4C1381E29DF/control_fff0_fff2/config",
        "homeassistant/text/gatt2mqtt_A4C1381E29DF/control_fff0_fff3/config",
      ])
    #expect(
      outputs[0].1
        == #"{"unique_id":"gatt2mqtt_A4C1381E29DF_battery_180f","#
        + #""name":"Battery","state_topic":"gatt2mqtt/A4C1381E29DF/gatt/180f/2a19","#
        + #""value_template":"{% set h = value %}{{ ((h[0:2]) | int(0, 16)) }}","#
        + #""state_class":"measurement","device_class":"battery","unit_of_measurement":"%","#
        + Self.availability + Self.device)
    #expect(outputs[1].1.contains(#""value_template":"{{ value_json.heart_rate }}""#))
    #expect(outputs[1].1.contains(#""unit_of_measurement":"bpm","icon":"mdi:heart-pulse""#))
    #expect(
      outputs[2].1
        == #"{"unique_id":"gatt2mqtt_A4C1381E29DF_control_fff0_fff1","#
        + #""name":"Write fff1","command_topic":"gatt2mqtt/A4C1381E29DF/gatt/fff0/fff1/set","#
        + #""payload_press":"{\"hex\":\"01\"}","# + Self.availability + Self.device)
    #expect(
      outputs[3].1.contains(
        #""payload_on":"{\"hex\":\"01\"}","payload_off":"{\"hex\":\"00\"}","optimistic":true"#))
    #expect(
      outputs[4].1.contains(#""command_template":"{{ {'utf8': value} | tojson }}","max":255"#))
    // The same tree again: nothing that did not change.
    #expect(
      discovery.resolved(record(), tree: tree) {
        $0.characteristic == BluetoothUUID(uuid16: 0x2A37) ? .decoded : .hex
      }.isEmpty)
    // A value format changed: that entity's config again, only it.
    #expect(
      texts(discovery.resolved(record(), tree: tree) { _ in .hex }).map(\.0) == [
        "homeassistant/sensor/gatt2mqtt_A4C1381E29DF/heart_rate_180d/config"
      ])
  }

  @Test("value formats a template cannot read get no SIG sensor")
  func unreadableFormats() {
    var discovery = discovery()
    _ = discovery.observed(record(), decoded: nil)
    let tree = GATTTree(services: [
      .init(
        uuid: BluetoothUUID(uuid16: 0x180F),
        characteristics: [
          .init(uuid: BluetoothUUID(uuid16: 0x2A19), flags: ["read"])
        ])
    ])
    #expect(discovery.resolved(record(), tree: tree) { _ in .base64 }.isEmpty)
  }

  @Test("the gateway's device: connectivity and health first, the peripheral's text entity")
  func gateway() {
    let configs = discovery().gatewayConfigs(peripheral: true).map {
      ($0.topic.rawValue, String(decoding: $0.payload, as: UTF8.self))
    }
    #expect(
      configs.map(\.0) == [
        "homeassistant/binary_sensor/gatt2mqtt_bridge_pi/connectivity/config",
        "homeassistant/binary_sensor/gatt2mqtt_bridge_pi/problem/config",
        "homeassistant/sensor/gatt2mqtt_bridge_pi/uptime/config",
        "homeassistant/sensor/gatt2mqtt_bridge_pi/memory/config",
        "homeassistant/sensor/gatt2mqtt_bridge_pi/devices/config",
        "homeassistant/text/gatt2mqtt_bridge_pi/peripheral_text/config",
        "homeassistant/sensor/gatt2mqtt_bridge_pi/peripheral_subscribers/config",
        "homeassistant/sensor/gatt2mqtt_bridge_pi/peripheral_state/config",
      ])
    let gatewayDevice =
      #""device":{"identifiers":["gatt2mqtt_bridge_pi"],"name":"gatt2mqtt pi","manufacturer":"gatt2mqtt","#
      + #""model":"Bluetooth LE to MQTT gateway","sw_version":"1.2.3"},"#
      + #""origin":{"name":"gatt2mqtt","sw_version":"1.2.3"}}"#
    #expect(
      configs[0].1
        == #"{"name":"Connectivity","state_topic":"gatt2mqtt/bridge/pi/state","#
        + #""value_template":"{{ 'ON' if value_json.state == 'online' else 'OFF' }}","#
        + #""device_class":"connectivity","entity_category":"diagnostic","#
        + #""unique_id":"gatt2mqtt_bridge_pi_connectivity","#
        + gatewayDevice)
    #expect(
      configs[5].1
        == #"{"name":"Peripheral text","command_topic":"gatt2mqtt/bridge/pi/peripheral/text/set","#
        + #""state_topic":"gatt2mqtt/bridge/pi/peripheral/state","#
        + #""value_template":"{{ value_json.text_preview | default('') }}","max":255,"#
        + #""icon":"mdi:message-text","availability":[{"topic":"gatt2mqtt/bridge/pi/state","#
        + #""value_template":"{{ value_json.state }}"}],"#
        + #""unique_id":"gatt2mqtt_bridge_pi_peripheral_text","#
        + gatewayDevice)
    #expect(discovery().gatewayConfigs(peripheral: false).count == 5)
    #expect(discovery().statusTopic == "homeassistant/status")
  }

  @Test("field names map to Home Assistant classes; identifiers and counters get none")
  func fields() {
    #expect(HomeAssistantField.named("temperature_2")?.deviceClass == "temperature")
    #expect(HomeAssistantField.named("pm25")?.unit == "µg/m³")
    #expect(HomeAssistantField.named("door")?.component == "binary_sensor")
    #expect(HomeAssistantField.named("packet_id") == nil)
    #expect(HomeAssistantField.named("ibeacon_uuid") == nil)
    #expect(HomeAssistantField.named("temperature_x") == nil)
    #expect(HomeAssistantField.named("presence") == nil, "the RSSI presence entity's name")
    #expect(HomeAssistantField.named("presence_detected")?.deviceClass == "presence")
  }
}
