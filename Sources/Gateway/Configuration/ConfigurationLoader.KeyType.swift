import Configuration

extension ConfigurationLoader {
  /// What a configuration key accepts.
  ///
  /// The same textual rules hold for every source, because environment variables and
  /// command-line options are always text: a YAML value is judged by its text whether quoted or
  /// not (`port: "1883"` is accepted like `port: 1883`, `port: 1883.0` is rejected).
  public enum KeyType: Sendable, Hashable, CustomStringConvertible {
    /// Any text, including the empty string.
    case string
    /// Any text except the empty string.
    case nonEmptyString
    /// One topic level: 1 to 64 letters, digits, `_` and `-`, at least one a letter or digit
    /// (exactly the ids BridgeCore's `GatewayID` keeps unchanged).
    case topicLevel
    /// An MQTT topic prefix: 1 to 1024 UTF-8 bytes, no `+`, `#`, control characters or
    /// noncharacters, no leading `$`, no empty level (so no leading, trailing or doubled `/`).
    case topicPrefix
    /// A decimal integer in the range (`+` or `-` sign allowed, no `_`, no hexadecimal).
    case integer(ClosedRange<Int>)
    /// A finite decimal number (exponent allowed) above `greaterThan`, at most `atMost`.
    case number(greaterThan: Double, atMost: Double)
    /// `true`/`false`, `yes`/`no`, `on`/`off` or `1`/`0`, in any letter case.
    case boolean
    /// One of the listed words, in any letter case.
    case choice([String])

    /// What the key expects, for messages: "an integer in 1...65535".
    public var description: String {
      switch self {
      case .string: "a string"
      case .nonEmptyString: "a non-empty string"
      case .topicLevel:
        "a name of up to 64 letters, digits, '_' and '-', with a letter or digit"
      case .topicPrefix:
        "an MQTT topic prefix (up to 1024 bytes, without '+', '#', control characters, "
          + "a leading '$' or empty levels)"
      case .integer(let range) where range.upperBound == Int.max:
        "an integer of at least \(range.lowerBound)"
      case .integer(let range): "an integer in \(range.lowerBound)...\(range.upperBound)"
      case .number(let low, let high):
        "a number greater than \(Self.format(low)) and at most \(Self.format(high))"
      case .boolean: "true or false"
      case .choice(let words):
        "one of " + words.map { "\"\($0)\"" }.joined(separator: ", ")
      }
    }

    /// Converts `text` to the typed content stored for the key, or `nil` if it does not fit.
    ///
    /// Choices come back in their canonical spelling.
    func parse(_ text: String) -> ConfigContent? {
      switch self {
      case .string:
        return .string(text)
      case .nonEmptyString:
        return text.isEmpty ? nil : .string(text)
      case .topicLevel:
        return Self.isTopicLevel(text) ? .string(text) : nil
      case .topicPrefix:
        return Self.isTopicPrefix(text) ? .string(text) : nil
      case .integer(let range):
        guard let value = Int(text), range.contains(value) else { return nil }
        return .int(value)
      case .number(let low, let high):
        let allowed = text.unicodeScalars.allSatisfy {
          "0123456789.eE+-".unicodeScalars.contains($0)
        }
        guard allowed, let value = Double(text), value.isFinite, value > low, value <= high else {
          return nil
        }
        return .double(value)
      case .boolean:
        switch text.lowercased() {
        case "true", "yes", "on", "1": return .bool(true)
        case "false", "no", "off", "0": return .bool(false)
        default: return nil
        }
      case .choice(let words):
        return words.first { $0.lowercased() == text.lowercased() }.map(ConfigContent.string)
      }
    }

    /// The text of a typed value, as the summary shows it.
    static func text(of content: ConfigContent) -> String {
      switch content {
      case .string(let text): text
      case .int(let value): String(value)
      case .double(let value): format(value)
      case .bool(let value): value ? "true" : "false"
      default: "\(content)"
      }
    }

    static func format(_ value: Double) -> String {
      if value.rounded() == value, abs(value) < 1e15 { return String(Int(value)) }
      return String(value)
    }

    private static func isTopicLevel(_ text: String) -> Bool {
      var hasLetterOrDigit = false
      for scalar in text.unicodeScalars {
        switch scalar {
        case "A"..."Z", "a"..."z", "0"..."9": hasLetterOrDigit = true
        case "_", "-": continue
        default: return false
        }
      }
      return hasLetterOrDigit && text.unicodeScalars.count <= 64
    }

    private static func isTopicPrefix(_ text: String) -> Bool {
      guard !text.isEmpty, text.utf8.count <= 1024, !text.hasPrefix("$") else { return false }
      let forbidden = text.unicodeScalars.contains { scalar in
        let value = scalar.value
        return scalar == "+" || scalar == "#" || value <= 0x1F || (0x7F...0x9F).contains(value)
          || (0xFDD0...0xFDEF).contains(value) || value & 0xFFFE == 0xFFFE
      }
      if forbidden { return false }
      return text.split(separator: "/", omittingEmptySubsequences: false).allSatisfy {
        !$0.isEmpty
      }
    }
  }
}
