/// A property of an exported interface.
public struct DBusProperty: Sendable {
  /// Reads the current value; errors are sent as for ``DBusMethod/Handler``.
  public typealias Getter = @Sendable () async throws -> DBusValue
  /// Writes a new value (already checked against the property's signature); errors are sent
  /// as for ``DBusMethod/Handler``.
  public typealias Setter = @Sendable (DBusValue) async throws -> Void

  /// The property name.
  public var name: String
  /// The property's type, one complete type.
  public var signature: DBusSignature
  /// Reads the value; `Get`, `GetAll` and `GetManagedObjects` call it.
  public var getter: Getter
  /// Writes the value; nil for a read-only property (`Set` gets `PropertyReadOnly`).
  public var setter: Setter?
  /// Whether a successful `Set` emits `PropertiesChanged` with the new value.
  public var emitsChangedOnSet: Bool

  /// Describes a property.
  ///
  /// - Parameters:
  ///   - name: the property name.
  ///   - signature: its type.
  ///   - emitsChangedOnSet: whether a successful remote `Set` emits `PropertiesChanged`.
  ///   - get: reads the value, off the bus thread.
  ///   - set: writes the value, off the bus thread; nil for read-only.
  public init(
    _ name: String, signature: DBusSignature, emitsChangedOnSet: Bool = true,
    get: @escaping Getter, set: Setter? = nil
  ) {
    self.name = name
    self.signature = signature
    self.emitsChangedOnSet = emitsChangedOnSet
    self.getter = get
    self.setter = set
  }

  /// `read`, `write` or `readwrite` for introspection.
  var access: String { setter == nil ? "read" : "readwrite" }
}
