/// The members of a JSON object, in insertion order, with unique keys.
///
/// Equality compares members in order: `{"a":1,"b":2}` and `{"b":2,"a":1}` serialise
/// differently and are different values.
public struct JSONObject: Sendable, Hashable, Sequence, ExpressibleByDictionaryLiteral {
  /// A member: a key and its value.
  public typealias Element = (key: String, value: JSONValue)

  /// The keys in insertion order.
  public private(set) var keys: [String] = []
  private var values: [String: JSONValue] = [:]

  /// Makes an empty object.
  public init() {}

  /// Makes an object from members in order.
  ///
  /// - Parameter members: The members; a repeated key replaces the earlier value in place.
  public init(_ members: some Sequence<(String, JSONValue)>) {
    for (key, value) in members { self[key] = value }
  }

  /// Makes an object with the members in the written order.
  ///
  /// - Parameter elements: The members; a repeated key replaces the earlier value in place.
  public init(dictionaryLiteral elements: (String, JSONValue)...) {
    self.init(elements)
  }

  /// The value of `key`; setting `nil` removes the member, setting a new key appends it, and
  /// setting an existing key replaces its value in place.
  ///
  /// - Parameter key: The member name.
  public subscript(key: String) -> JSONValue? {
    get { values[key] }
    set {
      switch (values[key] != nil, newValue) {
      case (true, nil):
        values[key] = nil
        keys.removeAll { $0 == key }
      case (false, let value?):
        keys.append(key)
        values[key] = value
      default:
        values[key] = newValue
      }
    }
  }

  /// The number of members.
  public var count: Int { keys.count }

  /// Whether the object has no members.
  public var isEmpty: Bool { keys.isEmpty }

  /// Iterates over the members in order.
  ///
  /// - Returns: An iterator over `(key, value)` pairs.
  public func makeIterator() -> some IteratorProtocol<Element> {
    var index = 0
    return AnyIterator { () -> Element? in
      guard index < keys.count else { return nil }
      defer { index += 1 }
      let key = keys[index]
      return (key, values[key] ?? .null)
    }
  }
}
