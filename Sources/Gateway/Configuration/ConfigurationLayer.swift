import Configuration

/// The validated settings of one source (the file, the environment or the command line).
///
/// Every value has been checked against its key's type and stored typed, so the
/// `ConfigReader` that layers these never meets a conversion it would silently skip.
struct ConfigurationLayer: Sendable {
  /// One value and where it was written.
  struct Setting: Sendable, Equatable {
    /// The typed value.
    var content: ConfigContent
    /// The line in the file, if the source is a file.
    var line: Int?
    /// How the key was written: `mqtt.port`, `GATT2MQTT_MQTT_PORT`, `--mqtt-port`.
    var spelling: String
  }

  /// The file path, `environment` or `command line`.
  let source: String
  /// The settings by dotted key path.
  private(set) var settings: [String: Setting] = [:]

  init(source: String) {
    self.source = source
  }

  /// Records a value; a later one for the same key replaces the earlier one.
  mutating func set(
    _ key: ConfigurationKey, to content: ConfigContent, line: Int?, spelling: String
  ) {
    settings[key.path] = Setting(content: content, line: line, spelling: spelling)
  }

  /// Converts `text` for `key` and records it.
  ///
  /// - Throws: ``ConfigurationError`` naming the key and this source when `text` does not fit
  ///   the key's type; the value is not echoed for secret keys.
  mutating func set(_ key: ConfigurationKey, text: String, line: Int?, spelling: String)
    throws(ConfigurationError)
  {
    guard let content = key.type.parse(text) else {
      throw invalidValue(key, text: text, line: line, spelling: spelling)
    }
    set(key, to: content, line: line, spelling: spelling)
  }

  /// The error for a value that does not fit `key`: "expected …, got "…"".
  func invalidValue(_ key: ConfigurationKey, text: String?, line: Int?, spelling: String)
    -> ConfigurationError
  {
    let got: String
    if let text {
      got = key.isSecret ? "a value that does not fit" : "\"\(Self.abbreviated(text))\""
    } else {
      got = "null"
    }
    var message = "expected \(key.type), got \(got)"
    if spelling != key.path { message += " (from \(spelling))" }
    return ConfigurationError(key: key.path, source: source, line: line, message: message)
  }

  /// The settings as a provider for `ConfigReader`, secrets marked as such.
  var provider: InMemoryProvider {
    var values: [AbsoluteConfigKey: ConfigValue] = [:]
    for (path, setting) in settings {
      let isSecret = ConfigurationKey.byPath[path]?.isSecret ?? false
      values[AbsoluteConfigKey(path.split(separator: ".").map(String.init))] = ConfigValue(
        setting.content, isSecret: isSecret)
    }
    return InMemoryProvider(name: source, values: values)
  }

  /// `text` cut to 60 characters, with control characters escaped, for messages.
  static func abbreviated(_ text: String) -> String {
    let escaped = text.unicodeScalars.map { scalar in
      scalar.properties.generalCategory == .control
        ? scalar.escaped(asASCII: true) : String(scalar)
    }.joined()
    return escaped.count > 60 ? String(escaped.prefix(57)) + "..." : escaped
  }
}
