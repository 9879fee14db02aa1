/// A method call received by an exported object, as its handler sees it.
public struct DBusMethodCall: Sendable {
  /// The caller's unique name.
  public var sender: String
  /// The object path the call was addressed to.
  public var path: DBusObjectPath
  /// The interface of the method.
  public var interface: String
  /// The method name.
  public var member: String
  /// The arguments, matching the method's input signature.
  public var arguments: [DBusValue]
}
