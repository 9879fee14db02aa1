/// A value a ``SelectorRule`` assigns to characteristics: one of a fixed set of names.
public protocol SelectorRuleValue: RawRepresentable<String>, CaseIterable, Sendable, Hashable {
  /// What the value is, for messages: `format`, `notify method`.
  static var ruleNoun: String { get }
  /// A whole rule, for messages: `*/180f/2a19=decoded`.
  static var ruleExample: String { get }
}

/// A rule of the configuration, `<selector>=<value>`: the characteristics the
/// ``CharacteristicSelector`` names get the value (a ``ValueFormat`` in ``FormatRule``s, a
/// ``NotifyMethod`` in ``NotifyMethodRule``s). Where several rules match, the first wins.
///
/// ```swift
/// let rule = try FormatRule(parsing: "*/180f/2a19=decoded")
/// ```
public struct SelectorRule<Value: SelectorRuleValue>: Sendable, Hashable, CustomStringConvertible {
  /// Why a string is not a rule.
  public enum Error: Swift.Error, Sendable, Hashable, CustomStringConvertible {
    /// The rule has no `=<value>`.
    case missingValue(String)
    /// The value is not one of `Value`'s names.
    case unknownValue(String)
    /// The part before `=` is not a selector.
    case invalidSelector(CharacteristicSelector.Error)

    /// The stable machine-readable code, `invalid_payload`.
    public var code: String { "invalid_payload" }

    /// A sentence for people.
    public var description: String {
      switch self {
      case .missingValue(let rule):
        "'\(rule)' has no '=<\(Value.ruleNoun)>' (for example \(Value.ruleExample))"
      case .unknownValue(let value):
        "unknown \(Value.ruleNoun) '\(value)' ("
          + Value.allCases.map(\.rawValue).joined(separator: ", ") + ")"
      case .invalidSelector(let error):
        error.description
      }
    }
  }

  /// The characteristics the rule applies to.
  public var selector: CharacteristicSelector
  /// What they get.
  public var value: Value

  /// Makes a rule.
  ///
  /// - Parameters:
  ///   - selector: The characteristics the rule applies to.
  ///   - value: What they get.
  public init(selector: CharacteristicSelector, value: Value) {
    self.selector = selector
    self.value = value
  }

  /// Parses `<selector>=<value>`, for example `*/180f/2a19=decoded`.
  ///
  /// The text after the last `=` is the value, in lower case; whitespace around either part is
  /// ignored.
  ///
  /// - Parameter text: The rule.
  /// - Throws: ``Error`` naming what is wrong.
  public init(parsing text: String) throws(Error) {
    guard let equals = text.lastIndex(of: "=") else { throw .missingValue(text) }
    let name = String(
      String(text[text.index(after: equals)...]).unicodeScalars.trimmingWhitespace())
    guard !name.isEmpty else { throw .missingValue(text) }
    guard let value = Value(rawValue: name) else { throw .unknownValue(name) }
    let selector: CharacteristicSelector
    do {
      selector = try CharacteristicSelector(parsing: String(text[..<equals]))
    } catch {
      throw .invalidSelector(error)
    }
    self.init(selector: selector, value: value)
  }

  /// `<selector>=<value>` with the selector's three-part form.
  public var description: String { "\(selector)=\(value.rawValue)" }
}

extension Array {
  /// The value of the first rule whose selector names the characteristic, or `fallback`.
  ///
  /// - Parameters:
  ///   - path: The characteristic, by device id.
  ///   - address: The device's address, if known (rules may name the device by address).
  ///   - fallback: The value when no rule matches.
  /// - Returns: The value.
  public func value<Value>(
    for path: CharacteristicPath, address: BluetoothAddress? = nil, default fallback: Value
  ) -> Value where Element == SelectorRule<Value> {
    first {
      $0.selector.matches(
        device: path.device, address: address, service: path.service,
        characteristic: path.characteristic)
    }?.value ?? fallback
  }
}

/// A value-format rule, `<selector>=<format>` (`bluetooth.gatt.formats`).
public typealias FormatRule = SelectorRule<ValueFormat>

extension ValueFormat: SelectorRuleValue {
  /// `format`.
  public static var ruleNoun: String { "format" }
  /// `*/180f/2a19=decoded`.
  public static var ruleExample: String { "*/180f/2a19=decoded" }
}

/// A notify-method rule, `<selector>=<method>` (`bluetooth.gatt.notify_methods`).
public typealias NotifyMethodRule = SelectorRule<NotifyMethod>
