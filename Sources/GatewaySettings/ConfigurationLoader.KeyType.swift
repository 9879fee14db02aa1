import BridgeCore
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
    /// A broker host: a DNS name or an IP address, 1 to 253 characters, no whitespace or
    /// control characters.
    case hostName
    /// An address to listen on, `<host>:<port>`: an IPv4 address or host name, or an IPv6
    /// address in brackets (`[::1]:8080`), and a port 0–65535 (0: any free port).
    case listenAddress
    /// One topic level: 1 to 64 letters, digits, `_` and `-`, at least one a letter or digit
    /// (exactly the ids BridgeCore's `GatewayID` keeps unchanged).
    case topicLevel
    /// An MQTT topic prefix: 1 to 1024 UTF-8 bytes, no `+`, `#`, control characters or
    /// noncharacters, no leading `$`, no empty level (so no leading, trailing or doubled `/`).
    case topicPrefix
    /// A decimal integer in the range (`+` or `-` sign allowed, no `_`, no hexadecimal).
    case integer(ClosedRange<Int>)
    /// A finite decimal number (exponent allowed) above `greaterThan` (or equal to it when
    /// `orEqual`), at most `atMost`.
    case number(greaterThan: Double, orEqual: Bool = false, atMost: Double)
    /// `true`/`false`, `yes`/`no`, `on`/`off` or `1`/`0`, in any letter case.
    case boolean
    /// One of the listed words, in any letter case.
    case choice([String])
    /// A list of items, each checked and normalised (``ListItem``): a YAML sequence, or text
    /// with the items separated by commas (whitespace around items ignored). An empty item is
    /// an error; text that is empty or only whitespace is the empty list.
    case list(ListItem)
    /// A device-name pattern: 1 to 248 characters, `*` for any run of characters, `?` for one
    /// (exactly the patterns BridgeCore's `NamePattern` accepts).
    case namePattern
    /// One Bluetooth UUID in any form BridgeCore's `BluetoothUUID` reads; kept in lower case.
    case uuid

    /// What one item of a ``list(_:)`` key is.
    public enum ListItem: Sendable, Hashable, CustomStringConvertible {
      /// A service UUID: 4 or 8 hex digits (optionally after `0x`), 32 hex digits, or the
      /// dashed 8-4-4-4-12 form; kept in lower case as written (`0x180F` becomes `0x180f`).
      case serviceUUID
      /// A Bluetooth address: 12 hex digits, optionally in pairs separated by one `:` or `-`
      /// throughout; kept as `AA:BB:CC:DD:EE:FF`.
      case bluetoothAddress
      /// A device-name pattern (BridgeCore's `NamePattern`).
      case namePattern
      /// A characteristic selector, `<dev>/<svc>/<chr>` or `<dev>`, `*` for any part
      /// (BridgeCore's `CharacteristicSelector`).
      case characteristicSelector
      /// A value-format rule, `<dev>/<svc>/<chr>=<format>` (BridgeCore's `FormatRule`).
      case formatRule
      /// A notify-method rule, `<dev>/<svc>/<chr>=<method>` (BridgeCore's `NotifyMethodRule`).
      case notifyMethodRule
      /// A Home Assistant control rule, `<dev>/<svc>/<chr>=<control>` (BridgeCore's
      /// `HomeAssistantControlRule`).
      case controlRule
      /// A friendly name, `<address>=<name>` (BridgeCore's `DeviceNameRule`).
      case nameRule

      /// One item, for messages: "a Bluetooth address".
      public var description: String {
        switch self {
        case .serviceUUID: "a Bluetooth service UUID"
        case .bluetoothAddress: "a Bluetooth address"
        case .namePattern: "a name pattern"
        case .characteristicSelector: "a characteristic selector"
        case .formatRule: "a value-format rule"
        case .notifyMethodRule: "a notify-method rule"
        case .controlRule: "a Home Assistant control rule"
        case .nameRule: "a device name"
        }
      }

      /// Several items, for messages: "Bluetooth addresses".
      var plural: String {
        switch self {
        case .serviceUUID:
          "Bluetooth service UUIDs (180f, 0x180F, 8 hex digits, or 128-bit with dashes)"
        case .bluetoothAddress: "Bluetooth addresses (AA:BB:CC:DD:EE:FF)"
        case .namePattern: "name patterns ('*' any characters, '?' one)"
        case .characteristicSelector:
          "characteristic selectors (<dev>/<svc>/<chr> or <dev>, '*' for any part, "
            + "e.g. */180f/2a19)"
        case .formatRule:
          "value-format rules (<dev>/<svc>/<chr>=<format>, e.g. */180f/2a19=decoded; formats "
            + ValueFormat.allCases.map(\.rawValue).joined(separator: ", ") + ")"
        case .notifyMethodRule:
          "notify-method rules (<dev>/<svc>/<chr>=<method>, e.g. */180d/2a37=start; methods "
            + NotifyMethod.allCases.map(\.rawValue).joined(separator: ", ") + ")"
        case .controlRule:
          "Home Assistant control rules (<dev>/<svc>/<chr>=<control>, e.g. "
            + "A4C1381E29DF/fff0/fff1=switch; controls "
            + HomeAssistantControl.allCases.map(\.rawValue).joined(separator: ", ") + ")"
        case .nameRule:
          "device names (<address>=<name>, e.g. A4:C1:38:1E:29:DF=kitchen/thermometer)"
        }
      }

      /// Why `item` is not one, when the parser says more than the item's kind (the rules and
      /// selectors: an unknown format, notify method or control names the allowed ones).
      func reason(_ item: String) -> String? {
        do {
          switch self {
          case .characteristicSelector: _ = try CharacteristicSelector(parsing: item)
          case .formatRule: _ = try FormatRule(parsing: item)
          case .notifyMethodRule: _ = try NotifyMethodRule(parsing: item)
          case .controlRule: _ = try HomeAssistantControlRule(parsing: item)
          case .nameRule: _ = try DeviceNameRule(parsing: item)
          case .serviceUUID, .bluetoothAddress, .namePattern: return nil
          }
          return nil
        } catch {
          return "\(error)"
        }
      }

      /// The normalised form of `item`, or `nil` if it is not one.
      func normalize(_ item: String) -> String? {
        switch self {
        case .serviceUUID: Self.serviceUUID(item)
        case .bluetoothAddress: Self.bluetoothAddress(item)
        case .namePattern: (try? NamePattern(item)).map { _ in item }
        case .characteristicSelector: (try? CharacteristicSelector(parsing: item)).map { _ in item }
        case .formatRule: (try? FormatRule(parsing: item)).map { _ in item }
        case .notifyMethodRule: (try? NotifyMethodRule(parsing: item)).map { _ in item }
        case .controlRule: (try? HomeAssistantControlRule(parsing: item)).map { _ in item }
        case .nameRule: (try? DeviceNameRule(parsing: item)).map { _ in item }
        }
      }

      private static func isHex(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar {
        case "0"..."9", "a"..."f", "A"..."F": true
        default: false
        }
      }

      private static func serviceUUID(_ item: String) -> String? {
        let scalars = Array(item.unicodeScalars)
        let prefixed =
          [6, 10].contains(scalars.count) && scalars[0] == "0"
          && (scalars[1] == "x" || scalars[1] == "X")
        let digits = Array(scalars.dropFirst(prefixed ? 2 : 0))
        let valid: Bool
        switch digits.count {
        case 4, 8, 32:
          valid = digits.allSatisfy(isHex)
        case 36:
          valid = digits.indices.allSatisfy { index in
            [8, 13, 18, 23].contains(index) ? digits[index] == "-" : isHex(digits[index])
          }
        default:
          valid = false
        }
        return valid ? item.lowercased() : nil
      }

      private static func bluetoothAddress(_ item: String) -> String? {
        let scalars = Array(item.unicodeScalars)
        var digits: [Unicode.Scalar] = []
        switch scalars.count {
        case 12:
          digits = scalars
        case 17:
          let separator = scalars[2]
          guard separator == ":" || separator == "-" else { return nil }
          for (index, scalar) in scalars.enumerated() {
            if index % 3 == 2 {
              guard scalar == separator else { return nil }
            } else {
              digits.append(scalar)
            }
          }
        default:
          return nil
        }
        guard digits.allSatisfy(isHex) else { return nil }
        let text = String(String.UnicodeScalarView(digits)).uppercased()
        return stride(from: 0, to: 12, by: 2).map { offset in
          let start = text.index(text.startIndex, offsetBy: offset)
          return String(text[start..<text.index(start, offsetBy: 2)])
        }.joined(separator: ":")
      }
    }

    /// What the key expects, for messages: "an integer in 1...65535".
    public var description: String {
      switch self {
      case .string: "a string"
      case .nonEmptyString: "a non-empty string"
      case .hostName: "a host name or IP address (1 to 253 characters, no spaces)"
      case .listenAddress: "<host>:<port>, e.g. 127.0.0.1:8080, 0.0.0.0:8080 or [::1]:8080"
      case .topicLevel:
        "a name of up to 64 letters, digits, '_' and '-', with a letter or digit"
      case .topicPrefix:
        "an MQTT topic prefix (up to 1024 bytes, without '+', '#', control characters, "
          + "a leading '$' or empty levels)"
      case .integer(let range) where range.upperBound == Int.max:
        "an integer of at least \(range.lowerBound)"
      case .integer(let range): "an integer in \(range.lowerBound)...\(range.upperBound)"
      case .number(let low, let orEqual, let high):
        orEqual
          ? "a number from \(Self.format(low)) to \(Self.format(high))"
          : "a number greater than \(Self.format(low)) and at most \(Self.format(high))"
      case .boolean: "true or false"
      case .choice(let words):
        "one of " + words.map { "\"\($0)\"" }.joined(separator: ", ")
      case .list(let item):
        "a list of \(item.plural), as a sequence or separated by commas"
      case .namePattern:
        "a name pattern of 1 to \(Self.maximumNamePatternLength) characters "
          + "('*' any characters, '?' one)"
      case .uuid:
        "a Bluetooth UUID (4 or 8 hex digits, or 128-bit with dashes)"
      }
    }

    /// The most characters of a ``namePattern`` (BridgeCore's `NamePattern.maximumLength`).
    static let maximumNamePatternLength = 248

    /// The items of a list written as text: split at commas, whitespace around each removed.
    ///
    /// Text that is empty or only whitespace has no items; otherwise every comma separates two
    /// items, so `a,,b` and `a,` hold an empty item.
    static func listItems(_ text: String) -> [String] {
      guard text.contains(where: { !$0.isWhitespace }) else { return [] }
      return text.split(separator: ",", omittingEmptySubsequences: false).map(trimmed)
    }

    /// `text` without whitespace at either end.
    static func trimmed(_ text: some StringProtocol) -> String {
      var slice = Substring(text)
      while slice.first?.isWhitespace == true { slice.removeFirst() }
      while slice.last?.isWhitespace == true { slice.removeLast() }
      return String(slice)
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
      case .hostName:
        // The length first: a value of megabytes is refused without looking at each character.
        guard (1...253).contains(text.utf8.count) else { return nil }
        let clean = text.unicodeScalars.allSatisfy {
          !$0.properties.isWhitespace && $0.properties.generalCategory != .control
        }
        return clean ? .string(text) : nil
      case .listenAddress:
        return Self.listenAddress(text) != nil ? .string(text) : nil
      case .topicLevel:
        return Self.isTopicLevel(text) ? .string(text) : nil
      case .topicPrefix:
        return Self.isTopicPrefix(text) ? .string(text) : nil
      case .integer(let range):
        guard let value = Int(text), range.contains(value) else { return nil }
        return .int(value)
      case .number(let low, let orEqual, let high):
        let allowed = text.unicodeScalars.allSatisfy {
          "0123456789.eE+-".unicodeScalars.contains($0)
        }
        guard allowed, let value = Double(text), value.isFinite,
          value > low || (orEqual && value == low), value <= high
        else {
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
      case .list(let item):
        var values: [String] = []
        for text in Self.listItems(text) {
          guard let value = item.normalize(text) else { return nil }
          values.append(value)
        }
        return .stringArray(values)
      case .namePattern:
        let length = text.lowercased().count
        return length >= 1 && length <= Self.maximumNamePatternLength ? .string(text) : nil
      case .uuid:
        return (try? BluetoothUUID(text)) != nil ? .string(text.lowercased()) : nil
      }
    }

    /// The text of a typed value, as the summary shows it.
    static func text(of content: ConfigContent) -> String {
      switch content {
      case .string(let text): text
      case .int(let value): String(value)
      case .double(let value): format(value)
      case .bool(let value): value ? "true" : "false"
      case .stringArray(let values): values.joined(separator: ",")
      default: "\(content)"
      }
    }

    static func format(_ value: Double) -> String {
      if value.rounded() == value, abs(value) < 1e15 { return String(Int(value)) }
      return String(value)
    }

    /// The host and port of a `<host>:<port>` listen address (brackets removed from an IPv6
    /// host), or `nil`.
    static func listenAddress(_ text: String) -> (host: String, port: Int)? {
      guard let colon = text.lastIndex(of: ":"),
        let port = Int(text[text.index(after: colon)...]), (0...65535).contains(port)
      else { return nil }
      var host = String(text[..<colon])
      if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
      let clean = host.unicodeScalars.allSatisfy {
        !$0.properties.isWhitespace && $0.properties.generalCategory != .control && $0 != "/"
      }
      guard (1...253).contains(host.utf8.count), clean else { return nil }
      return (host, port)
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
