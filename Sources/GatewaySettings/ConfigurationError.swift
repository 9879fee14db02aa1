/// A configuration problem: which key, from which source, and what is wrong with it.
///
/// ``description`` reads like a compiler diagnostic, for example
/// `config/gatt2mqtt.yaml:4: mqtt.port: expected an integer in 1...65535, got "abc"` or
/// `environment: GATT2MQTT_MQTT_HOTS: unknown variable (did you mean GATT2MQTT_MQTT_HOST?)`.
/// Messages never contain the value of a secret key.
public struct ConfigurationError: Error, Sendable, Equatable, CustomStringConvertible {
  /// The key concerned, or `nil` when the problem is not about one key (a missing file, a
  /// YAML syntax error).
  ///
  /// A known key is named by its dotted path (`mqtt.tls.ca_file`). An unknown one is named as
  /// written: a dotted path for the file, the variable name for the environment
  /// (`GATT2MQTT_MQTT_HOTS`), the option for the command line (`--mqtt.hots`).
  public var key: String?
  /// Where the problem is: the configuration file's path, `environment` or `command line`.
  public var source: String
  /// The line in the configuration file, when known (1-based).
  public var line: Int?
  /// What is wrong, in words, without the source and key.
  public var message: String

  /// The source name used for environment variables.
  public static let environmentSource = "environment"
  /// The source name used for command-line options.
  public static let commandLineSource = "command line"

  /// Creates an error.
  ///
  /// - Parameters:
  ///   - key: The key concerned, if any.
  ///   - source: The file path, ``environmentSource`` or ``commandLineSource``.
  ///   - line: The line in the file, if known.
  ///   - message: What is wrong.
  public init(key: String?, source: String, line: Int? = nil, message: String) {
    self.key = key
    self.source = source
    self.line = line
    self.message = message
  }

  /// `source[:line]: [key: ]message`.
  public var description: String {
    var text = source
    if let line { text += ":\(line)" }
    if let key { text += ": \(key)" }
    return text + ": " + message
  }
}
