/// A method of an exported interface.
public struct DBusMethod: Sendable {
  /// What a method does: gets the call, returns the reply's values or throws. A thrown
  /// ``DBusError``'s ``DBusError/name`` becomes the error reply's name; any other error is sent
  /// as `org.freedesktop.DBus.Error.Failed` with its description.
  public typealias Handler = @Sendable (DBusMethodCall) async throws -> [DBusValue]

  /// The method name.
  public var name: String
  /// The input signature; calls with other arguments get an `InvalidArgs` error reply.
  public var inSignature: DBusSignature
  /// The output signature; a handler returning other values sends a `Failed` error reply.
  public var outSignature: DBusSignature
  /// Names of the input arguments for introspection (missing ones are `arg0`, `arg1`, …).
  public var inNames: [String]
  /// Names of the output arguments for introspection.
  public var outNames: [String]
  /// The handler, run in a task of its own for each call.
  public var handler: Handler

  /// Describes a method.
  ///
  /// - Parameters:
  ///   - name: the method name (`[A-Za-z_][A-Za-z0-9_]*`).
  ///   - inSignature: the input signature.
  ///   - outSignature: the output signature.
  ///   - inNames: argument names for introspection.
  ///   - outNames: result names for introspection.
  ///   - handler: runs for each call, off the bus thread.
  public init(
    _ name: String, in inSignature: DBusSignature = .empty,
    out outSignature: DBusSignature = .empty, inNames: [String] = [], outNames: [String] = [],
    handler: @escaping Handler
  ) {
    self.name = name
    self.inSignature = inSignature
    self.outSignature = outSignature
    self.inNames = inNames
    self.outNames = outNames
    self.handler = handler
  }
}
