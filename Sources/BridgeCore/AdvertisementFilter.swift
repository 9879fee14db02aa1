/// Which advertisements the gateway publishes (C2): every criterion that is set must hold.
///
/// - `deny`: the address is not listed (deny wins over allow);
/// - `allow`: the address is listed, when the list is not empty;
/// - `min_rssi`: the RSSI is known and at least this many dBm (an advertisement without RSSI is
///   a device the stack only remembers, not one heard now);
/// - `uuids`: the device advertises one of these service UUIDs, in its service UUIDs or its
///   service data, when the list is not empty;
/// - `name`: the device has a name that matches this ``NamePattern``.
///
/// JSON form (a `scan` request's `"filter"`, and the configuration):
/// `{"uuids":["180f"],"name":"Thermo*","allow":["A4:C1:38:1E:29:DF"],"deny":[],"min_rssi":-90}`,
/// every key optional.
public struct AdvertisementFilter: Sendable, Hashable {
  /// Why a JSON filter is not valid. Every case has the code `invalid_payload`.
  public enum Error: Swift.Error, Sendable, Hashable, CustomStringConvertible {
    /// The filter's structure is wrong: not an object, an unknown key, a wrong type.
    case payload(PayloadError)
    /// The UUID at this index of `"uuids"` is malformed.
    case invalidUUID(index: Int, BluetoothUUID.Error)
    /// The address at this index of `"allow"` or `"deny"` is malformed.
    case invalidAddress(key: String, index: Int, BluetoothAddress.Error)
    /// `"name"` is not a usable pattern.
    case invalidNamePattern(NamePattern.Error)
    /// `"min_rssi"` is outside `-127…20` dBm.
    case rssiOutOfRange(Int64)

    /// The stable machine-readable code, `invalid_payload`.
    public var code: String { "invalid_payload" }

    /// A sentence for people.
    public var description: String {
      switch self {
      case .payload(let error): "filter: \(error.description)"
      case .invalidUUID(let index, let error): "filter: \"uuids\"[\(index)]: \(error.description)"
      case .invalidAddress(let key, let index, let error):
        "filter: \"\(key)\"[\(index)]: \(error.description)"
      case .invalidNamePattern(let error): "filter: \"name\": \(error.description)"
      case .rssiOutOfRange(let value):
        "filter: \"min_rssi\" must be between -127 and 20 dBm, not \(value)"
      }
    }
  }

  /// Why an advertisement is not published, for counters and debugging.
  public enum Rejection: String, Sendable, Hashable, CaseIterable {
    /// The address is on the deny list.
    case denied
    /// The allow list is not empty and does not hold the address.
    case notAllowed = "not_allowed"
    /// The RSSI is unknown or below the floor.
    case weakSignal = "weak_signal"
    /// None of the wanted service UUIDs is advertised.
    case noMatchingService = "no_matching_service"
    /// There is no name, or it does not match the pattern.
    case nameMismatch = "name_mismatch"
  }

  /// The keys of the JSON form.
  public static let keys: Set<String> = ["uuids", "name", "allow", "deny", "min_rssi"]

  /// Service UUIDs, any of which must be advertised; empty for no condition.
  public var serviceUUIDs: Set<BluetoothUUID>
  /// The pattern the name must match; `nil` for no condition.
  public var namePattern: NamePattern?
  /// The only addresses published; empty for no condition.
  public var allow: Set<BluetoothAddress>
  /// Addresses never published.
  public var deny: Set<BluetoothAddress>
  /// The weakest RSSI published, in dBm; `nil` for no condition.
  public var rssiFloor: Int?

  /// Makes a filter; the defaults accept everything.
  ///
  /// - Parameters:
  ///   - serviceUUIDs: Service UUIDs, any of which must be advertised.
  ///   - namePattern: The pattern the name must match.
  ///   - allow: The only addresses published.
  ///   - deny: Addresses never published.
  ///   - rssiFloor: The weakest RSSI published, in dBm.
  public init(
    serviceUUIDs: Set<BluetoothUUID> = [], namePattern: NamePattern? = nil,
    allow: Set<BluetoothAddress> = [], deny: Set<BluetoothAddress> = [], rssiFloor: Int? = nil
  ) {
    self.serviceUUIDs = serviceUUIDs
    self.namePattern = namePattern
    self.allow = allow
    self.deny = deny
    self.rssiFloor = rssiFloor
  }

  /// Parses the JSON form; unknown keys are refused so that a typo does not widen the filter.
  ///
  /// - Parameter object: The filter object.
  /// - Throws: ``Error`` naming the first problem.
  public init(parsing object: JSONObject) throws(Error) {
    self.init()
    for key in object.keys where !Self.keys.contains(key) { throw .payload(.unknownKey(key)) }
    for (index, text) in try Self.strings("uuids", in: object).enumerated() {
      do {
        serviceUUIDs.insert(try BluetoothUUID(text))
      } catch {
        throw .invalidUUID(index: index, error)
      }
    }
    allow = try Self.addresses("allow", in: object)
    deny = try Self.addresses("deny", in: object)
    if let value = object["name"] {
      guard case .string(let text) = value else {
        throw .payload(.wrongType(key: "name", expected: "a string", found: value.typeName))
      }
      do {
        namePattern = try NamePattern(text)
      } catch {
        throw .invalidNamePattern(error)
      }
    }
    if let value = object["min_rssi"] {
      guard let floor = value.integerValue else {
        throw .payload(.wrongType(key: "min_rssi", expected: "an integer", found: value.typeName))
      }
      guard (-127...20).contains(floor) else { throw .rssiOutOfRange(floor) }
      rssiFloor = Int(floor)
    }
  }

  /// Whether the filter accepts everything.
  public var isEmpty: Bool {
    serviceUUIDs.isEmpty && namePattern == nil && allow.isEmpty && deny.isEmpty && rssiFloor == nil
  }

  /// Why the advertisement is not published, or `nil` when it is.
  ///
  /// - Parameter advertisement: The advertisement.
  /// - Returns: The first criterion it fails, in the order of the type's documentation.
  public func rejection(of advertisement: Advertisement) -> Rejection? {
    if deny.contains(advertisement.address) { return .denied }
    if !allow.isEmpty, !allow.contains(advertisement.address) { return .notAllowed }
    if let rssiFloor {
      // An RSSI the controller could not measure fails a floor, as in the kernel's own filter.
      guard let rssi = advertisement.rssi, Advertisement.measurableRSSI.contains(rssi),
        rssi >= rssiFloor
      else { return .weakSignal }
    }
    if !serviceUUIDs.isEmpty {
      let advertised =
        advertisement.serviceUUIDs.contains { serviceUUIDs.contains($0) }
        || advertisement.serviceData.keys.contains { serviceUUIDs.contains($0) }
      if !advertised { return .noMatchingService }
    }
    if let namePattern {
      guard let name = advertisement.nameText, namePattern.matches(name) else {
        return .nameMismatch
      }
    }
    return nil
  }

  /// Whether the advertisement is published.
  ///
  /// - Parameter advertisement: The advertisement.
  /// - Returns: `true` when every criterion holds.
  public func accepts(_ advertisement: Advertisement) -> Bool {
    rejection(of: advertisement) == nil
  }

  /// The part of the filter the stack can apply while discovering: the service UUIDs and the
  /// RSSI floor.
  public var discoveryFilter: DiscoveryFilter {
    DiscoveryFilter(serviceUUIDs: serviceUUIDs.sorted(), rssiFloor: rssiFloor)
  }

  /// The JSON form with only the keys that are set, lists sorted, addresses with colons.
  public var json: JSONValue {
    var object = JSONObject()
    if !serviceUUIDs.isEmpty {
      object["uuids"] = .array(serviceUUIDs.sorted().map { .string($0.shortForm) })
    }
    if let namePattern { object["name"] = .string(namePattern.rawValue) }
    if !allow.isEmpty { object["allow"] = .array(allow.sorted().map { .string($0.description) }) }
    if !deny.isEmpty { object["deny"] = .array(deny.sorted().map { .string($0.description) }) }
    if let rssiFloor { object["min_rssi"] = .integer(Int64(rssiFloor)) }
    return .object(object)
  }

  private static func strings(_ key: String, in object: JSONObject) throws(Error) -> [String] {
    guard let value = object[key] else { return [] }
    guard case .array(let elements) = value else {
      throw .payload(.wrongType(key: key, expected: "an array of strings", found: value.typeName))
    }
    var strings: [String] = []
    for element in elements {
      guard case .string(let text) = element else {
        throw .payload(
          .wrongType(
            key: key, expected: "an array of strings", found: "an array with a \(element.typeName)")
        )
      }
      strings.append(text)
    }
    return strings
  }

  private static func addresses(
    _ key: String, in object: JSONObject
  ) throws(Error) -> Set<BluetoothAddress> {
    var addresses: Set<BluetoothAddress> = []
    for (index, text) in try strings(key, in: object).enumerated() {
      do {
        addresses.insert(try BluetoothAddress(text))
      } catch {
        throw .invalidAddress(key: key, index: index, error)
      }
    }
    return addresses
  }
}
