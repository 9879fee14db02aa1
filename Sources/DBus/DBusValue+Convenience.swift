extension DBusValue {
  /// An `ay` byte array.
  ///
  /// - Parameter bytes: the bytes.
  /// - Returns: `.array("y", bytes.map(.byte))`.
  public static func bytes(_ bytes: [UInt8]) -> DBusValue {
    .array(DBusSignature(unchecked: "y"), bytes.map { .byte($0) })
  }

  /// An `as` string array.
  ///
  /// - Parameter strings: the strings.
  /// - Returns: `.array("s", strings.map(.string))`.
  public static func strings(_ strings: [String]) -> DBusValue {
    .array(DBusSignature(unchecked: "s"), strings.map { .string($0) })
  }

  /// An `a{sv}` property dictionary with keys in ascending order.
  ///
  /// - Parameter properties: names and values; each value is wrapped in a variant.
  /// - Returns: the dictionary value.
  public static func properties(_ properties: [String: DBusValue]) -> DBusValue {
    .dictionary(
      key: DBusSignature(unchecked: "s"), value: DBusSignature(unchecked: "v"),
      properties.sorted { $0.key < $1.key }.map { (.string($0.key), .variant($0.value)) })
  }

  /// The value inside any number of variants.
  public var unwrapped: DBusValue {
    if case .variant(let inner) = self { return inner.unwrapped }
    return self
  }

  /// The string of an `s`, `o` or `g` value (through variants), else nil.
  public var stringValue: String? {
    switch unwrapped {
    case .string(let v): v
    case .objectPath(let v): v.rawValue
    case .signature(let v): v.rawValue
    default: nil
    }
  }

  /// The boolean of a `b` value (through variants), else nil.
  public var boolValue: Bool? {
    if case .bool(let v) = unwrapped { return v }
    return nil
  }

  /// Any integer value (through variants) as `Int64` when it fits, else nil.
  public var integerValue: Int64? {
    switch unwrapped {
    case .byte(let v): Int64(v)
    case .int16(let v): Int64(v)
    case .uint16(let v): Int64(v)
    case .int32(let v): Int64(v)
    case .uint32(let v): Int64(v)
    case .int64(let v): v
    case .uint64(let v): Int64(exactly: v)
    default: nil
    }
  }

  /// The bytes of an `ay` value (through variants), else nil (also when an element is not a
  /// byte).
  public var bytesValue: [UInt8]? {
    guard case .array(let element, let values) = unwrapped, element.rawValue == "y" else {
      return nil
    }
    var bytes: [UInt8] = []
    bytes.reserveCapacity(values.count)
    for value in values {
      guard case .byte(let byte) = value else { return nil }
      bytes.append(byte)
    }
    return bytes
  }

  /// The elements of an array value (through variants), else nil.
  public var arrayValues: [DBusValue]? {
    if case .array(_, let values) = unwrapped { return values }
    return nil
  }

  /// The entries of a dictionary value with string keys (through variants), variants
  /// unwrapped; nil for other values. Later duplicate keys win.
  public var propertyMap: [String: DBusValue]? {
    guard case .dictionary(_, _, let entries) = unwrapped else { return nil }
    var map: [String: DBusValue] = [:]
    for (key, value) in entries {
      guard let name = key.stringValue else { return nil }
      map[name] = value.unwrapped
    }
    return map
  }
}
