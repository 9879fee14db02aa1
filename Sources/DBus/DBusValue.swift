/// A D-Bus value of any type, as sent in or received from a message.
///
/// Containers carry the signature of their elements so that empty arrays and dictionaries
/// keep their type. Sending a value validates it first: every element of an array must have
/// the declared element signature, dictionary keys must be basic types, strings must not
/// contain NUL.
public indirect enum DBusValue: Sendable, Equatable, CustomStringConvertible {
  /// `y`: an unsigned byte.
  case byte(UInt8)
  /// `b`: a boolean.
  case bool(Bool)
  /// `n`: a signed 16-bit integer.
  case int16(Int16)
  /// `q`: an unsigned 16-bit integer.
  case uint16(UInt16)
  /// `i`: a signed 32-bit integer.
  case int32(Int32)
  /// `u`: an unsigned 32-bit integer.
  case uint32(UInt32)
  /// `x`: a signed 64-bit integer.
  case int64(Int64)
  /// `t`: an unsigned 64-bit integer.
  case uint64(UInt64)
  /// `d`: an IEEE 754 double.
  case double(Double)
  /// `s`: a UTF-8 string without NUL characters.
  case string(String)
  /// `o`: an object path.
  case objectPath(DBusObjectPath)
  /// `g`: a type signature.
  case signature(DBusSignature)
  /// `h`: a Unix file descriptor.
  case unixFD(DBusFileDescriptor)
  /// `a…`: an array of values that all have the element signature.
  case array(DBusSignature, [DBusValue])
  /// `a{…}`: a dictionary; keys have the (basic) key signature, values the value signature.
  /// Entries keep their order on the wire.
  case dictionary(key: DBusSignature, value: DBusSignature, [(DBusValue, DBusValue)])
  /// `v`: a value carrying its own type.
  case variant(DBusValue)
  /// `(…)`: a structure of one or more values.
  case structure([DBusValue])

  /// The value's type signature, e.g. `a{sv}` for a property dictionary.
  public var signature: DBusSignature { DBusSignature(unchecked: signatureText) }

  var signatureText: String {
    switch self {
    case .byte: "y"
    case .bool: "b"
    case .int16: "n"
    case .uint16: "q"
    case .int32: "i"
    case .uint32: "u"
    case .int64: "x"
    case .uint64: "t"
    case .double: "d"
    case .string: "s"
    case .objectPath: "o"
    case .signature: "g"
    case .unixFD: "h"
    case .array(let element, _): "a" + element.rawValue
    case .dictionary(let key, let value, _): "a{" + key.rawValue + value.rawValue + "}"
    case .variant: "v"
    case .structure(let fields): "(" + fields.map(\.signatureText).joined() + ")"
    }
  }

  /// Compares values structurally; file descriptors are equal when they are the same object.
  public static func == (lhs: DBusValue, rhs: DBusValue) -> Bool {
    switch (lhs, rhs) {
    case (.byte(let a), .byte(let b)): a == b
    case (.bool(let a), .bool(let b)): a == b
    case (.int16(let a), .int16(let b)): a == b
    case (.uint16(let a), .uint16(let b)): a == b
    case (.int32(let a), .int32(let b)): a == b
    case (.uint32(let a), .uint32(let b)): a == b
    case (.int64(let a), .int64(let b)): a == b
    case (.uint64(let a), .uint64(let b)): a == b
    case (.double(let a), .double(let b)): a == b
    case (.string(let a), .string(let b)): a == b
    case (.objectPath(let a), .objectPath(let b)): a == b
    case (.signature(let a), .signature(let b)): a == b
    case (.unixFD(let a), .unixFD(let b)): a === b
    case (.array(let s1, let a), .array(let s2, let b)): s1 == s2 && a == b
    case (.dictionary(let k1, let v1, let a), .dictionary(let k2, let v2, let b)):
      k1 == k2 && v1 == v2 && a.count == b.count
        && zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
    case (.variant(let a), .variant(let b)): a == b
    case (.structure(let a), .structure(let b)): a == b
    default: false
    }
  }

  /// A readable rendering in the style of `busctl`, e.g. `a{sv} {"Powered": <true>}`.
  public var description: String {
    switch self {
    case .byte(let v): "\(v)"
    case .bool(let v): "\(v)"
    case .int16(let v): "\(v)"
    case .uint16(let v): "\(v)"
    case .int32(let v): "\(v)"
    case .uint32(let v): "\(v)"
    case .int64(let v): "\(v)"
    case .uint64(let v): "\(v)"
    case .double(let v): "\(v)"
    case .string(let v): "\"\(v)\""
    case .objectPath(let v): "objpath \(v)"
    case .signature(let v): "signature \(v)"
    case .unixFD(let v): "\(v)"
    case .array(_, let values): "[" + values.map(\.description).joined(separator: ", ") + "]"
    case .dictionary(_, _, let entries):
      "{" + entries.map { "\($0.0): \($0.1)" }.joined(separator: ", ") + "}"
    case .variant(let v): "<\(v)>"
    case .structure(let v): "(" + v.map(\.description).joined(separator: ", ") + ")"
    }
  }
}
