/// Home Assistant MQTT discovery (issue 18): the retained configs under
/// `<prefix>/<component>/<node>/<object>/config` that make gatt2mqtt's devices and the gateway
/// itself appear in Home Assistant without YAML.
///
/// One Home Assistant device per Bluetooth device (node `gatt2mqtt_<ADDRESS>`), linked
/// through `via_device` to the gateway's device (node `gatt2mqtt_bridge_<gw>`). Entities:
///
/// | entity | component | state topic | when |
/// |---|---|---|---|
/// | RSSI (diagnostic) | `sensor` | `<dev>/advertisement` | the device's first published advertisement |
/// | presence | `binary_sensor` (`presence`) | `<dev>/presence` | the same |
/// | each decoded field with a ``HomeAssistantField`` | `sensor`/`binary_sensor` | `<dev>/advertisement` (`decoded.<field>`) | the field is first decoded |
/// | connection state (diagnostic) | `sensor` | `<dev>/connection` | the device first has a link |
/// | battery level, heart rate, temperature, humidity, pressure read or notified | `sensor` | `<dev>/gatt/<svc>/<chr>` | its GATT tree is resolved, in a value format the template can read (`hex`, `json`, `decoded`) |
/// | each writable characteristic a ``HomeAssistantControlRule`` names | `button`/`switch`/`text` | command: `…/<chr>/set` | its GATT tree is resolved |
///
/// Every device entity is available while the gateway's `bridge/<gw>/state` **and** the
/// device's `availability` are online (`availability_mode: all`); values that come only from
/// advertisements also expire (`expire_after`). The gateway's own configs
/// (``gatewayConfigs(peripheral:)``) are published by the gateway before any device's, so that
/// `via_device` resolves. Configs are retained; ``republish()`` sends every device config again
/// (Home Assistant's `online` birth message), ``forget(_:)`` clears a device's (empty retained).
///
/// With several gateways hearing one device, each publishes the same configs (one entity: the
/// same `unique_id`); the entity's gateway availability follows the gateway that published last.
public struct HomeAssistantDiscovery: Sendable {
  /// The settings (`homeassistant.*`).
  public struct Configuration: Sendable, Hashable {
    /// The discovery prefix (`homeassistant.prefix`, default `homeassistant`).
    public var prefix: String
    /// Which writable characteristics get a control entity (`homeassistant.controls`).
    public var controls: [HomeAssistantControlRule]
    /// Seconds after which a value that comes only from advertisements expires.
    public var expireAfter: Int
    /// The gateway's version, for `origin`.
    public var version: String

    /// Makes the settings.
    ///
    /// - Parameters:
    ///   - prefix: The discovery prefix.
    ///   - controls: The control rules.
    ///   - expireAfter: Seconds before an advertisement value expires.
    ///   - version: The gateway's version.
    public init(
      prefix: String = "homeassistant", controls: [HomeAssistantControlRule] = [],
      expireAfter: Int = 300, version: String = "0"
    ) {
      self.prefix = prefix
      self.controls = controls
      self.expireAfter = expireAfter
      self.version = version
    }
  }

  /// What is published for one device.
  struct Device: Sendable {
    var name: String
    /// The advertised name's bytes the configs were made with.
    var nameBytes: [UInt8]?
    /// Field names with an entity.
    var fields: Set<String> = []
    /// Every field name decoded so far (with an entity or not).
    var seen: Set<String> = []
    var linked = false
    /// The config topics made from the device's GATT tree (``resolved(_:tree:format:)``).
    var gattTopics: Set<TopicName> = []
    /// Config topics in publication order, with their payloads.
    var configs: [(topic: TopicName, payload: [UInt8])] = []
  }

  /// The topic map.
  public let topics: Topics
  /// The settings.
  public let configuration: Configuration
  private var devices: [BluetoothAddress: Device] = [:]

  /// Makes discovery for a gateway.
  ///
  /// - Parameters:
  ///   - topics: The gateway's topic map.
  ///   - configuration: The settings.
  public init(topics: Topics, configuration: Configuration = Configuration()) {
    self.topics = topics
    var configuration = configuration
    // Config topics are built unchecked from it: a prefix that is no valid topic prefix
    // (the configuration loader refuses those) falls back to the default.
    let prefix = configuration.prefix
    if prefix.contains("+") || prefix.contains("#") || (try? TopicName("\(prefix)/x")) == nil {
      configuration.prefix = "homeassistant"
    }
    self.configuration = configuration
  }

  /// The topic Home Assistant's birth and last-will messages go to: `<prefix>/status`.
  public var statusTopic: String { "\(configuration.prefix)/status" }

  /// The identifier of the gateway's own Home Assistant device.
  public var gatewayIdentifier: String { "gatt2mqtt_bridge_\(topics.gateway.rawValue)" }

  // MARK: - Devices

  // Read through `inout` so that a dictionary value is read in place: its getter copies it
  // (every advertisement of every device goes through here).

  /// Whether `device`'s configs were made with the advertised name `name`.
  private static func isCurrent(_ device: inout Device, name: [UInt8]?) -> Bool {
    device.nameBytes == name
  }

  /// Whether `device` has not seen one of `keys` yet.
  private static func lacksAny(of keys: [String], _ device: inout Device) -> Bool {
    keys.contains { !device.seen.contains($0) }
  }

  /// A device was heard (its advertisement is published): the RSSI and presence entities the
  /// first time, an entity for each newly decoded field, every config again when its name
  /// changed.
  ///
  /// - Parameters:
  ///   - record: The device.
  ///   - decoded: What its advertisement decoded to.
  /// - Returns: The configs to publish; none when nothing is new (the common case).
  public mutating func observed(_ record: DeviceRecord, decoded: DecodedAdvertisement?)
    -> [BridgeOutput]
  {
    // The common case first, without building a string or copying the device's entry: a
    // known device, the same name bytes, no new field.
    let keys = decoded?.fields.keys ?? []
    if let index = devices.index(forKey: record.address),
      Self.isCurrent(&devices.values[index], name: record.name)
    {
      guard Self.lacksAny(of: keys, &devices.values[index]) else { return [] }
      var device = devices.values[index]
      device.seen.formUnion(keys)
      let new = keys.filter { !device.fields.contains($0) && HomeAssistantField.named($0) != nil }
      guard !new.isEmpty else {
        devices[record.address] = device
        return []
      }
      let name = device.name
      var outputs: [BridgeOutput] = []
      for field in new {
        device.fields.insert(field)
        outputs.append(add(fieldConfig(field, record, name), to: &device))
      }
      devices[record.address] = device
      return outputs
    }
    // New, or renamed: every config again with the new name.
    let name = displayName(record)
    var device = Device(name: name, nameBytes: record.name)
    let old = devices[record.address]
    device.linked = old?.linked ?? false
    device.fields = old?.fields ?? []
    device.seen = old?.seen ?? []
    for field in decoded?.fields.keys ?? [] {
      device.seen.insert(field)
      if HomeAssistantField.named(field) != nil { device.fields.insert(field) }
    }
    var outputs: [BridgeOutput] = []
    outputs.append(add(rssiConfig(record, name), to: &device))
    outputs.append(add(presenceConfig(record, name), to: &device))
    for field in device.fields.sorted() {
      outputs.append(add(fieldConfig(field, record, name), to: &device))
    }
    if device.linked { outputs.append(add(connectionConfig(record, name), to: &device)) }
    // Configs from a resolved GATT tree stay tracked (so that forget clears them) under the
    // old name until the device's tree is resolved again.
    device.gattTopics = old?.gattTopics ?? []
    for config in old?.configs ?? []
    where !device.configs.contains(where: { $0.topic == config.topic }) {
      device.configs.append(config)
    }
    devices[record.address] = device
    return outputs
  }

  /// A device got a link (the connection half handles it): its connection-state entity.
  ///
  /// - Parameter record: The device.
  /// - Returns: The config, once per device; nothing for a device not yet heard.
  public mutating func linked(_ record: DeviceRecord) -> [BridgeOutput] {
    guard var device = devices[record.address], !device.linked else { return [] }
    device.linked = true
    let output = add(connectionConfig(record, device.name), to: &device)
    devices[record.address] = device
    return [output]
  }

  /// A connected device's GATT tree is known: entities for the SIG values it can read or
  /// notify and for the controls configuration names. Each tree after the first adds what is
  /// new and updates what changed, and removes nothing: BlueZ reports a tree while it is still
  /// exporting its objects (a partial one first, at every connection), and removing an entity
  /// would lose what the user set on it in Home Assistant. Entities of characteristics a
  /// firmware update removed stay until the device is forgotten.
  ///
  /// - Parameters:
  ///   - record: The device.
  ///   - tree: Its GATT tree.
  ///   - format: The value format of each characteristic.
  /// - Returns: The configs that are new or changed.
  public mutating func resolved(
    _ record: DeviceRecord, tree: GATTTree, format: (CharacteristicPath) -> ValueFormat
  ) -> [BridgeOutput] {
    guard var device = devices[record.address] else { return [] }
    var made: [(topic: TopicName, payload: [UInt8])] = []
    for service in tree.services {
      for characteristic in service.characteristics {
        let path = CharacteristicPath(
          device: record.id, service: service.uuid, characteristic: characteristic.uuid)
        if characteristic.canRead || characteristic.canNotify,
          let config = valueConfig(path, format(path), record, device.name)
        {
          made.append(config)
        }
        let writable = characteristic.canWriteWithResponse || characteristic.canWriteWithoutResponse
        if writable,
          let control = configuration.controls.first(where: {
            $0.selector.matches(
              device: record.id, address: record.address, service: service.uuid,
              characteristic: characteristic.uuid)
          })?.value
        {
          made.append(controlConfig(control, path, record, device.name))
        }
      }
    }
    var outputs: [BridgeOutput] = []
    for config in made
    where device.configs.first(where: { $0.topic == config.topic })?.payload != config.payload {
      outputs.append(add(config, to: &device))
    }
    device.gattTopics.formUnion(made.map(\.topic))
    devices[record.address] = device
    return outputs
  }

  /// Whether the device has its connection entity (``linked(_:)``).
  func isLinked(_ address: BluetoothAddress) -> Bool { devices[address]?.linked ?? false }

  /// A device was forgotten or removed: every config of it is cleared (an empty retained
  /// payload makes Home Assistant remove the entity, and the device with its last one).
  ///
  /// - Parameter address: The device's address.
  /// - Returns: The clearing publications.
  public mutating func forget(_ address: BluetoothAddress) -> [BridgeOutput] {
    guard let device = devices.removeValue(forKey: address) else { return [] }
    return device.configs.map { .publish(topic: $0.topic, payload: [], retain: true) }
  }

  /// Every device config again, for Home Assistant's `online` birth message.
  ///
  /// - Returns: The retained publications, device by device in address order.
  public func republish() -> [BridgeOutput] {
    devices.keys.sorted().flatMap { address in
      (devices[address]?.configs ?? []).map {
        .publish(topic: $0.topic, payload: $0.payload, retain: true)
      }
    }
  }

  /// One device's configs again (its new owner publishes them).
  ///
  /// - Parameter address: The device.
  /// - Returns: The retained publications.
  public func republish(_ address: BluetoothAddress) -> [BridgeOutput] {
    (devices[address]?.configs ?? []).map {
      .publish(topic: $0.topic, payload: $0.payload, retain: true)
    }
  }

  /// The topics of one device's configs.
  ///
  /// - Parameter address: The device.
  /// - Returns: The topics.
  public func configTopics(of address: BluetoothAddress) -> [TopicName] {
    (devices[address]?.configs ?? []).map(\.topic)
  }

  /// The device a config topic of this discovery is about, `nil` for the gateway's own and any
  /// other topic.
  ///
  /// - Parameter topic: A topic this gateway publishes.
  /// - Returns: The device's address.
  public func deviceAddress(ofConfig topic: TopicName) -> BluetoothAddress? {
    let levels = topic.rawValue.utf8.split(separator: UInt8(ascii: "/"))
    guard levels.count >= 4, topic.rawValue.hasPrefix(configuration.prefix + "/") else {
      return nil
    }
    let node = levels[levels.count - 3]
    let marker = Array("gatt2mqtt_".utf8)
    guard node.count == marker.count + 12, node.starts(with: marker) else { return nil }
    return BluetoothAddress(compact: node.dropFirst(marker.count))
  }

  // MARK: - The gateway

  /// The gateway's own configs, to publish (retained) before any device's: connectivity and
  /// health, and with the peripheral role its state, subscriber count and served text (a
  /// `text` entity whose command topic is `bridge/<gw>/peripheral/text/set`).
  ///
  /// - Parameter peripheral: Whether the gateway runs the peripheral role.
  /// - Returns: (topic, payload) pairs.
  public func gatewayConfigs(peripheral: Bool) -> [(topic: TopicName, payload: [UInt8])] {
    let node = gatewayIdentifier
    let gateway = topics.gateway.rawValue
    let device: JSONValue = [
      "identifiers": [.string(node)], "name": .string("gatt2mqtt \(gateway)"),
      "manufacturer": "gatt2mqtt", "model": "Bluetooth LE to MQTT gateway",
      "sw_version": .string(configuration.version),
    ]
    func config(_ component: String, _ object: String, _ members: JSONObject) -> (
      topic: TopicName, payload: [UInt8]
    ) {
      var body = members
      body["unique_id"] = .string("\(node)_\(object)")
      body["device"] = device
      body["origin"] = origin
      return (configTopic(component, node, object), JSONValue.object(body).serializedBytes())
    }
    let state = topics.bridgeState.rawValue
    let online: JSONValue = [["topic": .string(state), "value_template": "{{ value_json.state }}"]]
    let health = topics.bridgeHealth.rawValue
    var configs = [
      config(
        "binary_sensor", "connectivity",
        [
          "name": "Connectivity", "state_topic": .string(state),
          "value_template": "{{ 'ON' if value_json.state == 'online' else 'OFF' }}",
          "device_class": "connectivity", "entity_category": "diagnostic",
        ]),
      config(
        "binary_sensor", "problem",
        [
          "name": "Problem", "state_topic": .string(health),
          "value_template": "{{ 'OFF' if value_json.healthy else 'ON' }}",
          "json_attributes_topic": .string(health),
          "json_attributes_template": "{{ {'reasons': value_json.reasons} | tojson }}",
          "device_class": "problem", "entity_category": "diagnostic", "availability": online,
        ]),
      config(
        "sensor", "uptime",
        [
          "name": "Uptime", "state_topic": .string(health),
          "value_template": "{{ value_json.uptime | int }}", "device_class": "duration",
          "unit_of_measurement": "s", "state_class": "total_increasing",
          "entity_category": "diagnostic", "availability": online,
        ]),
      config(
        "sensor", "memory",
        [
          "name": "Memory", "state_topic": .string(health),
          "value_template": "{{ value_json.rss_bytes }}", "device_class": "data_size",
          "unit_of_measurement": "B", "state_class": "measurement",
          "entity_category": "diagnostic", "availability": online,
        ]),
      config(
        "sensor", "devices",
        [
          "name": "Devices", "state_topic": .string(health),
          "value_template": "{{ value_json.discovery.devices | default(0) }}",
          "state_class": "measurement", "icon": "mdi:bluetooth",
          "entity_category": "diagnostic", "availability": online,
        ]),
    ]
    if peripheral {
      let peripheralState = topics.peripheralState.rawValue
      configs += [
        config(
          "text", "peripheral_text",
          [
            "name": "Peripheral text", "command_topic": .string(topics.peripheralTextSet.rawValue),
            "state_topic": .string(peripheralState),
            "value_template": "{{ value_json.text_preview | default('') }}", "max": 255,
            "icon": "mdi:message-text", "availability": online,
          ]),
        config(
          "sensor", "peripheral_subscribers",
          [
            "name": "Peripheral subscribers", "state_topic": .string(peripheralState),
            "value_template": "{{ value_json.subscribers | count }}",
            "state_class": "measurement", "icon": "mdi:account-multiple", "availability": online,
          ]),
        config(
          "sensor", "peripheral_state",
          [
            "name": "Peripheral", "state_topic": .string(peripheralState),
            "value_template": "{{ value_json.state }}", "icon": "mdi:broadcast",
            "entity_category": "diagnostic", "availability": online,
          ]),
      ]
    }
    return configs
  }

  // MARK: - Config payloads

  private var origin: JSONValue {
    ["name": "gatt2mqtt", "sw_version": .string(configuration.version)]
  }

  private func configTopic(_ component: String, _ node: String, _ object: String) -> TopicName {
    // Every part is [A-Za-z0-9_-] (component names, hex addresses, field names, gateway
    // ids) and the prefix was checked as a topic prefix by the configuration.
    TopicName(unchecked: "\(configuration.prefix)/\(component)/\(node)/\(object)/config")
  }

  private func node(_ record: DeviceRecord) -> String {
    "gatt2mqtt_" + record.address.description.replacing(":", with: "")
  }

  private func displayName(_ record: DeviceRecord) -> String {
    record.name.map { String(decoding: $0, as: UTF8.self) }.flatMap { $0.isEmpty ? nil : $0 }
      ?? record.id.rawValue
  }

  /// A device entity's config: the common members, then `members`.
  private func deviceConfig(
    _ component: String, _ object: String, _ record: DeviceRecord, _ name: String,
    _ members: JSONObject
  ) -> (topic: TopicName, payload: [UInt8]) {
    let node = node(record)
    // No `object_id`: Home Assistant names the entity after the device and the entity
    // (`sensor.thermo_temperature`) and keeps that id once registered under `unique_id`.
    var body: JSONObject = ["unique_id": .string("\(node)_\(object)")]
    for (key, value) in members { body[key] = value }
    body["availability"] = [
      ["topic": .string(topics.bridgeState.rawValue), "value_template": "{{ value_json.state }}"],
      [
        "topic": .string(topics.availability(record.id).rawValue),
        "value_template": "{{ value_json.state }}",
      ],
    ]
    body["availability_mode"] = "all"
    body["device"] = [
      "identifiers": [.string(node)],
      "connections": [["bluetooth", .string(record.address.description)]],
      "name": .string(name), "via_device": .string(gatewayIdentifier),
    ]
    body["origin"] = origin
    return (configTopic(component, node, object), JSONValue.object(body).serializedBytes())
  }

  private func rssiConfig(_ record: DeviceRecord, _ name: String) -> (TopicName, [UInt8]) {
    deviceConfig(
      "sensor", "rssi", record, name,
      [
        "name": "RSSI", "state_topic": .string(topics.advertisement(record.id).rawValue),
        "value_template": "{{ value_json.rssi }}", "device_class": "signal_strength",
        "unit_of_measurement": "dBm", "state_class": "measurement",
        "entity_category": "diagnostic", "expire_after": .integer(Int64(configuration.expireAfter)),
      ])
  }

  private func presenceConfig(_ record: DeviceRecord, _ name: String) -> (TopicName, [UInt8]) {
    deviceConfig(
      "binary_sensor", "presence", record, name,
      [
        "name": "Presence", "state_topic": .string(topics.presence(record.id).rawValue),
        "value_template": "{{ 'ON' if value_json.state == 'present' else 'OFF' }}",
        "device_class": "presence",
      ])
  }

  private func connectionConfig(_ record: DeviceRecord, _ name: String) -> (TopicName, [UInt8]) {
    deviceConfig(
      "sensor", "connection", record, name,
      [
        "name": "Connection", "state_topic": .string(topics.connection(record.id).rawValue),
        "value_template": "{{ value_json.state }}", "icon": "mdi:bluetooth-connect",
        "entity_category": "diagnostic",
      ])
  }

  /// A decoded field's entity: reads `decoded.<field>` from the advertisement; an
  /// advertisement without the field renders empty, which Home Assistant ignores.
  private func fieldConfig(_ field: String, _ record: DeviceRecord, _ name: String) -> (
    TopicName, [UInt8]
  ) {
    let kind = HomeAssistantField.named(field) ?? HomeAssistantField("sensor", nil, nil)
    let lookup = "{% set d = value_json.decoded | default({}) %}"
    var members: JSONObject = [
      "name": .string(Self.title(field)),
      "state_topic": .string(topics.advertisement(record.id).rawValue),
      "value_template": .string(
        kind.component == "binary_sensor"
          ? lookup + "{% if '\(field)' in d %}{{ 'ON' if d['\(field)'] else 'OFF' }}{% endif %}"
          : lookup + "{{ d['\(field)'] if '\(field)' in d else '' }}"),
    ]
    if let deviceClass = kind.deviceClass { members["device_class"] = .string(deviceClass) }
    if let unit = kind.unit { members["unit_of_measurement"] = .string(unit) }
    if let stateClass = kind.stateClass { members["state_class"] = .string(stateClass) }
    if kind.diagnostic { members["entity_category"] = "diagnostic" }
    members["expire_after"] = .integer(Int64(configuration.expireAfter))
    return deviceConfig(kind.component, field, record, name, members)
  }

  /// The entity of a SIG characteristic's value, when the value format is one a template
  /// reads (`hex`, `json`, `decoded`).
  private func valueConfig(
    _ path: CharacteristicPath, _ format: ValueFormat, _ record: DeviceRecord, _ name: String
  ) -> (TopicName, [UInt8])? {
    guard let uuid = path.characteristic.uuid16,
      let value = SIGEntity.all[uuid], let template = value.template(format)
    else { return nil }
    var members: JSONObject = [
      "name": .string(value.name),
      "state_topic": .string(topics.value(path).rawValue),
      "value_template": .string(template),
      "state_class": "measurement",
    ]
    if let deviceClass = value.deviceClass { members["device_class"] = .string(deviceClass) }
    if let unit = value.unit { members["unit_of_measurement"] = .string(unit) }
    if let icon = value.icon { members["icon"] = .string(icon) }
    return deviceConfig(
      "sensor", "\(value.object)_\(path.service.shortForm)", record, name, members)
  }

  private func controlConfig(
    _ control: HomeAssistantControl, _ path: CharacteristicPath, _ record: DeviceRecord,
    _ name: String
  ) -> (TopicName, [UInt8]) {
    let object =
      "control_\(path.service.shortForm)_\(path.characteristic.shortForm)".replacing("-", with: "")
    var members: JSONObject = [
      "name": .string("Write \(path.characteristic.shortForm.prefix(8))"),
      "command_topic": .string(
        topics.characteristic(
          .set, path.device, service: path.service, characteristic: path.characteristic
        )
        .rawValue),
    ]
    switch control {
    case .button:
      members["payload_press"] = #"{"hex":"01"}"#
    case .switch:
      members["payload_on"] = #"{"hex":"01"}"#
      members["payload_off"] = #"{"hex":"00"}"#
      members["optimistic"] = true
    case .text:
      members["command_template"] = "{{ {'utf8': value} | tojson }}"
      members["max"] = 255
    }
    return deviceConfig(control.rawValue, object, record, name, members)
  }

  private mutating func add(
    _ config: (topic: TopicName, payload: [UInt8]), to device: inout Device
  ) -> BridgeOutput {
    if let index = device.configs.firstIndex(where: { $0.topic == config.topic }) {
      device.configs[index] = config
    } else {
      device.configs.append(config)
    }
    return .publish(topic: config.topic, payload: config.payload, retain: true)
  }

  /// `Temperature 2` for `temperature_2`, `Pm25` for `pm25`.
  static func title(_ field: String) -> String {
    let words = field.split(separator: "_").map { $0.prefix(1).uppercased() + $0.dropFirst() }
    return words.joined(separator: " ")
  }
}
