internal import CDBus

/// Entry points for the fuzzers in `Fuzz/` (not part of the supported API).
@_spi(Fuzzing)
public enum DBusFuzzing {
  /// Reads a wire-format D-Bus message the way the bus thread reads one that arrives: libdbus
  /// checks the bytes (`dbus_message_demarshal`), then every argument becomes a ``DBusValue``.
  /// Unix descriptors cannot come from bytes alone; libdbus refuses messages that claim them.
  ///
  /// - Parameter bytes: The message, header and body.
  /// - Returns: The arguments, or `nil` when libdbus refuses the bytes.
  public static func decodeMessage(_ bytes: [UInt8]) -> [DBusValue]? {
    guard !bytes.isEmpty, bytes.count < Int(Int32.max) else { return nil }
    var error = CDBus.DBusError()
    dbus_error_init(&error)
    let message = bytes.withUnsafeBufferPointer { buffer in
      buffer.baseAddress!.withMemoryRebound(to: CChar.self, capacity: buffer.count) {
        dbus_message_demarshal($0, Int32(buffer.count), &error)
      }
    }
    dbus_error_free(&error)
    guard let message else { return nil }
    defer { dbus_message_unref(message) }
    var iter = DBusMessageIter()
    guard dbus_message_iter_init(message, &iter) != 0 else { return [] }
    return Marshaller.readAll(&iter)
  }
}
