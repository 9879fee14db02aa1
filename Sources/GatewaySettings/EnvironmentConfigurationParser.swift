/// Reads the gateway's settings from environment variables.
///
/// Only variables whose name starts with `GATT2MQTT_` (upper case) are read; all others are
/// ignored. Each known key has one name: `GATT2MQTT_` and its path in upper case with `_` for
/// `.` (`mqtt.tls.ca_file` is `GATT2MQTT_MQTT_TLS_CA_FILE`). Because `_` also appears inside key
/// names, a name is matched whole against the known names, never split. A `GATT2MQTT_` variable
/// that matches no key is an error, except ``ConfigurationLoader/configFileEnvironmentVariable``.
/// A variable set to the empty string counts as unset (container templates often define
/// variables they leave empty).
enum EnvironmentConfigurationParser {
  /// Checks and converts the gateway's variables in `environment`.
  ///
  /// - Parameter environment: All environment variables.
  /// - Returns: The settings, with source `environment`.
  /// - Throws: ``ConfigurationError`` for an unknown `GATT2MQTT_` name or a value that does not
  ///   fit its key, the first in name order.
  static func layer(from environment: [String: String]) throws(ConfigurationError)
    -> ConfigurationLayer
  {
    var layer = ConfigurationLayer(source: ConfigurationError.environmentSource)
    let names = environment.keys.filter { $0.hasPrefix(ConfigurationKey.environmentPrefix) }
    for name in names.sorted() where name != ConfigurationLoader.configFileEnvironmentVariable {
      guard let key = ConfigurationKey.byEnvironmentName[name] else {
        var message = "unknown variable"
        let candidates = ConfigurationKey.all.map(\.environmentName)
        let tail = String(name.dropFirst(ConfigurationKey.environmentPrefix.count))
        if let suggestion =
          KeySuggestion.closest(to: name, among: candidates, separator: "_")
          ?? KeySuggestion.closest(to: tail, among: candidates, separator: "_")
        {
          message += " (did you mean \(suggestion)?)"
        }
        throw ConfigurationError(key: name, source: layer.source, message: message)
      }
      guard let value = environment[name], !value.isEmpty else { continue }
      try layer.set(key, text: value, line: nil, spelling: name)
    }
    return layer
  }
}
