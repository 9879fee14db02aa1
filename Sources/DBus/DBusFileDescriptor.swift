import Glibc

/// An open Unix file descriptor passed over D-Bus, closed when the last reference goes away.
///
/// Descriptors received in messages are duplicates owned by this wrapper; sending one lets
/// libdbus duplicate it again, so the wrapper keeps its own.
public final class DBusFileDescriptor: Sendable, CustomStringConvertible {
  /// The descriptor number; valid while this object is alive.
  public let rawValue: Int32

  /// Takes ownership of `fd`: it is closed when this object is deinitialised.
  ///
  /// - Parameter fd: an open file descriptor nobody else closes.
  public init(taking fd: Int32) {
    rawValue = fd
  }

  /// Duplicates `fd` (with close-on-exec); the caller keeps ownership of `fd`.
  ///
  /// - Parameter fd: an open file descriptor.
  /// - Throws: ``DBusError`` `invalid_argument` when `fd` cannot be duplicated.
  public init(duplicating fd: Int32) throws(DBusError) {
    let copy = fcntl(fd, F_DUPFD_CLOEXEC, 0)
    guard copy >= 0 else {
      throw DBusError(
        .invalidArgument, "cannot duplicate fd \(fd): \(String(cString: strerror(errno)))")
    }
    rawValue = copy
  }

  deinit {
    close(rawValue)
  }

  /// `fd <n>`.
  public var description: String { "fd \(rawValue)" }
}
