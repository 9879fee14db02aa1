/// An interface of an exported object: its methods, properties and signals.
public struct DBusInterface: Sendable {
  /// The interface name, e.g. `org.bluez.GattCharacteristic1`.
  public var name: String
  /// The methods.
  public var methods: [DBusMethod]
  /// The properties.
  public var properties: [DBusProperty]
  /// The signals, for introspection; emit them with
  /// ``DBusConnection/emitSignal(path:interface:member:arguments:destination:)``.
  public var signals: [DBusSignalDescription]

  /// Describes an interface.
  ///
  /// - Parameters:
  ///   - name: the interface name.
  ///   - methods: the methods.
  ///   - properties: the properties.
  ///   - signals: the signals it may emit.
  public init(
    _ name: String, methods: [DBusMethod] = [], properties: [DBusProperty] = [],
    signals: [DBusSignalDescription] = []
  ) {
    self.name = name
    self.methods = methods
    self.properties = properties
    self.signals = signals
  }

  /// Checks the names and signatures.
  ///
  /// - Throws: ``DBusError`` `invalid_argument` naming the first invalid part.
  public func validate() throws(DBusError) {
    guard NameRules.isValidInterfaceName(name) else {
      throw DBusError(.invalidArgument, "invalid interface name '\(name)'")
    }
    let members = methods.map(\.name) + signals.map(\.name) + properties.map(\.name)
    for member in members where !NameRules.isValidMemberName(member) {
      throw DBusError(.invalidArgument, "invalid member name '\(member)' in \(name)")
    }
    for property in properties where !property.signature.isSingleCompleteType {
      throw DBusError(
        .invalidArgument, "property \(name).\(property.name) needs one complete type")
    }
  }
}
