import Configuration

/// Builds the gateway's ``GatewayConfiguration`` from command-line options, environment
/// variables, a YAML file and the defaults, in that order of precedence.
///
/// Each source is checked whole against the schema (``knownKeys``) before anything is merged:
/// an unknown key, a value of the wrong type or out of range, or an unknown word for a choice
/// is an error naming the key and the source, never silently skipped. The checked values are
/// then layered with swift-configuration's `ConfigReader` (one `InMemoryProvider` per source,
/// the password marked secret).
///
/// The spellings of `mqtt.tls.ca_file`, for example:
/// - file: `mqtt: { tls: { ca_file: /etc/ssl/ca.pem } }`
/// - environment: `GATT2MQTT_MQTT_TLS_CA_FILE=/etc/ssl/ca.pem`
/// - command line: `--mqtt.tls.ca-file /etc/ssl/ca.pem`, `--mqtt-tls-ca-file=/etc/ssl/ca.pem`
///
/// A list key (``KeyType/list(_:)``, such as `bluetooth.filter.uuids`) takes a YAML sequence
/// or a comma-separated string in the file, and a comma-separated string in the environment
/// and on the command line. A higher source's list replaces a lower one's whole; lists are
/// never merged.
///
/// After merging, the loader checks the keys that depend on each other:
/// - `mqtt.tls.cert_file` and `mqtt.tls.key_file` are set together or not at all;
/// - when `mqtt.tls.enabled` is not set anywhere, TLS is on if `ca_file`, `cert_file` or
///   `key_file` is set or `insecure` is true; when it is set to `false`, those are errors;
/// - `mqtt.reconnect.min_delay` is at most `mqtt.reconnect.max_delay`.
///
/// Files named by `mqtt.tls.*_file` are not opened here; the MQTT client reports them.
public enum ConfigurationLoader {
  /// The environment variable that conventionally names the configuration file.
  ///
  /// The loader does not read it (pass the path as `file`) but does not report it as unknown.
  public static let configFileEnvironmentVariable = "GATT2MQTT_CONFIG"

  /// Every configuration key by dotted path (`mqtt.tls.ca_file`), with what it accepts.
  public static var knownKeys: [String: KeyType] {
    Dictionary(uniqueKeysWithValues: ConfigurationKey.all.map { ($0.path, $0.type) })
  }

  /// Every configuration key's dotted path, in the order of the example file.
  public static var keyPaths: [String] { ConfigurationKey.all.map(\.path) }

  /// Loads the configuration: flags > environment > file > defaults.
  ///
  /// - Parameters:
  ///   - file: The YAML file's path, or `nil` for none. The path appears in errors as given.
  ///   - environment: The process environment; only `GATT2MQTT_*` variables are read.
  ///   - arguments: Configuration options only, without the program name (for example
  ///     `["--mqtt.host", "broker.lan", "--log.level=debug"]`).
  /// - Returns: The merged, checked configuration. Keys that default to `nil` stay `nil`;
  ///   see ``GatewayConfiguration/MQTT/resolvedClientID(gatewayID:)`` and
  ///   ``GatewayConfiguration/Gateway/systemHostname()``.
  /// - Throws: ``ConfigurationError`` for the first problem found, checking the file, then the
  ///   environment, then the command line, then the keys that depend on each other.
  public static func load(
    file: String?, environment: [String: String], arguments: [String]
  ) async throws(ConfigurationError) -> GatewayConfiguration {
    var layers: [ConfigurationLayer] = []
    if let file {
      layers.append(try YAMLConfigurationParser.layer(fromFileAt: file))
    }
    layers.append(try EnvironmentConfigurationParser.layer(from: environment))
    layers.append(try CommandLineConfigurationParser.layer(from: arguments))
    return try configuration(merging: layers.reversed())
  }

  /// Merges checked layers, the first winning, and checks the keys that depend on each other.
  static func configuration(merging layers: [ConfigurationLayer]) throws(ConfigurationError)
    -> GatewayConfiguration
  {
    let defaults = GatewayConfiguration()
    let reader = ConfigReader(
      providers: layers.map(\.provider) + [InMemoryProvider(name: "defaults", values: [:])])
    var result = defaults

    let mqtt = reader.scoped(to: "mqtt")
    let d = defaults.mqtt
    result.mqtt.host = mqtt.string(forKey: "host", default: d.host)
    result.mqtt.port = mqtt.int(forKey: "port", default: d.port)
    result.mqtt.clientID = mqtt.string(forKey: "client_id")
    result.mqtt.keepalive = mqtt.int(forKey: "keepalive", default: d.keepalive)
    result.mqtt.cleanSession = mqtt.bool(forKey: "clean_session", default: d.cleanSession)
    result.mqtt.protocolVersion = mqtt.string(forKey: "protocol", default: d.protocolVersion)
    result.mqtt.username = mqtt.string(forKey: "username")
    result.mqtt.password = mqtt.string(forKey: "password", isSecret: true)
    result.mqtt.baseTopic = mqtt.string(forKey: "base_topic", default: d.baseTopic)
    result.mqtt.qos = mqtt.int(forKey: "qos", default: d.qos)
    result.mqtt.retainValues = mqtt.bool(forKey: "retain_values", default: d.retainValues)

    let tls = mqtt.scoped(to: "tls")
    let explicitlyEnabled = tls.bool(forKey: "enabled")
    result.mqtt.tls.caFile = tls.string(forKey: "ca_file")
    result.mqtt.tls.certFile = tls.string(forKey: "cert_file")
    result.mqtt.tls.keyFile = tls.string(forKey: "key_file")
    result.mqtt.tls.insecure = tls.bool(forKey: "insecure", default: d.tls.insecure)

    let reconnect = mqtt.scoped(to: "reconnect")
    result.mqtt.reconnect.minDelay = reconnect.double(
      forKey: "min_delay", default: d.reconnect.minDelay)
    result.mqtt.reconnect.maxDelay = reconnect.double(
      forKey: "max_delay", default: d.reconnect.maxDelay)

    let queue = mqtt.scoped(to: "offline_queue")
    result.mqtt.offlineQueue.maxMessages = queue.int(
      forKey: "max_messages", default: d.offlineQueue.maxMessages)
    result.mqtt.offlineQueue.policy = queue.string(
      forKey: "policy", default: d.offlineQueue.policy)

    let inbound = mqtt.scoped(to: "inbound")
    result.mqtt.inbound.maxRequestBytes = inbound.int(
      forKey: "max_request_bytes", default: d.inbound.maxRequestBytes)
    result.mqtt.inbound.bufferBytes = inbound.int(
      forKey: "buffer_bytes", default: d.inbound.bufferBytes)
    result.mqtt.responseTopicPrefix = mqtt.string(forKey: "response_topic_prefix")

    let gateway = reader.scoped(to: "gateway")
    result.gateway.id = gateway.string(forKey: "id")
    result.gateway.healthInterval = gateway.double(
      forKey: "health_interval", default: defaults.gateway.healthInterval)

    result.log.level = reader.string(forKey: "log.level", default: defaults.log.level)

    let bluetooth = reader.scoped(to: "bluetooth")
    let b = defaults.bluetooth
    result.bluetooth.radio = bluetooth.string(forKey: "radio", default: b.radio)
    result.bluetooth.adapter = bluetooth.string(forKey: "adapter")
    result.bluetooth.simulation = bluetooth.string(forKey: "simulation")
    result.bluetooth.scanOnStart = bluetooth.bool(forKey: "scan_on_start", default: b.scanOnStart)
    result.bluetooth.minRSSI = bluetooth.int(forKey: "min_rssi")
    let filter = bluetooth.scoped(to: "filter")
    result.bluetooth.filterUUIDs = filter.stringArray(forKey: "uuids", default: b.filterUUIDs)
    result.bluetooth.filterName = filter.string(forKey: "name")
    result.bluetooth.filterAllow = filter.stringArray(forKey: "allow", default: b.filterAllow)
    result.bluetooth.filterDeny = filter.stringArray(forKey: "deny", default: b.filterDeny)
    result.bluetooth.advertisementInterval = bluetooth.double(
      forKey: "advertisement_interval", default: b.advertisementInterval)
    result.bluetooth.advertisementMinInterval = bluetooth.double(
      forKey: "advertisement_min_interval", default: b.advertisementMinInterval)
    result.bluetooth.offlineAfter = bluetooth.double(
      forKey: "offline_after", default: b.offlineAfter)
    result.bluetooth.forgetAfter = bluetooth.double(forKey: "forget_after", default: b.forgetAfter)
    result.bluetooth.maxDevices = bluetooth.int(forKey: "max_devices", default: b.maxDevices)
    let presence = bluetooth.scoped(to: "presence")
    result.bluetooth.presence.enterRSSI = presence.int(
      forKey: "enter_rssi", default: b.presence.enterRSSI)
    result.bluetooth.presence.leaveRSSI = presence.int(
      forKey: "leave_rssi", default: b.presence.leaveRSSI)
    result.bluetooth.presence.halfLife = presence.double(
      forKey: "half_life", default: b.presence.halfLife)
    result.bluetooth.presence.awayAfter = presence.double(
      forKey: "away_after", default: b.presence.awayAfter)
    let connect = bluetooth.scoped(to: "connect")
    result.bluetooth.connect.addresses = connect.stringArray(
      forKey: "addresses", default: b.connect.addresses)
    result.bluetooth.connect.names = connect.stringArray(forKey: "names", default: b.connect.names)
    result.bluetooth.connect.uuids = connect.stringArray(forKey: "uuids", default: b.connect.uuids)
    result.bluetooth.connect.maxConnections = connect.int(
      forKey: "max_connections", default: b.connect.maxConnections)
    result.bluetooth.connect.timeout = connect.double(forKey: "timeout", default: b.connect.timeout)
    result.bluetooth.connect.retryMinDelay = connect.double(
      forKey: "retry_min_delay", default: b.connect.retryMinDelay)
    result.bluetooth.connect.retryMaxDelay = connect.double(
      forKey: "retry_max_delay", default: b.connect.retryMaxDelay)
    let gatt = bluetooth.scoped(to: "gatt")
    result.bluetooth.gatt.timeout = gatt.double(forKey: "timeout", default: b.gatt.timeout)
    result.bluetooth.gatt.format = gatt.string(forKey: "format", default: b.gatt.format)
    result.bluetooth.gatt.formats = gatt.stringArray(forKey: "formats", default: b.gatt.formats)
    result.bluetooth.gatt.notify = gatt.stringArray(forKey: "notify", default: b.gatt.notify)
    result.bluetooth.gatt.writable = gatt.stringArray(forKey: "writable", default: b.gatt.writable)
    result.bluetooth.gatt.queueLimit = gatt.int(forKey: "queue_limit", default: b.gatt.queueLimit)
    let transfer = bluetooth.scoped(to: "transfer")
    result.bluetooth.transfer.service = transfer.string(
      forKey: "service", default: b.transfer.service)
    result.bluetooth.transfer.characteristic = transfer.string(
      forKey: "characteristic", default: b.transfer.characteristic)
    result.bluetooth.transfer.maxBytes = transfer.int(
      forKey: "max_bytes", default: b.transfer.maxBytes)

    let peripheral = reader.scoped(to: "peripheral")
    let p = defaults.peripheral
    result.peripheral.enabled = peripheral.bool(forKey: "enabled", default: p.enabled)
    result.peripheral.service = peripheral.string(forKey: "service", default: p.service)
    result.peripheral.characteristic = peripheral.string(
      forKey: "characteristic", default: p.characteristic)
    result.peripheral.writeCharacteristic = peripheral.string(forKey: "write_characteristic")
    result.peripheral.localName = peripheral.string(forKey: "local_name", default: p.localName)
    result.peripheral.adapter = peripheral.string(forKey: "adapter")
    result.peripheral.requireEncryption = peripheral.bool(
      forKey: "require_encryption", default: p.requireEncryption)
    result.peripheral.allow = peripheral.stringArray(forKey: "allow", default: p.allow)
    result.peripheral.maxTextBytes = peripheral.int(
      forKey: "max_text_bytes", default: p.maxTextBytes)
    result.peripheral.chunkInterval = peripheral.double(
      forKey: "chunk_interval", default: p.chunkInterval)

    let origins = Origins(layers: layers)
    result.mqtt.tls.enabled = try tlsEnabled(
      result.mqtt.tls, explicitly: explicitlyEnabled, origins: origins)
    try checkReconnect(result.mqtt.reconnect, origins: origins)
    try checkBluetooth(result.bluetooth, origins: origins)
    return result
  }

  /// Checks the TLS keys together and returns whether TLS is on.
  private static func tlsEnabled(
    _ tls: GatewayConfiguration.MQTT.TLS, explicitly enabled: Bool?, origins: Origins
  ) throws(ConfigurationError) -> Bool {
    if tls.certFile != nil, tls.keyFile == nil {
      throw origins.error(
        "mqtt.tls.cert_file",
        "a client certificate needs its private key: set mqtt.tls.key_file too")
    }
    if tls.keyFile != nil, tls.certFile == nil {
      throw origins.error(
        "mqtt.tls.key_file",
        "a private key needs its client certificate: set mqtt.tls.cert_file too")
    }
    var material: [String] = []
    if tls.caFile != nil { material.append("mqtt.tls.ca_file") }
    if tls.certFile != nil { material.append("mqtt.tls.cert_file") }
    if tls.keyFile != nil { material.append("mqtt.tls.key_file") }
    if tls.insecure { material.append("mqtt.tls.insecure") }
    guard let enabled else { return !material.isEmpty }
    if !enabled, let first = material.first {
      throw origins.error(
        first,
        "TLS is disabled by mqtt.tls.enabled: false (\(origins.describe("mqtt.tls.enabled"))); "
          + "set mqtt.tls.enabled to true, or remove \(first)")
    }
    return enabled
  }

  private static func checkReconnect(
    _ reconnect: GatewayConfiguration.MQTT.Reconnect, origins: Origins
  ) throws(ConfigurationError) {
    guard reconnect.minDelay > reconnect.maxDelay else { return }
    let min = KeyType.format(reconnect.minDelay)
    let max = KeyType.format(reconnect.maxDelay)
    let maxOrigin = origins.describe("mqtt.reconnect.max_delay")
    throw origins.error(
      origins.isSet("mqtt.reconnect.min_delay")
        ? "mqtt.reconnect.min_delay" : "mqtt.reconnect.max_delay",
      "mqtt.reconnect.min_delay (\(min)) must not exceed mqtt.reconnect.max_delay (\(max), "
        + "\(maxOrigin))")
  }
}

extension ConfigurationLoader {
  /// Checks the Bluetooth keys that depend on each other.
  fileprivate static func checkBluetooth(
    _ bluetooth: GatewayConfiguration.Bluetooth, origins: Origins
  ) throws(ConfigurationError) {
    if bluetooth.presence.leaveRSSI > bluetooth.presence.enterRSSI {
      throw origins.error(
        "bluetooth.presence.leave_rssi",
        "bluetooth.presence.leave_rssi (\(bluetooth.presence.leaveRSSI)) must not exceed "
          + "bluetooth.presence.enter_rssi (\(bluetooth.presence.enterRSSI)): the gap between "
          + "them is the hysteresis")
    }
    if bluetooth.connect.retryMaxDelay < bluetooth.connect.retryMinDelay {
      throw origins.error(
        "bluetooth.connect.retry_max_delay",
        "bluetooth.connect.retry_max_delay (\(KeyType.format(bluetooth.connect.retryMaxDelay))) "
          + "must not be shorter than bluetooth.connect.retry_min_delay "
          + "(\(KeyType.format(bluetooth.connect.retryMinDelay)))")
    }
    if bluetooth.forgetAfter < bluetooth.offlineAfter {
      throw origins.error(
        "bluetooth.forget_after",
        "bluetooth.forget_after (\(KeyType.format(bluetooth.forgetAfter))) must not be shorter "
          + "than bluetooth.offline_after (\(KeyType.format(bluetooth.offlineAfter)))")
    }
  }
}

/// Where each merged value came from, for errors about keys that depend on each other.
private struct Origins {
  let layers: [ConfigurationLayer]

  func isSet(_ path: String) -> Bool {
    layers.contains { $0.settings[path] != nil }
  }

  /// "from environment", "from config/x.yaml:7", "the default".
  func describe(_ path: String) -> String {
    guard let layer = layers.first(where: { $0.settings[path] != nil }) else {
      return "the default"
    }
    let line = layer.settings[path]?.line.map { ":\($0)" } ?? ""
    return "from \(layer.source)\(line)"
  }

  /// An error about `path`, located where its effective value was set.
  func error(_ path: String, _ message: String) -> ConfigurationError {
    guard let layer = layers.first(where: { $0.settings[path] != nil }) else {
      return ConfigurationError(key: path, source: "defaults", message: message)
    }
    return ConfigurationError(
      key: path, source: layer.source, line: layer.settings[path]?.line, message: message)
  }
}
