import BridgeCore

/// One key of the configuration schema: its dotted path, what it accepts, and how each source
/// spells it.
struct ConfigurationKey: Sendable {
  /// The dotted snake_case path, as nested in the YAML file: `mqtt.tls.ca_file`.
  let path: String
  /// What the key accepts.
  let type: ConfigurationLoader.KeyType
  /// Whether the key may be absent (its property is optional): YAML `null` means "not set".
  let isOptional: Bool
  /// Whether the value is a secret: never echoed, shown as `***`.
  let isSecret: Bool

  init(
    _ path: String, _ type: ConfigurationLoader.KeyType, optional: Bool = false,
    secret: Bool = false
  ) {
    self.path = path
    self.type = type
    self.isOptional = optional
    self.isSecret = secret
  }

  /// The prefix of every environment variable of the gateway.
  static let environmentPrefix = "GATT2MQTT_"

  /// `GATT2MQTT_MQTT_TLS_CA_FILE` for `mqtt.tls.ca_file`.
  var environmentName: String {
    Self.environmentPrefix + path.uppercased().replacing(".", with: "_")
  }

  /// `--mqtt.tls.ca-file` for `mqtt.tls.ca_file`: the spelling used in messages.
  var optionName: String { "--" + path.replacing("_", with: "-") }

  /// The spelling-independent form of an option name: `.`, `_` and `-` all become `-`.
  static func normalizedOptionName(_ name: String) -> String {
    name.replacing(".", with: "-").replacing("_", with: "-")
  }

  /// Every key, in the order of the example file and of the summary.
  static let all: [ConfigurationKey] = [
    .init("mqtt.host", .nonEmptyString),
    .init("mqtt.port", .integer(1...65535)),
    .init("mqtt.client_id", .nonEmptyString, optional: true),
    .init("mqtt.keepalive", .integer(5...65535)),
    .init("mqtt.clean_session", .boolean),
    .init(
      "mqtt.protocol", .choice(GatewayConfiguration.MQTT.ProtocolVersion.allCases.map(\.rawValue))),
    .init("mqtt.username", .nonEmptyString, optional: true),
    .init("mqtt.password", .string, optional: true, secret: true),
    .init("mqtt.base_topic", .topicPrefix),
    .init("mqtt.qos", .integer(0...2)),
    .init("mqtt.retain_values", .boolean),
    .init("mqtt.tls.enabled", .boolean),
    .init("mqtt.tls.ca_file", .nonEmptyString, optional: true),
    .init("mqtt.tls.cert_file", .nonEmptyString, optional: true),
    .init("mqtt.tls.key_file", .nonEmptyString, optional: true),
    .init("mqtt.tls.insecure", .boolean),
    .init("mqtt.reconnect.min_delay", .number(greaterThan: 0, atMost: 86_400)),
    .init("mqtt.reconnect.max_delay", .number(greaterThan: 0, atMost: 86_400)),
    .init("mqtt.offline_queue.max_messages", .integer(1...Int.max)),
    .init(
      "mqtt.offline_queue.policy",
      .choice(GatewayConfiguration.MQTT.OfflineQueue.DropPolicy.allCases.map(\.rawValue))),
    .init("mqtt.inbound.max_request_bytes", .integer(64...16_777_216)),
    .init("mqtt.inbound.buffer_bytes", .integer(65_536...1_073_741_824)),
    .init("mqtt.response_topic_prefix", .topicPrefix, optional: true),
    .init("gateway.id", .topicLevel, optional: true),
    .init("gateway.health_interval", .number(greaterThan: 0, atMost: 86_400)),
    .init("log.level", .choice(GatewayConfiguration.Log.Level.allCases.map(\.rawValue))),
    .init(
      "bluetooth.radio",
      .choice(GatewayConfiguration.Bluetooth.Radio.allCases.map(\.rawValue))),
    .init("bluetooth.adapter", .topicLevel, optional: true),
    .init("bluetooth.simulation", .nonEmptyString, optional: true),
    .init("bluetooth.scan_on_start", .boolean),
    .init("bluetooth.min_rssi", .integer(-127...20), optional: true),
    .init("bluetooth.filter.uuids", .list(.serviceUUID)),
    .init("bluetooth.filter.name", .namePattern, optional: true),
    .init("bluetooth.filter.allow", .list(.bluetoothAddress)),
    .init("bluetooth.filter.deny", .list(.bluetoothAddress)),
    .init("bluetooth.advertisement_interval", .number(greaterThan: 0, atMost: 86_400)),
    .init("bluetooth.advertisement_min_interval", .number(greaterThan: 0, atMost: 86_400)),
    .init("bluetooth.offline_after", .number(greaterThan: 0, atMost: 604_800)),
    .init("bluetooth.forget_after", .number(greaterThan: 0, atMost: 604_800)),
    .init("bluetooth.max_devices", .integer(1...1_000_000)),
    .init("bluetooth.presence.enter_rssi", .integer(-127...20)),
    .init("bluetooth.presence.leave_rssi", .integer(-127...20)),
    .init("bluetooth.presence.half_life", .number(greaterThan: 0, atMost: 86_400)),
    .init("bluetooth.presence.away_after", .number(greaterThan: 0, atMost: 86_400)),
    .init("bluetooth.connect.addresses", .list(.bluetoothAddress)),
    .init("bluetooth.connect.names", .list(.namePattern)),
    .init("bluetooth.connect.uuids", .list(.serviceUUID)),
    .init("bluetooth.connect.max_connections", .integer(1...32)),
    .init("bluetooth.connect.timeout", .number(greaterThan: 0, atMost: 600)),
    .init("bluetooth.connect.retry_min_delay", .number(greaterThan: 0, atMost: 3600)),
    .init("bluetooth.connect.retry_max_delay", .number(greaterThan: 0, atMost: 86_400)),
    .init("bluetooth.gatt.timeout", .number(greaterThan: 0, atMost: 600)),
    .init("bluetooth.gatt.format", .choice(ValueFormat.allCases.map(\.rawValue))),
    .init("bluetooth.gatt.formats", .list(.formatRule)),
    .init("bluetooth.gatt.notify", .list(.characteristicSelector)),
    .init("bluetooth.gatt.writable", .list(.characteristicSelector)),
    .init("bluetooth.gatt.queue_limit", .integer(1...10_000)),
    .init("bluetooth.transfer.service", .uuid),
    .init("bluetooth.transfer.characteristic", .uuid),
    .init("bluetooth.transfer.max_bytes", .integer(1...67_108_864)),
    .init("peripheral.enabled", .boolean),
    .init("peripheral.service", .uuid),
    .init("peripheral.characteristic", .uuid),
    .init("peripheral.write_characteristic", .uuid, optional: true),
    .init("peripheral.local_name", .string),
    .init("peripheral.adapter", .topicLevel, optional: true),
    .init("peripheral.require_encryption", .boolean),
    .init("peripheral.allow", .list(.bluetoothAddress)),
    .init("peripheral.max_text_bytes", .integer(0...67_108_864)),
    .init("peripheral.chunk_interval", .number(greaterThan: 0, atMost: 1)),
  ]

  /// The keys by dotted path.
  static let byPath: [String: ConfigurationKey] = Dictionary(
    uniqueKeysWithValues: all.map { ($0.path, $0) })

  /// The keys by environment variable name.
  static let byEnvironmentName: [String: ConfigurationKey] = Dictionary(
    uniqueKeysWithValues: all.map { ($0.environmentName, $0) })

  /// The keys by normalized option name (`mqtt-tls-ca-file`).
  static let byNormalizedOptionName: [String: ConfigurationKey] = Dictionary(
    uniqueKeysWithValues: all.map { (normalizedOptionName($0.path), $0) })

  /// The paths of the mappings that hold keys: `mqtt`, `mqtt.tls`, `gateway`, …
  static let sections: Set<String> = Set(
    all.flatMap { key in
      let components = key.path.split(separator: ".")
      return (1..<components.count).map { components[..<$0].joined(separator: ".") }
    })
}
