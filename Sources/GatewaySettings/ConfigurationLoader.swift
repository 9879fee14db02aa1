import BridgeCore
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
/// - `mqtt.reconnect.min_delay` is at most `mqtt.reconnect.max_delay`;
/// - `mqtt.password` needs `mqtt.username` with MQTT 3.1.1.
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
    let reader = ConfigReader(
      providers: layers.map(\.provider) + [InMemoryProvider(name: "defaults", values: [:])])
    var result = GatewayConfiguration()

    for key in ConfigurationKey.all { key.read?(reader, &result) }
    let explicitlyEnabled = reader.bool(forKey: "mqtt.tls.enabled")

    let origins = Origins(layers: layers)
    result.mqtt.tls.enabled = try tlsEnabled(
      result.mqtt.tls, explicitly: explicitlyEnabled, origins: origins)
    try checkReconnect(result.mqtt.reconnect, origins: origins)
    if result.mqtt.password != nil, result.mqtt.username == nil,
      result.mqtt.protocolVersion != .v5
    {
      throw origins.error(
        "mqtt.password",
        "MQTT 3.1.1 sends a password only with a user name: set mqtt.username too "
          + "(or mqtt.protocol: 5, which allows a password alone)")
    }
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
    if case .failure(let duplicate) = DeviceNameRule.names(
      bluetooth.names.compactMap { try? DeviceNameRule(parsing: $0) })
    {
      throw origins.error("bluetooth.names", "\(duplicate): give each device its own name")
    }
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
