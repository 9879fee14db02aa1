/// The bus's answer to `RequestName`.
public enum DBusRequestNameReply: UInt32, Sendable, Hashable {
  /// We own the name now.
  case primaryOwner = 1
  /// Someone else owns it; we are queued.
  case inQueue = 2
  /// Someone else owns it and we asked not to be queued.
  case exists = 3
  /// We owned it already.
  case alreadyOwner = 4
}
