/// A signal an exported interface declares, for introspection.
public struct DBusSignalDescription: Sendable, Hashable {
  /// The signal name.
  public var name: String
  /// The signature of its arguments.
  public var signature: DBusSignature
  /// Argument names for introspection.
  public var argumentNames: [String]

  /// Describes a signal.
  ///
  /// - Parameters:
  ///   - name: the signal name.
  ///   - signature: its arguments' signature.
  ///   - argumentNames: names for introspection.
  public init(_ name: String, signature: DBusSignature = .empty, argumentNames: [String] = []) {
    self.name = name
    self.signature = signature
    self.argumentNames = argumentNames
  }
}
