/// A device's id, the `<dev>` part of the device topics.
///
/// Either the MAC without colons in upper case (`A4C1381E29DF`) or a friendly name from the
/// configuration, which may use `/` for hierarchy (`kitchen/thermometer`).
///
/// Equality, hashing and ordering compare UTF-8 bytes, as MQTT compares topics.
public struct DeviceID: Sendable, Hashable, Comparable, CustomStringConvertible {
  /// Why a string cannot be a friendly name.
  public typealias Error = TopicError

  /// The most UTF-8 bytes a friendly name may have.
  public static let maximumByteCount = 1024

  /// The id as it appears in topics.
  public let rawValue: String

  /// The id of a device known by its address: `A4C1381E29DF`.
  ///
  /// - Parameter address: The device's address.
  public init(address: BluetoothAddress) {
    rawValue = address.compactForm
  }

  /// Validates a friendly name from the configuration.
  ///
  /// A friendly name is one or more non-empty levels separated by `/`, without wildcards, NUL or
  /// control characters, at most ``maximumByteCount`` bytes, and its first level is not `bridge`
  /// (which would collide with `<base>/bridge/…`).
  ///
  /// - Parameter friendlyName: The name, for example `kitchen/thermometer`.
  /// - Throws: ``TopicError`` naming the first problem found.
  public init(friendlyName: String) throws(TopicError) {
    try TopicRules.validate(friendlyName, kind: .name, limit: Self.maximumByteCount)
    if let first = TopicRules.levels(friendlyName).first, first == "bridge" {
      throw .reservedName("bridge")
    }
    rawValue = friendlyName
  }

  /// The levels of the id; more than one only for hierarchical friendly names.
  public var levels: [Substring] { TopicRules.levels(rawValue) }

  /// The id itself.
  public var description: String { rawValue }

  /// Whether both ids have the same bytes.
  public static func == (lhs: DeviceID, rhs: DeviceID) -> Bool {
    lhs.rawValue.hasSameBytes(as: rhs.rawValue)
  }

  /// Hashes the id's bytes.
  public func hash(into hasher: inout Hasher) {
    for byte in rawValue.utf8 { hasher.combine(byte) }
  }

  /// Orders ids by their bytes.
  public static func < (lhs: DeviceID, rhs: DeviceID) -> Bool {
    lhs.rawValue.utf8.lexicographicallyPrecedes(rhs.rawValue.utf8)
  }
}
