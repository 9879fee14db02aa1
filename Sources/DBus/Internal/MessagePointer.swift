internal import CDBus

/// The header fields and arguments of a received message, copied out of libdbus.
struct IncomingMessage: Sendable {
  enum Kind: Sendable { case methodCall, methodReturn, error, signal, other }

  var kind: Kind
  var sender: String
  var destination: String?
  var path: DBusObjectPath?
  var interface: String?
  var member: String?
  var errorName: String?
  var noReplyExpected: Bool
  var arguments: [DBusValue]
  /// The sender's serial of the message (``DBusSignal/serial``).
  var serial: UInt32 = 0

  /// The signal this message is, for signals with a path, interface and member.
  var signal: DBusSignal? {
    guard kind == .signal, let path, let interface, let member else { return nil }
    var signal = DBusSignal(
      sender: sender, path: path, interface: interface, member: member,
      destination: destination, arguments: arguments)
    signal.serial = serial
    return signal
  }

  /// The error this message carries (name + first string argument), for error replies.
  var error: DBusError? {
    guard kind == .error else { return nil }
    var text = ""
    if case .string(let first)? = arguments.first { text = first }
    return DBusError(name: errorName ?? "org.freedesktop.DBus.Error.Failed", message: text)
  }
}

/// Owns one reference to a libdbus `DBusMessage`; every use happens on the bus thread.
final class MessagePointer {
  let raw: OpaquePointer

  /// Takes over a reference the caller owns (a `new` or `steal` result).
  init(owning raw: OpaquePointer) {
    self.raw = raw
  }

  /// Adds a reference to a message libdbus lends us (e.g. inside a filter).
  init(retaining raw: OpaquePointer) {
    dbus_message_ref(raw)
    self.raw = raw
  }

  deinit {
    dbus_message_unref(raw)
  }

  // MARK: creating messages (names are validated by the callers)

  static func methodCall(
    destination: String?, path: DBusObjectPath, interface: String?, member: String
  ) throws(DBusError) -> MessagePointer {
    guard let raw = dbus_message_new_method_call(destination, path.rawValue, interface, member)
    else { throw DBusError(.noMemory, "cannot create a method call") }
    return MessagePointer(owning: raw)
  }

  static func signal(
    path: DBusObjectPath, interface: String, member: String, destination: String?
  ) throws(DBusError) -> MessagePointer {
    guard let raw = dbus_message_new_signal(path.rawValue, interface, member) else {
      throw DBusError(.noMemory, "cannot create a signal")
    }
    let message = MessagePointer(owning: raw)
    if let destination, dbus_message_set_destination(raw, destination) == 0 {
      throw DBusError(.noMemory, "cannot set the signal's destination")
    }
    return message
  }

  func methodReturn() throws(DBusError) -> MessagePointer {
    guard let reply = dbus_message_new_method_return(raw) else {
      throw DBusError(.noMemory, "cannot create a method return")
    }
    return MessagePointer(owning: reply)
  }

  func errorReply(name: String, message: String) throws(DBusError) -> MessagePointer {
    let valid = NameRules.isValidInterfaceName(name) ? name : "org.freedesktop.DBus.Error.Failed"
    let text = message.replacingOccurrences(of: "\0", with: " ")
    guard let reply = dbus_message_new_error(raw, valid, text) else {
      throw DBusError(.noMemory, "cannot create an error reply")
    }
    return MessagePointer(owning: reply)
  }

  func setNoReply() {
    dbus_message_set_no_reply(raw, 1)
  }

  // MARK: arguments

  /// Appends validated values; `allowFDs` is false when the connection cannot pass fds.
  func append(_ values: [DBusValue], allowFDs: Bool) throws(DBusError) {
    var iter = DBusMessageIter()
    dbus_message_iter_init_append(raw, &iter)
    let marshaller = Marshaller(allowFDs: allowFDs)
    for value in values {
      try marshaller.append(value, to: &iter)
    }
  }

  /// Copies the header and the arguments out of the message.
  func read() -> IncomingMessage {
    let kind: IncomingMessage.Kind
    switch dbus_message_get_type(raw) {
    case DBUS_MESSAGE_TYPE_METHOD_CALL: kind = .methodCall
    case DBUS_MESSAGE_TYPE_METHOD_RETURN: kind = .methodReturn
    case DBUS_MESSAGE_TYPE_ERROR: kind = .error
    case DBUS_MESSAGE_TYPE_SIGNAL: kind = .signal
    default: kind = .other
    }
    func text(_ pointer: UnsafePointer<CChar>?) -> String? { pointer.map { String(cString: $0) } }
    var iter = DBusMessageIter()
    var arguments: [DBusValue] = []
    if dbus_message_iter_init(raw, &iter) != 0 {
      arguments = Marshaller.readAll(&iter)
    }
    return IncomingMessage(
      kind: kind,
      sender: text(dbus_message_get_sender(raw)) ?? "",
      destination: text(dbus_message_get_destination(raw)),
      path: text(dbus_message_get_path(raw)).map { DBusObjectPath(unchecked: $0) },
      interface: text(dbus_message_get_interface(raw)),
      member: text(dbus_message_get_member(raw)),
      errorName: text(dbus_message_get_error_name(raw)),
      noReplyExpected: dbus_message_get_no_reply(raw) != 0,
      arguments: arguments, serial: dbus_message_get_serial(raw))
  }
}
