/// A JSON value with deterministic serialisation, for building and reading MQTT payloads.
///
/// Objects keep their members in insertion order (see ``JSONObject``); integers and
/// floating-point numbers are kept apart so `1` stays `1` and a transaction id is echoed as sent.
///
/// ```swift
/// let payload: JSONValue = ["state": "online"]
/// payload.serialized()  // {"state":"online"}
/// ```
public enum JSONValue: Sendable, Hashable {
  /// `null`.
  case null
  /// `true` or `false`.
  case bool(Bool)
  /// A number without fraction or exponent that fits 64 bits.
  case integer(Int64)
  /// Any other number. Non-finite values serialise as `null`.
  case number(Double)
  /// A string.
  case string(String)
  /// An array.
  case array([JSONValue])
  /// An object.
  case object(JSONObject)

  /// The member `key` of an object, or `nil` (also for values that are not objects).
  ///
  /// - Parameter key: The member name.
  public subscript(key: String) -> JSONValue? {
    if case .object(let object) = self { return object[key] }
    return nil
  }

  /// The string of a ``string(_:)``, or `nil`.
  public var stringValue: String? {
    if case .string(let value) = self { return value }
    return nil
  }

  /// The value of a ``bool(_:)``, or `nil`.
  public var boolValue: Bool? {
    if case .bool(let value) = self { return value }
    return nil
  }

  /// The value of an ``integer(_:)``, or of a ``number(_:)`` that is a whole number in range;
  /// otherwise `nil`.
  public var integerValue: Int64? {
    switch self {
    case .integer(let value): value
    case .number(let value): Int64(exactly: value)
    default: nil
    }
  }

  /// The value of a ``number(_:)`` or ``integer(_:)`` as a `Double`, or `nil`.
  public var doubleValue: Double? {
    switch self {
    case .integer(let value): Double(value)
    case .number(let value): value
    default: nil
    }
  }

  /// The elements of an ``array(_:)``, or `nil`.
  public var arrayValue: [JSONValue]? {
    if case .array(let value) = self { return value }
    return nil
  }

  /// The members of an ``object(_:)``, or `nil`.
  public var objectValue: JSONObject? {
    if case .object(let value) = self { return value }
    return nil
  }

  /// Whether this is `null`, a boolean, a number or a string.
  public var isScalar: Bool {
    switch self {
    case .array, .object: false
    default: true
    }
  }

  /// The name of the JSON type, for error messages: `null`, `boolean`, `number`, `string`,
  /// `array` or `object`.
  public var typeName: String {
    switch self {
    case .null: "null"
    case .bool: "boolean"
    case .integer, .number: "number"
    case .string: "string"
    case .array: "array"
    case .object: "object"
    }
  }
}

extension JSONValue: ExpressibleByNilLiteral {
  /// Makes `null`.
  ///
  /// - Parameter nilLiteral: Nothing.
  public init(nilLiteral: ()) { self = .null }
}

extension JSONValue: ExpressibleByBooleanLiteral {
  /// Makes a boolean.
  ///
  /// - Parameter value: The boolean.
  public init(booleanLiteral value: Bool) { self = .bool(value) }
}

extension JSONValue: ExpressibleByIntegerLiteral {
  /// Makes an integer.
  ///
  /// - Parameter value: The integer.
  public init(integerLiteral value: Int64) { self = .integer(value) }
}

extension JSONValue: ExpressibleByFloatLiteral {
  /// Makes a number.
  ///
  /// - Parameter value: The number.
  public init(floatLiteral value: Double) { self = .number(value) }
}

extension JSONValue: ExpressibleByStringLiteral {
  /// Makes a string.
  ///
  /// - Parameter value: The string.
  public init(stringLiteral value: String) { self = .string(value) }
}

extension JSONValue: ExpressibleByArrayLiteral {
  /// Makes an array.
  ///
  /// - Parameter elements: The elements.
  public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
}

extension JSONValue: ExpressibleByDictionaryLiteral {
  /// Makes an object with the members in the written order.
  ///
  /// - Parameter elements: The members; a repeated key replaces the earlier value in place.
  public init(dictionaryLiteral elements: (String, JSONValue)...) {
    self = .object(JSONObject(elements))
  }
}
