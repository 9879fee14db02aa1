/// Which signals a subscription receives: a D-Bus match rule for signals.
///
/// The rule is installed on the bus (`AddMatch`) and also applied locally, so each
/// subscription sees only its own signals even when several rules overlap. A well-known
/// ``sender`` (such as `org.bluez`) is matched against its current owner, which the connection
/// tracks through `NameOwnerChanged`.
public struct DBusMatchRule: Sendable, Hashable, CustomStringConvertible {
  /// The sender's unique or well-known name.
  public var sender: String?
  /// The interface name.
  public var interface: String?
  /// The signal name.
  public var member: String?
  /// The exact object path.
  public var path: DBusObjectPath?
  /// The object path or any path below it.
  public var pathNamespace: DBusObjectPath?
  /// String (or object path) arguments that must be equal, by argument index (0…63).
  public var arguments: [Int: String]

  /// Creates a rule; nil fields match anything.
  ///
  /// - Parameters:
  ///   - sender: the sender's unique or well-known name.
  ///   - interface: the interface name.
  ///   - member: the signal name.
  ///   - path: the exact object path.
  ///   - pathNamespace: a path whose subtree matches.
  ///   - arguments: string arguments that must be equal, by index.
  public init(
    sender: String? = nil, interface: String? = nil, member: String? = nil,
    path: DBusObjectPath? = nil, pathNamespace: DBusObjectPath? = nil,
    arguments: [Int: String] = [:]
  ) {
    self.sender = sender
    self.interface = interface
    self.member = member
    self.path = path
    self.pathNamespace = pathNamespace
    self.arguments = arguments
  }

  /// Checks names, and the argument indices.
  ///
  /// - Throws: ``DBusError`` `invalid_argument` naming the invalid field.
  public func validate() throws(DBusError) {
    if let sender, !NameRules.isValidBusName(sender) {
      throw DBusError(.invalidArgument, "invalid sender '\(sender)' in match rule")
    }
    if let interface, !NameRules.isValidInterfaceName(interface) {
      throw DBusError(.invalidArgument, "invalid interface '\(interface)' in match rule")
    }
    if let member, !NameRules.isValidMemberName(member) {
      throw DBusError(.invalidArgument, "invalid member '\(member)' in match rule")
    }
    if path != nil && pathNamespace != nil {
      throw DBusError(.invalidArgument, "a match rule cannot have both path and path_namespace")
    }
    for (index, value) in arguments {
      guard (0..<64).contains(index) else {
        throw DBusError(.invalidArgument, "match rule argument index \(index) is out of range")
      }
      if value.utf8.contains(0) {
        throw DBusError(.invalidArgument, "match rule argument \(index) contains NUL")
      }
    }
  }

  /// The rule in bus syntax, e.g. `type='signal',interface='org.freedesktop.DBus.Properties'`.
  public var description: String {
    var parts = ["type='signal'"]
    func add(_ key: String, _ value: String?) {
      guard let value else { return }
      parts.append("\(key)='\(value.replacingOccurrences(of: "'", with: "'\\''"))'")
    }
    add("sender", sender)
    add("interface", interface)
    add("member", member)
    add("path", path?.rawValue)
    add("path_namespace", pathNamespace?.rawValue)
    for index in arguments.keys.sorted() { add("arg\(index)", arguments[index]) }
    return parts.joined(separator: ",")
  }

  /// Whether `signal` matches, with `senderOwner` the current unique owner of a well-known
  /// ``sender`` (nil when unknown or when ``sender`` is a unique name).
  func matches(_ signal: DBusSignal, senderOwner: String?) -> Bool {
    if let sender, sender != signal.sender, senderOwner != signal.sender { return false }
    if let interface, interface != signal.interface { return false }
    if let member, member != signal.member { return false }
    if let path, path != signal.path { return false }
    if let pathNamespace, pathNamespace != signal.path,
      !signal.path.isDescendant(of: pathNamespace)
    {
      return false
    }
    for (index, expected) in arguments {
      guard index < signal.arguments.count else { return false }
      switch signal.arguments[index] {
      case .string(let text) where text == expected: continue
      case .objectPath(let p) where p.rawValue == expected: continue
      default: return false
      }
    }
    return true
  }
}
