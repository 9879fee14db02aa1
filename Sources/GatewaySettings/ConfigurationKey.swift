import BridgeCore
import Configuration

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

  /// Reads the key's merged value into its field; `nil` for a key the loader derives itself.
  let read: (@Sendable (ConfigReader, inout GatewayConfiguration) -> Void)?
  /// The key's value in a configuration, as the summary writes it (`nil`: not set).
  let value: @Sendable (GatewayConfiguration) -> String?

  init(
    _ path: String, _ type: ConfigurationLoader.KeyType, optional: Bool = false,
    secret: Bool = false,
    read: (@Sendable (ConfigReader, inout GatewayConfiguration) -> Void)?,
    value: @escaping @Sendable (GatewayConfiguration) -> String?
  ) {
    self.path = path
    self.type = type
    self.isOptional = optional
    self.isSecret = secret
    self.read = read
    self.value = value
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

  /// Every key, in the order of the example file and of the summary, with the field of
  /// ``GatewayConfiguration`` it sets: the loader (``ConfigurationLoader``) and the redacted
  /// summary (``GatewayConfiguration/redactedSummary()``) both come from this table.
  static let all: [ConfigurationKey] = [
    .string("mqtt.host", \.mqtt.host, .hostName),
    .int("mqtt.port", \.mqtt.port, .integer(1...65535)),
    .optionalString("mqtt.client_id", \.mqtt.clientID, .nonEmptyString),
    .int("mqtt.keepalive", \.mqtt.keepalive, .integer(5...65535)),
    .bool("mqtt.clean_session", \.mqtt.cleanSession),
    .choice("mqtt.protocol", \.mqtt.protocolVersion),
    .optionalString("mqtt.username", \.mqtt.username, .nonEmptyString),
    .optionalString("mqtt.password", \.mqtt.password, .string, secret: true),
    .string("mqtt.base_topic", \.mqtt.baseTopic, .topicPrefix),
    .int("mqtt.qos", \.mqtt.qos, .integer(0...2)),
    .bool("mqtt.retain_values", \.mqtt.retainValues),
    // Derived by the loader from the TLS files when not set (ConfigurationLoader.tlsEnabled).
    .derived("mqtt.tls.enabled", .boolean) { String($0.mqtt.tls.enabled) },
    .optionalString("mqtt.tls.ca_file", \.mqtt.tls.caFile, .nonEmptyString),
    .optionalString("mqtt.tls.cert_file", \.mqtt.tls.certFile, .nonEmptyString),
    .optionalString("mqtt.tls.key_file", \.mqtt.tls.keyFile, .nonEmptyString),
    .bool("mqtt.tls.insecure", \.mqtt.tls.insecure),
    .number("mqtt.reconnect.min_delay", \.mqtt.reconnect.minDelay, atMost: 86_400),
    .number("mqtt.reconnect.max_delay", \.mqtt.reconnect.maxDelay, atMost: 86_400),
    .int("mqtt.offline_queue.max_messages", \.mqtt.offlineQueue.maxMessages, .integer(1...Int.max)),
    .choice("mqtt.offline_queue.policy", \.mqtt.offlineQueue.policy),
    .int(
      "mqtt.inbound.max_request_bytes", \.mqtt.inbound.maxRequestBytes, .integer(64...16_777_216)),
    .int("mqtt.inbound.buffer_bytes", \.mqtt.inbound.bufferBytes, .integer(65_536...1_073_741_824)),
    .optionalString("mqtt.response_topic_prefix", \.mqtt.responseTopicPrefix, .topicPrefix),
    .optionalString("gateway.id", \.gateway.id, .topicLevel),
    .number("gateway.health_interval", \.gateway.healthInterval, atMost: 86_400),
    .choice("log.level", \.log.level),
    .choice("bluetooth.radio", \.bluetooth.radio),
    .choice("bluetooth.scan_method", \.bluetooth.scanMethod),
    .number("bluetooth.batch_window", \.bluetooth.batchWindow, zeroAllowed: true, atMost: 0.25),
    .optionalString("bluetooth.adapter", \.bluetooth.adapter, .topicLevel),
    .optionalString("bluetooth.simulation", \.bluetooth.simulation, .nonEmptyString),
    .bool("bluetooth.scan_on_start", \.bluetooth.scanOnStart),
    .optionalInt("bluetooth.min_rssi", \.bluetooth.minRSSI, .integer(-127...20)),
    .list("bluetooth.filter.uuids", \.bluetooth.filterUUIDs, of: .serviceUUID),
    .optionalString("bluetooth.filter.name", \.bluetooth.filterName, .namePattern),
    .list("bluetooth.filter.allow", \.bluetooth.filterAllow, of: .bluetoothAddress),
    .list("bluetooth.filter.deny", \.bluetooth.filterDeny, of: .bluetoothAddress),
    .list("bluetooth.names", \.bluetooth.names, of: .nameRule),
    .number("bluetooth.advertisement_interval", \.bluetooth.advertisementInterval, atMost: 86_400),
    .number(
      "bluetooth.advertisement_min_interval", \.bluetooth.advertisementMinInterval,
      zeroAllowed: true, atMost: 86_400),
    .number("bluetooth.offline_after", \.bluetooth.offlineAfter, atMost: 604_800),
    .number("bluetooth.forget_after", \.bluetooth.forgetAfter, atMost: 604_800),
    .int("bluetooth.max_devices", \.bluetooth.maxDevices, .integer(1...1_000_000)),
    .bool("bluetooth.decode", \.bluetooth.decode),
    .int("bluetooth.presence.enter_rssi", \.bluetooth.presence.enterRSSI, .integer(-127...20)),
    .int("bluetooth.presence.leave_rssi", \.bluetooth.presence.leaveRSSI, .integer(-127...20)),
    .number("bluetooth.presence.half_life", \.bluetooth.presence.halfLife, atMost: 86_400),
    .number("bluetooth.presence.away_after", \.bluetooth.presence.awayAfter, atMost: 86_400),
    .list("bluetooth.connect.addresses", \.bluetooth.connect.addresses, of: .bluetoothAddress),
    .list("bluetooth.connect.names", \.bluetooth.connect.names, of: .namePattern),
    .list("bluetooth.connect.uuids", \.bluetooth.connect.uuids, of: .serviceUUID),
    .list("bluetooth.connect.exclude", \.bluetooth.connect.exclude, of: .bluetoothAddress),
    .int("bluetooth.connect.max_connections", \.bluetooth.connect.maxConnections, .integer(1...32)),
    .number("bluetooth.connect.timeout", \.bluetooth.connect.timeout, atMost: 600),
    .number("bluetooth.connect.retry_min_delay", \.bluetooth.connect.retryMinDelay, atMost: 3600),
    .number(
      "bluetooth.connect.retry_max_delay", \.bluetooth.connect.retryMaxDelay, atMost: 86_400),
    .bool("bluetooth.connect.rssi", \.bluetooth.connect.rssi),
    .number("bluetooth.connect.rssi_interval", \.bluetooth.connect.rssiInterval, atMost: 86_400),
    .number("bluetooth.gatt.timeout", \.bluetooth.gatt.timeout, atMost: 600),
    .choice("bluetooth.gatt.format", \.bluetooth.gatt.format),
    .list("bluetooth.gatt.formats", \.bluetooth.gatt.formats, of: .formatRule),
    .list("bluetooth.gatt.notify", \.bluetooth.gatt.notify, of: .characteristicSelector),
    .choice("bluetooth.gatt.notify_method", \.bluetooth.gatt.notifyMethod),
    .list("bluetooth.gatt.notify_methods", \.bluetooth.gatt.notifyMethods, of: .notifyMethodRule),
    .list("bluetooth.gatt.writable", \.bluetooth.gatt.writable, of: .characteristicSelector),
    .int("bluetooth.gatt.queue_limit", \.bluetooth.gatt.queueLimit, .integer(1...10_000)),
    .string("bluetooth.transfer.service", \.bluetooth.transfer.service, .uuid),
    .string("bluetooth.transfer.characteristic", \.bluetooth.transfer.characteristic, .uuid),
    .int("bluetooth.transfer.max_bytes", \.bluetooth.transfer.maxBytes, .integer(1...67_108_864)),
    .bool("peripheral.enabled", \.peripheral.enabled),
    .string("peripheral.service", \.peripheral.service, .uuid),
    .string("peripheral.characteristic", \.peripheral.characteristic, .uuid),
    .optionalString("peripheral.write_characteristic", \.peripheral.writeCharacteristic, .uuid),
    .string("peripheral.local_name", \.peripheral.localName, .string),
    .optionalString("peripheral.adapter", \.peripheral.adapter, .topicLevel),
    .bool("peripheral.require_encryption", \.peripheral.requireEncryption),
    .list("peripheral.allow", \.peripheral.allow, of: .bluetoothAddress),
    .int("peripheral.max_text_bytes", \.peripheral.maxTextBytes, .integer(0...67_108_864)),
    .number("peripheral.chunk_interval", \.peripheral.chunkInterval, atMost: 1),
    .bool("peripheral.notify_socket", \.peripheral.notifySocket),
    .choice("peripheral.several_centrals", \.peripheral.severalCentrals),
    .bool("homeassistant.enabled", \.homeAssistant.enabled),
    .string("homeassistant.prefix", \.homeAssistant.prefix, .topicPrefix),
    .list("homeassistant.controls", \.homeAssistant.controls, of: .controlRule),
    .bool("web.enabled", \.web.enabled),
    .string("web.listen", \.web.listen, .listenAddress),
    .optionalString("web.token", \.web.token, .nonEmptyString, secret: true),
    .bool("fleet.ownership.enabled", \.fleet.ownership.enabled),
    .number("fleet.ownership.margin", \.fleet.ownership.margin, atMost: 100),
    .number("fleet.ownership.dwell", \.fleet.ownership.dwell, atMost: 86_400),
    .number("fleet.ownership.stale_after", \.fleet.ownership.staleAfter, atMost: 86_400),
    .number("fleet.ownership.claim_delay", \.fleet.ownership.claimDelay, atMost: 60),
    .int("fleet.ownership.give_up_after", \.fleet.ownership.giveUpAfter, .integer(1...1000)),
    .number("fleet.ownership.cooldown", \.fleet.ownership.cooldown, atMost: 86_400),
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

extension ConfigurationKey {
  /// The field of ``GatewayConfiguration`` a key sets.
  typealias Field<Value> = any WritableKeyPath<GatewayConfiguration, Value> & Sendable

  /// A string key.
  static func string(_ path: String, _ field: Field<String>, _ type: ConfigurationLoader.KeyType)
    -> ConfigurationKey
  {
    ConfigurationKey(
      path, type,
      read: { reader, configuration in
        configuration[keyPath: field] = reader.string(
          forKey: ConfigKey(path), default: configuration[keyPath: field])
      },
      value: { $0[keyPath: field] })
  }

  /// A string key that may be unset; a secret one reads as secret and shows as `***`.
  static func optionalString(
    _ path: String, _ field: Field<String?>, _ type: ConfigurationLoader.KeyType,
    secret: Bool = false
  ) -> ConfigurationKey {
    ConfigurationKey(
      path, type, optional: true, secret: secret,
      read: { reader, configuration in
        configuration[keyPath: field] = reader.string(forKey: ConfigKey(path), isSecret: secret)
      },
      value: { configuration in
        configuration[keyPath: field].map { secret ? GatewayConfiguration.redacted : $0 }
      })
  }

  /// An integer key.
  static func int(_ path: String, _ field: Field<Int>, _ type: ConfigurationLoader.KeyType)
    -> ConfigurationKey
  {
    ConfigurationKey(
      path, type,
      read: { reader, configuration in
        configuration[keyPath: field] = reader.int(
          forKey: ConfigKey(path), default: configuration[keyPath: field])
      },
      value: { String($0[keyPath: field]) })
  }

  /// An integer key that may be unset.
  static func optionalInt(
    _ path: String, _ field: Field<Int?>, _ type: ConfigurationLoader.KeyType
  ) -> ConfigurationKey {
    ConfigurationKey(
      path, type, optional: true,
      read: { reader, configuration in
        configuration[keyPath: field] = reader.int(forKey: ConfigKey(path))
      },
      value: { $0[keyPath: field].map { String($0) } })
  }

  /// A positive number (or 0, when `zeroAllowed`) of at most `limit` (seconds, mostly).
  static func number(
    _ path: String, _ field: Field<Double>, zeroAllowed: Bool = false, atMost limit: Double
  ) -> ConfigurationKey {
    ConfigurationKey(
      path, .number(greaterThan: 0, orEqual: zeroAllowed, atMost: limit),
      read: { reader, configuration in
        configuration[keyPath: field] = reader.double(
          forKey: ConfigKey(path), default: configuration[keyPath: field])
      },
      value: { ConfigurationLoader.KeyType.format($0[keyPath: field]) })
  }

  /// A boolean key.
  static func bool(_ path: String, _ field: Field<Bool>) -> ConfigurationKey {
    ConfigurationKey(
      path, .boolean,
      read: { reader, configuration in
        configuration[keyPath: field] = reader.bool(
          forKey: ConfigKey(path), default: configuration[keyPath: field])
      },
      value: { String($0[keyPath: field]) })
  }

  /// A key that takes one of an enumeration's words.
  static func choice<Value: RawRepresentable<String> & CaseIterable & Sendable>(
    _ path: String, _ field: Field<Value>
  ) -> ConfigurationKey {
    ConfigurationKey(
      path, .choice(Value.allCases.map(\.rawValue)),
      read: { reader, configuration in
        configuration[keyPath: field] = reader.string(
          forKey: ConfigKey(path), as: Value.self, default: configuration[keyPath: field])
      },
      value: { $0[keyPath: field].rawValue })
  }

  /// A list key (a YAML sequence or a comma-separated string), shown comma-separated.
  static func list(
    _ path: String, _ field: Field<[String]>, of element: ConfigurationLoader.KeyType.ListItem
  ) -> ConfigurationKey {
    ConfigurationKey(
      path, .list(element),
      read: { reader, configuration in
        configuration[keyPath: field] = reader.stringArray(
          forKey: ConfigKey(path), default: configuration[keyPath: field])
      },
      value: { $0[keyPath: field].joined(separator: ",") })
  }

  /// A key whose field the loader sets itself from several keys.
  static func derived(
    _ path: String, _ type: ConfigurationLoader.KeyType,
    value: @escaping @Sendable (GatewayConfiguration) -> String?
  ) -> ConfigurationKey {
    ConfigurationKey(path, type, read: nil, value: value)
  }
}
