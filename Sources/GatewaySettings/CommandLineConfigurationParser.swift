/// Reads the gateway's settings from command-line options.
///
/// The arguments are options only (no program name, no positional arguments). Each option
/// names a key by its path with `.` or `-` between levels and `_` or `-` inside names, so
/// `--mqtt.host`, `--mqtt-host`, `--mqtt.tls.ca-file` and `--mqtt.tls.ca_file` are all
/// accepted. The value follows as the next argument or after `=` (`--mqtt.port=1884`); a value
/// that starts with `--` needs the `=` form. A boolean option alone means `true`
/// (`--mqtt.tls.insecure`), or takes `=false` or a following boolean word. An option given
/// twice takes its last value.
enum CommandLineConfigurationParser {
  /// Checks and converts `arguments`.
  ///
  /// - Parameter arguments: The configuration options, without the program name.
  /// - Returns: The settings, with source `command line`.
  /// - Throws: ``ConfigurationError`` for an argument that is not an option, an unknown option,
  ///   a missing value, or a value that does not fit its key.
  static func layer(from arguments: [String]) throws(ConfigurationError) -> ConfigurationLayer {
    var layer = ConfigurationLayer(source: ConfigurationError.commandLineSource)
    var index = arguments.startIndex
    while index < arguments.endIndex {
      let argument = arguments[index]
      index += 1
      guard argument.hasPrefix("--"), argument.count > 2 else {
        throw ConfigurationError(
          key: nil, source: layer.source,
          message: "unexpected argument '\(ConfigurationLayer.abbreviated(argument))' "
            + "(options look like --mqtt.host=broker.lan)")
      }
      let body = argument.dropFirst(2)
      let name = String(body.prefix { $0 != "=" })
      let inlineValue = body.firstIndex(of: "=").map { String(body[body.index(after: $0)...]) }
      let spelling = "--" + name
      guard
        let key = ConfigurationKey.byNormalizedOptionName[
          ConfigurationKey.normalizedOptionName(name)]
      else {
        throw unknownOption(spelling, source: layer.source)
      }
      let next = index < arguments.endIndex ? arguments[index] : nil
      let value: String
      if let inlineValue {
        value = inlineValue
      } else if key.type == .boolean {
        if let next, !next.hasPrefix("--"), key.type.parse(next) != nil {
          value = next
          index += 1
        } else {
          value = "true"
        }
      } else if let next, !next.hasPrefix("--") {
        value = next
        index += 1
      } else {
        throw ConfigurationError(
          key: key.path, source: layer.source,
          message: "missing value for \(spelling) (write \(key.optionName)=VALUE)")
      }
      try layer.set(key, text: value, line: nil, spelling: spelling)
    }
    return layer
  }

  private static func unknownOption(_ spelling: String, source: String) -> ConfigurationError {
    var message = "unknown option"
    let normalized = ConfigurationKey.normalizedOptionName(String(spelling.dropFirst(2)))
    let candidates = ConfigurationKey.byNormalizedOptionName.keys.sorted()
    if let match = KeySuggestion.closest(to: normalized, among: candidates, separator: "-"),
      let key = ConfigurationKey.byNormalizedOptionName[match]
    {
      message += " (did you mean \(key.optionName)?)"
    }
    return ConfigurationError(key: spelling, source: source, message: message)
  }
}
