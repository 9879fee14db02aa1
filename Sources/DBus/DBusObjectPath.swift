/// A valid D-Bus object path, such as `/org/bluez/hci0`.
///
/// Paths are `/` or `/`-separated non-empty segments of ASCII letters, digits and `_`, without a
/// trailing `/`. Creating one from text validates it.
public struct DBusObjectPath: Sendable, Hashable, Comparable, CustomStringConvertible,
  ExpressibleByStringLiteral
{
  /// The path as text.
  public let rawValue: String

  /// The root path `/`.
  public static let root = DBusObjectPath(unchecked: "/")

  /// Validates `text` as an object path.
  ///
  /// - Parameter text: the path, e.g. `/org/bluez/hci0`.
  /// - Throws: ``DBusError`` with code ``DBusError/Code/invalidArgument`` when it is not a valid
  ///   object path.
  public init(_ text: String) throws(DBusError) {
    guard NameRules.isValidObjectPath(text) else {
      throw DBusError(.invalidArgument, "invalid object path '\(text)'")
    }
    rawValue = text
  }

  /// Creates a path from a literal, which must be valid (a programmer error otherwise).
  ///
  /// - Parameter value: the literal path.
  public init(stringLiteral value: String) {
    precondition(NameRules.isValidObjectPath(value), "invalid object path literal '\(value)'")
    rawValue = value
  }

  init(unchecked text: String) { rawValue = text }

  /// The path as text.
  public var description: String { rawValue }

  /// Whether `self` lies strictly below `ancestor` (`/a/b` is below `/a` and `/`).
  ///
  /// - Parameter ancestor: the possible ancestor.
  /// - Returns: true when `self` is a descendant of `ancestor`, false for equal paths.
  public func isDescendant(of ancestor: DBusObjectPath) -> Bool {
    if ancestor.rawValue == "/" { return rawValue != "/" }
    return rawValue.hasPrefix(ancestor.rawValue + "/")
  }

  /// The path of a child, `self` + `/` + `segment`.
  ///
  /// - Parameter segment: one path segment of ASCII letters, digits and `_`.
  /// - Returns: the child path.
  /// - Throws: ``DBusError`` `invalid_argument` when `segment` is not a valid segment.
  public func appending(_ segment: String) throws(DBusError) -> DBusObjectPath {
    try DBusObjectPath(rawValue == "/" ? "/" + segment : rawValue + "/" + segment)
  }

  /// Orders paths by their text.
  public static func < (lhs: DBusObjectPath, rhs: DBusObjectPath) -> Bool {
    lhs.rawValue < rhs.rawValue
  }
}
