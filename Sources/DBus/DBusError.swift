/// An error of the D-Bus binding: a stable ``code``, the D-Bus error ``name`` and a ``message``.
///
/// Error replies from peers keep their D-Bus error name (for example
/// `org.bluez.Error.InProgress`); well-known names map to a specific ``Code`` and every other
/// name to ``Code/remote``. Errors raised locally (validation, disconnection, cancellation) carry
/// the standard D-Bus name closest to their meaning.
public struct DBusError: Error, Sendable, Hashable, CustomStringConvertible {
  /// What kind of failure this is; stable across releases.
  public enum Code: String, Sendable, Hashable, CaseIterable {
    /// A value, name or signature was invalid before anything was sent.
    case invalidArgument = "invalid_argument"
    /// The bus could not be reached or refused the connection.
    case connectionFailed = "connection_failed"
    /// The connection is closed or was lost.
    case disconnected
    /// The operation was cancelled by the calling task.
    case cancelled
    /// libdbus ran out of memory.
    case noMemory = "no_memory"
    /// No reply arrived in time (`org.freedesktop.DBus.Error.NoReply`, `…Timeout`).
    case noReply = "no_reply"
    /// The destination name has no owner (`org.freedesktop.DBus.Error.ServiceUnknown`).
    case serviceUnknown = "service_unknown"
    /// The name has no owner (`org.freedesktop.DBus.Error.NameHasNoOwner`).
    case nameHasNoOwner = "name_has_no_owner"
    /// No object at the path (`org.freedesktop.DBus.Error.UnknownObject`).
    case unknownObject = "unknown_object"
    /// The object has no such interface (`org.freedesktop.DBus.Error.UnknownInterface`).
    case unknownInterface = "unknown_interface"
    /// The interface has no such method (`org.freedesktop.DBus.Error.UnknownMethod`).
    case unknownMethod = "unknown_method"
    /// The interface has no such property (`org.freedesktop.DBus.Error.UnknownProperty`).
    case unknownProperty = "unknown_property"
    /// The property cannot be written (`org.freedesktop.DBus.Error.PropertyReadOnly`).
    case propertyReadOnly = "property_read_only"
    /// The peer refused the arguments (`org.freedesktop.DBus.Error.InvalidArgs`).
    case invalidArgs = "invalid_args"
    /// The bus policy forbids it (`org.freedesktop.DBus.Error.AccessDenied`).
    case accessDenied = "access_denied"
    /// A bus limit was hit, e.g. too many pending replies (`…LimitsExceeded`).
    case limitsExceeded = "limits_exceeded"
    /// The peer does not support the operation (`org.freedesktop.DBus.Error.NotSupported`).
    case notSupported = "not_supported"
    /// A generic failure (`org.freedesktop.DBus.Error.Failed`).
    case failed
    /// A reply did not have the expected arguments.
    case unexpectedReply = "unexpected_reply"
    /// Any other error name sent by a peer (for example `org.bluez.Error.InProgress`).
    case remote
  }

  /// The kind of failure.
  public var code: Code
  /// The D-Bus error name, e.g. `org.freedesktop.DBus.Error.UnknownMethod`.
  public var name: String
  /// What happened, for people.
  public var message: String

  /// Creates an error with a D-Bus error name, as a method handler throws it to the caller.
  ///
  /// - Parameters:
  ///   - name: the D-Bus error name sent in the error reply; an invalid name is replaced by
  ///     `org.freedesktop.DBus.Error.Failed` when the reply is sent.
  ///   - message: the human-readable text of the reply.
  public init(name: String, message: String) {
    self.name = name
    self.message = message
    self.code = Self.codesByName[name] ?? .remote
  }

  /// Creates an error of a given code with the standard D-Bus name for it.
  ///
  /// - Parameters:
  ///   - code: the kind of failure.
  ///   - message: what happened, for people.
  public init(_ code: Code, _ message: String) {
    self.code = code
    self.message = message
    self.name = Self.namesByCode[code] ?? "org.freedesktop.DBus.Error.Failed"
  }

  /// `"<code> <name>: <message>"`.
  public var description: String { "\(code.rawValue) \(name): \(message)" }

  private static let prefix = "org.freedesktop.DBus.Error."

  private static let namesByCode: [Code: String] = [
    .invalidArgument: prefix + "InvalidArgs",
    .connectionFailed: prefix + "NoServer",
    .disconnected: prefix + "Disconnected",
    .noMemory: prefix + "NoMemory",
    .noReply: prefix + "NoReply",
    .serviceUnknown: prefix + "ServiceUnknown",
    .nameHasNoOwner: prefix + "NameHasNoOwner",
    .unknownObject: prefix + "UnknownObject",
    .unknownInterface: prefix + "UnknownInterface",
    .unknownMethod: prefix + "UnknownMethod",
    .unknownProperty: prefix + "UnknownProperty",
    .propertyReadOnly: prefix + "PropertyReadOnly",
    .invalidArgs: prefix + "InvalidArgs",
    .accessDenied: prefix + "AccessDenied",
    .limitsExceeded: prefix + "LimitsExceeded",
    .notSupported: prefix + "NotSupported",
    .failed: prefix + "Failed",
    .unexpectedReply: prefix + "InvalidSignature",
    .cancelled: prefix + "Failed",
  ]

  private static let codesByName: [String: Code] = [
    prefix + "NoReply": .noReply,
    prefix + "Timeout": .noReply,
    prefix + "TimedOut": .noReply,
    prefix + "NoServer": .connectionFailed,
    prefix + "Disconnected": .disconnected,
    prefix + "NoMemory": .noMemory,
    prefix + "ServiceUnknown": .serviceUnknown,
    prefix + "NameHasNoOwner": .nameHasNoOwner,
    prefix + "UnknownObject": .unknownObject,
    prefix + "UnknownInterface": .unknownInterface,
    prefix + "UnknownMethod": .unknownMethod,
    prefix + "UnknownProperty": .unknownProperty,
    prefix + "PropertyReadOnly": .propertyReadOnly,
    prefix + "InvalidArgs": .invalidArgs,
    prefix + "AccessDenied": .accessDenied,
    prefix + "LimitsExceeded": .limitsExceeded,
    prefix + "NotSupported": .notSupported,
    prefix + "Failed": .failed,
  ]
}
