/// An object served on the bus by ``DBusConnection/export(_:at:)``.
///
/// The connection answers `org.freedesktop.DBus.Introspectable`,
/// `org.freedesktop.DBus.Properties` (`Get`, `GetAll`, `Set`) and `org.freedesktop.DBus.Peer`
/// for it, and lists it in `GetManagedObjects` of the nearest object manager above it.
public struct DBusExportedObject: Sendable {
  /// The object's own interfaces.
  public var interfaces: [DBusInterface]

  /// Describes an object.
  ///
  /// - Parameter interfaces: its interfaces (without the standard ones).
  public init(interfaces: [DBusInterface]) {
    self.interfaces = interfaces
  }

  /// The interface called `name`, if any.
  ///
  /// - Parameter name: the interface name.
  /// - Returns: the interface description.
  public func interface(named name: String) -> DBusInterface? {
    interfaces.first { $0.name == name }
  }
}
