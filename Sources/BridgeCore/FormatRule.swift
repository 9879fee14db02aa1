/// A value-format rule of the configuration, `<selector>=<format>`: characteristics the
/// ``CharacteristicSelector`` names are published in the ``ValueFormat``.
///
/// ```swift
/// let rule = try FormatRule(parsing: "*/180f/2a19=decoded")
/// ```
public struct FormatRule: Sendable, Hashable, CustomStringConvertible {
  /// Why a string is not a value-format rule.
  public enum Error: Swift.Error, Sendable, Hashable, CustomStringConvertible {
    /// The rule has no `=<format>`.
    case missingFormat(String)
    /// The format is not one of ``ValueFormat``'s.
    case unknownFormat(String)
    /// The part before `=` is not a selector.
    case invalidSelector(CharacteristicSelector.Error)

    /// The stable machine-readable code, `invalid_payload`.
    public var code: String { "invalid_payload" }

    /// A sentence for people.
    public var description: String {
      switch self {
      case .missingFormat(let rule):
        "'\(rule)' has no '=<format>' (for example */180f/2a19=decoded)"
      case .unknownFormat(let format):
        "unknown format '\(format)' ("
          + ValueFormat.allCases.map(\.rawValue).joined(separator: ", ") + ")"
      case .invalidSelector(let error):
        error.description
      }
    }
  }

  /// The characteristics the rule applies to.
  public var selector: CharacteristicSelector
  /// Their value format.
  public var format: ValueFormat

  /// Makes a rule.
  ///
  /// - Parameters:
  ///   - selector: The characteristics the rule applies to.
  ///   - format: Their value format.
  public init(selector: CharacteristicSelector, format: ValueFormat) {
    self.selector = selector
    self.format = format
  }

  /// Parses `<selector>=<format>`, for example `*/180f/2a19=decoded`.
  ///
  /// The text after the last `=` is the format, in lower case; whitespace around either part is
  /// ignored.
  ///
  /// - Parameter text: The rule.
  /// - Throws: ``Error`` naming what is wrong.
  public init(parsing text: String) throws(Error) {
    guard let equals = text.lastIndex(of: "=") else { throw .missingFormat(text) }
    let name = String(
      String(text[text.index(after: equals)...]).unicodeScalars.trimmingWhitespace())
    guard !name.isEmpty else { throw .missingFormat(text) }
    guard let format = ValueFormat(rawValue: name) else { throw .unknownFormat(name) }
    let selector: CharacteristicSelector
    do {
      selector = try CharacteristicSelector(parsing: String(text[..<equals]))
    } catch {
      throw .invalidSelector(error)
    }
    self.init(selector: selector, format: format)
  }

  /// `<selector>=<format>` with the selector's three-part form.
  public var description: String { "\(selector)=\(format.rawValue)" }
}
