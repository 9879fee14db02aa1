/// A signal received from the bus.
public struct DBusSignal: Sendable, Equatable {
  /// The unique name of the sender (e.g. `:1.7`), or `org.freedesktop.DBus` for the bus itself.
  public var sender: String
  /// The object that emitted it.
  public var path: DBusObjectPath
  /// The interface, e.g. `org.freedesktop.DBus.Properties`.
  public var interface: String
  /// The signal name, e.g. `PropertiesChanged`.
  public var member: String
  /// The destination when the signal was unicast, else nil.
  public var destination: String?
  /// The arguments.
  public var arguments: [DBusValue]

  /// Creates a signal value (for tests and for routing).
  ///
  /// - Parameters:
  ///   - sender: the sender's unique name.
  ///   - path: the emitting object.
  ///   - interface: the interface name.
  ///   - member: the signal name.
  ///   - destination: the unicast destination, if any.
  ///   - arguments: the arguments.
  public init(
    sender: String, path: DBusObjectPath, interface: String, member: String,
    destination: String? = nil, arguments: [DBusValue]
  ) {
    self.sender = sender
    self.path = path
    self.interface = interface
    self.member = member
    self.destination = destination
    self.arguments = arguments
  }
}
