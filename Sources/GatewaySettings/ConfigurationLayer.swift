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
    if case .list = key.type {
      let items = ConfigurationLoader.KeyType.listItems(text).map { (text: $0, line: line) }
      try set(key, items: items, line: line, spelling: spelling)
      return
    }
    guard let content = key.type.parse(text) else {
      throw invalidValue(key, text: text, line: line, spelling: spelling)
    }
    set(key, to: content, line: line, spelling: spelling)
  }

  /// Checks and normalises the items of a list key and records them.
  ///
  /// - Parameters:
  ///   - key: A key of type ``ConfigurationLoader/KeyType/list(_:)``.
  ///   - items: The items as written, each with its line in the file if known.
  ///   - line: The line of the key in the file, if the source is a file.
  ///   - spelling: How the key was written.
  /// - Throws: ``ConfigurationError`` naming the key, this source and the first item that is
  ///   empty or does not fit.
  mutating func set(
    _ key: ConfigurationKey, items: [(text: String, line: Int?)], line: Int?, spelling: String
  ) throws(ConfigurationError) {
    guard case .list(let kind) = key.type else {
      preconditionFailure("\(key.path) is not a list key")
    }
    var values: [String] = []
    for item in items {
      let text = ConfigurationLoader.KeyType.trimmed(item.text)
      let problem: String
      if text.isEmpty {
        problem = "empty item in the list (items are separated by commas)"
      } else if let value = kind.normalize(text) {
        values.append(value)
        continue
      } else {
        let shown = key.isSecret ? "an item" : "\"\(Self.abbreviated(text))\""
        problem =
          "\(shown) is not \(kind)"
          + (key.isSecret ? "" : kind.reason(text).map { ": \($0)" } ?? "")
      }
      let from = spelling != key.path ? " (from \(spelling))" : ""
      throw ConfigurationError(
        key: key.path, source: source, line: item.line ?? line, message: problem + from)
    }
    set(key, to: .stringArray(values), line: line, spelling: spelling)
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
