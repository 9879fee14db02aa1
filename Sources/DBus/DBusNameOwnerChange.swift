/// A change of a bus name's owner, from the bus's `NameOwnerChanged` signal.
public struct DBusNameOwnerChange: Sendable, Hashable {
  /// The name, e.g. `org.bluez`.
  public var name: String
  /// The unique name of the previous owner, nil when the name had none.
  public var oldOwner: String?
  /// The unique name of the new owner, nil when the name is now unowned.
  public var newOwner: String?

  /// Creates a change value.
  ///
  /// - Parameters:
  ///   - name: the bus name.
  ///   - oldOwner: the previous owner, nil for none.
  ///   - newOwner: the new owner, nil for none.
  public init(name: String, oldOwner: String?, newOwner: String?) {
    self.name = name
    self.oldOwner = oldOwner
    self.newOwner = newOwner
  }

  /// Reads the arguments of a `NameOwnerChanged` signal (`sss`), nil for anything else.
  init?(_ signal: DBusSignal) {
    guard signal.member == "NameOwnerChanged", signal.arguments.count == 3,
      case .string(let name) = signal.arguments[0],
      case .string(let old) = signal.arguments[1],
      case .string(let new) = signal.arguments[2]
    else { return nil }
    self.init(name: name, oldOwner: old.isEmpty ? nil : old, newOwner: new.isEmpty ? nil : new)
  }
}
