internal import CDBus

/// Moves ``DBusValue``s into and out of libdbus message iterators (bus thread only).
///
/// Values are validated before they get here, so appending fails only when libdbus runs out of
/// memory or a file descriptor cannot be passed.
struct Marshaller {
  let allowFDs: Bool

  func append(_ value: DBusValue, to iter: inout DBusMessageIter) throws(DBusError) {
    if !allowFDs && Self.containsFD(value) {
      throw DBusError(.notSupported, "this connection cannot pass file descriptors")
    }
    guard appendValue(value, &iter) else {
      throw DBusError(.noMemory, "libdbus could not append a value of type \(value.signature)")
    }
  }

  private static func containsFD(_ value: DBusValue) -> Bool {
    switch value {
    case .unixFD: true
    case .array(_, let values), .structure(let values): values.contains(where: containsFD)
    case .dictionary(_, _, let entries): entries.contains { containsFD($0.0) || containsFD($0.1) }
    case .variant(let inner): containsFD(inner)
    default: false
    }
  }

  private func appendValue(_ value: DBusValue, _ iter: inout DBusMessageIter) -> Bool {
    switch value {
    case .byte(let v): return basic(&iter, CDBUS_TYPE_BYTE, v)
    case .bool(let v): return basic(&iter, CDBUS_TYPE_BOOLEAN, dbus_bool_t(v ? 1 : 0))
    case .int16(let v): return basic(&iter, CDBUS_TYPE_INT16, v)
    case .uint16(let v): return basic(&iter, CDBUS_TYPE_UINT16, v)
    case .int32(let v): return basic(&iter, CDBUS_TYPE_INT32, v)
    case .uint32(let v): return basic(&iter, CDBUS_TYPE_UINT32, v)
    case .int64(let v): return basic(&iter, CDBUS_TYPE_INT64, v)
    case .uint64(let v): return basic(&iter, CDBUS_TYPE_UINT64, v)
    case .double(let v): return basic(&iter, CDBUS_TYPE_DOUBLE, v)
    case .string(let v): return text(&iter, CDBUS_TYPE_STRING, v)
    case .objectPath(let v): return text(&iter, CDBUS_TYPE_OBJECT_PATH, v.rawValue)
    case .signature(let v): return text(&iter, CDBUS_TYPE_SIGNATURE, v.rawValue)
    case .unixFD(let fd):
      // libdbus duplicates the descriptor; `fd` keeps its own.
      return withExtendedLifetime(fd) { basic(&iter, CDBUS_TYPE_UNIX_FD, fd.rawValue) }
    case .array(let element, let values):
      return container(&iter, CDBUS_TYPE_ARRAY, element.rawValue) { sub in
        // A byte array (a value, a chunk of a transfer) in one call, not one per byte.
        if element.rawValue == "y", let bytes = value.bytesValue {
          guard bytes.count <= Self.maxArrayBytes else { return false }
          return bytes.withUnsafeBufferPointer { buffer in
            var base = buffer.baseAddress ?? UnsafePointer(bitPattern: 1)
            return dbus_message_iter_append_fixed_array(
              &sub, CDBUS_TYPE_BYTE, &base, Int32(buffer.count)) != 0
          }
        }
        for v in values where !appendValue(v, &sub) { return false }
        return true
      }
    case .dictionary(let key, let valueType, let entries):
      let entrySignature = "{" + key.rawValue + valueType.rawValue + "}"
      return container(&iter, CDBUS_TYPE_ARRAY, entrySignature) { sub in
        for (k, v) in entries {
          let ok = container(&sub, CDBUS_TYPE_DICT_ENTRY, nil) { entry in
            appendValue(k, &entry) && appendValue(v, &entry)
          }
          if !ok { return false }
        }
        return true
      }
    case .variant(let inner):
      return container(&iter, CDBUS_TYPE_VARIANT, inner.signatureText) { sub in
        appendValue(inner, &sub)
      }
    case .structure(let fields):
      return container(&iter, CDBUS_TYPE_STRUCT, nil) { sub in
        for v in fields where !appendValue(v, &sub) { return false }
        return true
      }
    }
  }

  /// The longest array D-Bus carries (64 MiB); a longer one is refused (libdbus would abort).
  static let maxArrayBytes = 67_108_864

  private func basic<T: BitwiseCopyable>(_ iter: inout DBusMessageIter, _ type: Int32, _ value: T)
    -> Bool
  {
    var copy = value
    return dbus_message_iter_append_basic(&iter, type, &copy) != 0
  }

  private func text(_ iter: inout DBusMessageIter, _ type: Int32, _ value: String) -> Bool {
    value.withCString { pointer in
      var p: UnsafePointer<CChar>? = pointer
      return dbus_message_iter_append_basic(&iter, type, &p) != 0
    }
  }

  private func container(
    _ iter: inout DBusMessageIter, _ type: Int32, _ signature: String?,
    _ body: (inout DBusMessageIter) -> Bool
  ) -> Bool {
    var sub = DBusMessageIter()
    guard dbus_message_iter_open_container(&iter, type, signature, &sub) != 0 else {
      return false
    }
    guard body(&sub) else {
      dbus_message_iter_abandon_container(&iter, &sub)
      return false
    }
    return dbus_message_iter_close_container(&iter, &sub) != 0
  }

  // MARK: reading

  /// Reads every value from the iterator's position to the end of its container.
  static func readAll(_ iter: inout DBusMessageIter) -> [DBusValue] {
    var values: [DBusValue] = []
    while true {
      let type = dbus_message_iter_get_arg_type(&iter)
      if type == CDBUS_TYPE_INVALID { break }
      if let value = read(&iter, type) { values.append(value) }
      if dbus_message_iter_next(&iter) == 0 { break }
    }
    return values
  }

  private static func get<T: BitwiseCopyable>(_ iter: inout DBusMessageIter, _ initial: T) -> T {
    var value = initial
    dbus_message_iter_get_basic(&iter, &value)
    return value
  }

  private static func getText(_ iter: inout DBusMessageIter) -> String {
    var pointer: UnsafePointer<CChar>? = nil
    dbus_message_iter_get_basic(&iter, &pointer)
    return pointer.map { String(cString: $0) } ?? ""
  }

  /// The signature of the complete type at the iterator's position.
  private static func signature(_ iter: inout DBusMessageIter) -> String {
    guard let raw = dbus_message_iter_get_signature(&iter) else { return "" }
    defer { dbus_free(raw) }
    return String(cString: raw)
  }

  private static func read(_ iter: inout DBusMessageIter, _ type: Int32) -> DBusValue? {
    switch type {
    case CDBUS_TYPE_BYTE: return .byte(get(&iter, UInt8(0)))
    case CDBUS_TYPE_BOOLEAN: return .bool(get(&iter, dbus_bool_t(0)) != 0)
    case CDBUS_TYPE_INT16: return .int16(get(&iter, Int16(0)))
    case CDBUS_TYPE_UINT16: return .uint16(get(&iter, UInt16(0)))
    case CDBUS_TYPE_INT32: return .int32(get(&iter, Int32(0)))
    case CDBUS_TYPE_UINT32: return .uint32(get(&iter, UInt32(0)))
    case CDBUS_TYPE_INT64: return .int64(get(&iter, Int64(0)))
    case CDBUS_TYPE_UINT64: return .uint64(get(&iter, UInt64(0)))
    case CDBUS_TYPE_DOUBLE: return .double(get(&iter, Double(0)))
    case CDBUS_TYPE_STRING: return .string(getText(&iter))
    case CDBUS_TYPE_OBJECT_PATH: return .objectPath(DBusObjectPath(unchecked: getText(&iter)))
    case CDBUS_TYPE_SIGNATURE: return .signature(DBusSignature(unchecked: getText(&iter)))
    case CDBUS_TYPE_UNIX_FD:
      // libdbus hands out a duplicate that the caller owns.
      let fd = get(&iter, Int32(-1))
      return fd >= 0 ? .unixFD(DBusFileDescriptor(taking: fd)) : nil
    case CDBUS_TYPE_ARRAY where dbus_message_iter_get_element_type(&iter) == CDBUS_TYPE_BYTE:
      // A byte array (a value, advertising data) in one call, not three per byte.
      var sub = DBusMessageIter()
      dbus_message_iter_recurse(&iter, &sub)
      var base: UnsafeMutableRawPointer? = nil
      var count: Int32 = 0
      dbus_message_iter_get_fixed_array(&sub, &base, &count)
      guard count > 0, let base else { return .array(DBusSignature(unchecked: "y"), []) }
      let bytes = UnsafeBufferPointer(
        start: base.assumingMemoryBound(to: UInt8.self), count: Int(count))
      return .array(DBusSignature(unchecked: "y"), bytes.map { .byte($0) })
    case CDBUS_TYPE_ARRAY:
      let arraySignature = signature(&iter)
      let element = String(arraySignature.dropFirst())
      var sub = DBusMessageIter()
      dbus_message_iter_recurse(&iter, &sub)
      if dbus_message_iter_get_element_type(&iter) == CDBUS_TYPE_DICT_ENTRY {
        guard let types = NameRules.completeTypes(String(element.dropFirst().dropLast())),
          types.count == 2
        else { return nil }
        var entries: [(DBusValue, DBusValue)] = []
        while dbus_message_iter_get_arg_type(&sub) == CDBUS_TYPE_DICT_ENTRY {
          var entry = DBusMessageIter()
          dbus_message_iter_recurse(&sub, &entry)
          let pair = readAll(&entry)
          if pair.count == 2 { entries.append((pair[0], pair[1])) }
          if dbus_message_iter_next(&sub) == 0 { break }
        }
        return .dictionary(
          key: DBusSignature(unchecked: types[0]), value: DBusSignature(unchecked: types[1]),
          entries)
      }
      return .array(DBusSignature(unchecked: element), readAll(&sub))
    case CDBUS_TYPE_VARIANT:
      var sub = DBusMessageIter()
      dbus_message_iter_recurse(&iter, &sub)
      let inner = dbus_message_iter_get_arg_type(&sub)
      return read(&sub, inner).map { .variant($0) }
    case CDBUS_TYPE_STRUCT:
      var sub = DBusMessageIter()
      dbus_message_iter_recurse(&iter, &sub)
      return .structure(readAll(&sub))
    default:
      return nil
    }
  }
}
