/// A set of characteristics named in the configuration: `<dev>/<svc>/<chr>`, or `<dev>` alone for
/// every characteristic of a device (the same as `<dev>/*/*`). Each part may be `*` for any.
///
/// - `<dev>`: a device id as in the topics, the address without colons (`A4C1381E29DF`, either
///   case) or a friendly name from the configuration (`kitchen/thermometer`; with `/` only in
///   the three-part form, `kitchen/thermometer/*/*`), or an address with separators
///   (`A4:C1:38:1E:29:DF`), normalised to the id. A `<dev>` containing `:` is read as an address.
/// - `<svc>`, `<chr>`: a UUID in any form ``BluetoothUUID/init(_:)`` reads (`180f`, `0x180F`,
///   `0000180f-0000-1000-8000-00805f9b34fb`).
///
/// Surrounding whitespace is ignored.
///
/// ```swift
/// let selector = try CharacteristicSelector(parsing: "*/180f/2a19")
/// selector.matches(device: id, service: BluetoothUUID(uuid16: 0x180F),
///                  characteristic: BluetoothUUID(uuid16: 0x2A19))  // true
/// ```
public struct CharacteristicSelector: Sendable, Hashable, CustomStringConvertible {
  /// Why a string is not a characteristic selector.
  public enum Error: Swift.Error, Sendable, Hashable, CustomStringConvertible {
    /// The selector is empty.
    case empty
    /// The selector has two parts (or a hierarchical device without `<svc>/<chr>`).
    case wrongPartCount(String)
    /// A part uses `*` together with other characters; `*` only stands alone.
    case partialWildcard(String)
    /// The `<dev>` part contains `:` but is not a Bluetooth address.
    case invalidAddress(String, BluetoothAddress.Error)
    /// The `<dev>` part is not a valid device id.
    case invalidDevice(String, TopicError)
    /// The `<svc>` part is not a UUID.
    case invalidService(String, BluetoothUUID.Error)
    /// The `<chr>` part is not a UUID.
    case invalidCharacteristic(String, BluetoothUUID.Error)

    /// The stable machine-readable code, `invalid_payload`.
    public var code: String { "invalid_payload" }

    /// A sentence for people.
    public var description: String {
      switch self {
      case .empty:
        "the characteristic selector is empty"
      case .wrongPartCount(let selector):
        "'\(selector)' is not '<dev>' or '<dev>/<svc>/<chr>' (any part may be '*')"
      case .partialWildcard(let part):
        "'\(part)' mixes '*' with other characters; '*' must stand alone as a whole part"
      case .invalidAddress(let part, let error):
        "'\(part)' is not a Bluetooth address: \(error.description)"
      case .invalidDevice(let part, let error):
        "'\(part)' is not a device id: \(error.description)"
      case .invalidService(let part, let error):
        "'\(part)' is not a service UUID: \(error.description)"
      case .invalidCharacteristic(let part, let error):
        "'\(part)' is not a characteristic UUID: \(error.description)"
      }
    }
  }

  /// The device, or `nil` for any device.
  public let device: DeviceID?
  /// The service, or `nil` for any service.
  public let service: BluetoothUUID?
  /// The characteristic, or `nil` for any characteristic.
  public let characteristic: BluetoothUUID?

  /// Makes a selector from its parts.
  ///
  /// - Parameters:
  ///   - device: The device, or `nil` for any device.
  ///   - service: The service, or `nil` for any service.
  ///   - characteristic: The characteristic, or `nil` for any characteristic.
  public init(device: DeviceID?, service: BluetoothUUID?, characteristic: BluetoothUUID?) {
    self.device = device
    self.service = service
    self.characteristic = characteristic
  }

  /// Parses `<dev>/<svc>/<chr>` or `<dev>`.
  ///
  /// - Parameter text: The selector, for example `*/180f/2a19` or `A4:C1:38:1E:29:DF`.
  /// - Throws: ``Error`` naming the part that is wrong.
  public init(parsing text: String) throws(Error) {
    let trimmed = String(text.unicodeScalars.trimmingWhitespace())
    guard !trimmed.isEmpty else { throw .empty }
    let parts = trimmed.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
    switch parts.count {
    case 1:
      self.init(device: try Self.device(trimmed), service: nil, characteristic: nil)
    case 2:
      throw .wrongPartCount(trimmed)
    default:
      let service = parts[parts.count - 2]
      let characteristic = parts[parts.count - 1]
      self.init(
        device: try Self.device(parts.dropLast(2).joined(separator: "/")),
        service: try Self.uuid(service, isService: true),
        characteristic: try Self.uuid(characteristic, isService: false))
    }
  }

  /// Whether the selector names this characteristic.
  ///
  /// - Parameters:
  ///   - device: The device's id.
  ///   - address: The device's address, if known: a selector naming the device by address then
  ///     also matches it when the device has a friendly name.
  ///   - service: The service's UUID.
  ///   - characteristic: The characteristic's UUID.
  /// - Returns: `true` when every part matches.
  public func matches(
    device: DeviceID, address: BluetoothAddress? = nil, service: BluetoothUUID,
    characteristic: BluetoothUUID
  ) -> Bool {
    matches(device: device, address: address)
      && (self.service == nil || self.service == service)
      && (self.characteristic == nil || self.characteristic == characteristic)
  }

  /// Whether the selector's `<dev>` part names this device.
  ///
  /// - Parameters:
  ///   - device: The device's id.
  ///   - address: The device's address, if known: a selector naming the device by address then
  ///     also matches it when the device has a friendly name.
  /// - Returns: `true` for `*`, the device's id or its address.
  public func matches(device: DeviceID, address: BluetoothAddress? = nil) -> Bool {
    guard let selected = self.device else { return true }
    return selected == device || address.map { selected == DeviceID(address: $0) } == true
  }

  /// The three-part form, `A4C1381E29DF/180f/2a19` or `*/*/*`, which parses back to this
  /// selector.
  public var description: String {
    "\(device?.rawValue ?? "*")/\(service?.shortForm ?? "*")/\(characteristic?.shortForm ?? "*")"
  }

  private static func device(_ part: String) throws(Error) -> DeviceID? {
    if part == "*" { return nil }
    if part.contains("*") { throw .partialWildcard(part) }
    do {
      return DeviceID(address: try BluetoothAddress(part))
    } catch {
      if part.contains(":") { throw .invalidAddress(part, error) }
    }
    do {
      return try DeviceID(friendlyName: part)
    } catch {
      throw .invalidDevice(part, error)
    }
  }

  private static func uuid(_ part: String, isService: Bool) throws(Error) -> BluetoothUUID? {
    if part == "*" { return nil }
    if part.contains("*") { throw .partialWildcard(part) }
    do {
      return try BluetoothUUID(part)
    } catch {
      throw isService ? .invalidService(part, error) : .invalidCharacteristic(part, error)
    }
  }
}
