/// A valid D-Bus type signature: zero or more complete types, such as `a{sv}` or `(ii)s`.
public struct DBusSignature: Sendable, Hashable, CustomStringConvertible,
  ExpressibleByStringLiteral
{
  /// The signature as text.
  public let rawValue: String

  /// The empty signature (no values).
  public static let empty = DBusSignature(unchecked: "")

  /// Validates `text` as a signature.
  ///
  /// - Parameter text: the signature, e.g. `a{sv}`.
  /// - Throws: ``DBusError`` `invalid_argument` when `text` is not a valid signature.
  public init(_ text: String) throws(DBusError) {
    guard NameRules.completeTypes(text) != nil else {
      throw DBusError(.invalidArgument, "invalid signature '\(text)'")
    }
    rawValue = text
  }

  /// Creates a signature from a literal, which must be valid (a programmer error otherwise).
  ///
  /// - Parameter value: the literal signature.
  public init(stringLiteral value: String) {
    precondition(NameRules.completeTypes(value) != nil, "invalid signature literal '\(value)'")
    rawValue = value
  }

  init(unchecked text: String) { rawValue = text }

  /// The complete types the signature consists of (`"sa{sv}as"` → `["s", "a{sv}", "as"]`).
  public var completeTypes: [DBusSignature] {
    (NameRules.completeTypes(rawValue) ?? []).map { DBusSignature(unchecked: $0) }
  }

  /// Whether the signature is exactly one complete type.
  public var isSingleCompleteType: Bool { NameRules.completeTypes(rawValue)?.count == 1 }

  /// The signature as text.
  public var description: String { rawValue }
}
