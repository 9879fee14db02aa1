/// A signal received from the bus.
///
/// Two signals are equal when their header fields and arguments are: ``serial`` says when it
/// was sent, not what it is, and is left out.
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
  /// The sender's serial of the message (0 for a signal made here): each connection numbers
  /// the messages it sends in order, so a signal and a reply of one sender can be ordered
  /// (``DBusConnection/orderedCall(destination:path:interface:member:arguments:timeout:)``;
  /// ``DBusSerial/isAfter(_:_:)``).
  public var serial: UInt32 = 0

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

  /// Equal header fields and arguments (``serial`` left out).
  public static func == (lhs: DBusSignal, rhs: DBusSignal) -> Bool {
    lhs.sender == rhs.sender && lhs.path == rhs.path && lhs.interface == rhs.interface
      && lhs.member == rhs.member && lhs.destination == rhs.destination
      && lhs.arguments == rhs.arguments
  }
}

/// Orders the serials one D-Bus connection gives the messages it sends.
public enum DBusSerial {
  /// Whether the message numbered `serial` was sent after the one numbered `other` by the
  /// same connection (serials wrap around at 2³², so the nearer way round decides).
  ///
  /// - Parameters:
  ///   - serial: A message's serial.
  ///   - other: Another's, from the same sender.
  /// - Returns: `true` when `serial` comes later.
  public static func isAfter(_ serial: UInt32, _ other: UInt32) -> Bool {
    Int32(bitPattern: serial &- other) > 0
  }
}
