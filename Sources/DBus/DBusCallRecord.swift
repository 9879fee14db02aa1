/// One method call a ``DBusConnection`` made, as its call observer sees it
/// (``DBusConnection/observeCalls(_:)``).
public struct DBusCallRecord: Sendable, Hashable {
  /// The method's interface, if the call named one.
  public var interface: String?
  /// The method's name.
  public var member: String
  /// Seconds from the call to its reply, error or timeout.
  public var seconds: Double
  /// Whether the reply was a method return (not an error, a timeout or a cancellation).
  public var succeeded: Bool

  /// Makes a record.
  ///
  /// - Parameters:
  ///   - interface: The method's interface.
  ///   - member: The method's name.
  ///   - seconds: How long the call took.
  ///   - succeeded: Whether it succeeded.
  public init(interface: String?, member: String, seconds: Double, succeeded: Bool) {
    self.interface = interface
    self.member = member
    self.seconds = seconds
    self.succeeded = succeeded
  }
}
