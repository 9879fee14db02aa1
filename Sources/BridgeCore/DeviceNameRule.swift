/// A friendly name from the configuration (`bluetooth.names`), `<address>=<name>`:
/// `A4:C1:38:1E:29:DF=kitchen/thermometer`. The name replaces the address id as `<dev>` in every
/// topic of the device (TOPICS.md "Names"); give every gateway of a fleet the same names.
public struct DeviceNameRule: Sendable, Hashable, CustomStringConvertible {
  /// Why a string is not a rule.
  public enum Error: Swift.Error, Sendable, Hashable, CustomStringConvertible {
    /// No `=`.
    case missingName(String)
    /// The part before `=` is not an address.
    case invalidAddress(String, BluetoothAddress.Error)
    /// The name is not a valid device id.
    case invalidName(String, TopicError)
    /// The name is 12 hex digits: it would read as another device's address id.
    case addressLike(String)

    /// A sentence for people.
    public var description: String {
      switch self {
      case .missingName(let rule):
        "'\(rule)' has no '=<name>' (for example A4:C1:38:1E:29:DF=kitchen/thermometer)"
      case .invalidAddress(let text, let error):
        "'\(text)' is not a Bluetooth address: \(error.description)"
      case .invalidName(let name, let error):
        "'\(name)' is not a device name: \(error.description)"
      case .addressLike(let name):
        "'\(name)' looks like an address id (12 hex digits); choose a name that does not"
      }
    }
  }

  /// The device.
  public let address: BluetoothAddress
  /// Its name, used as `<dev>`.
  public let name: DeviceID

  /// Reads a rule.
  ///
  /// - Parameter text: `<address>=<name>`; the address in any spelling
  ///   ``BluetoothAddress/init(_:)`` reads, the name a valid friendly name
  ///   (``DeviceID/init(friendlyName:)``: levels separated by `/`, no wildcards, not `bridge`).
  /// - Throws: ``Error`` naming the problem.
  public init(parsing text: String) throws(Error) {
    let trimmed = text.trimmedSpaces()
    guard let equals = trimmed.firstIndex(of: "=") else { throw .missingName(text) }
    let addressText = String(trimmed[..<equals]).trimmedSpaces()
    let nameText = String(trimmed[trimmed.index(after: equals)...]).trimmedSpaces()
    do {
      address = try BluetoothAddress(addressText)
    } catch {
      throw .invalidAddress(addressText, error)
    }
    do {
      name = try DeviceID(friendlyName: nameText)
    } catch {
      throw .invalidName(nameText, error)
    }
    if nameText.utf8.count == 12, nameText.utf8.allSatisfy({ Hex.value(of: $0) != nil }) {
      throw .addressLike(nameText)
    }
  }

  /// `A4:C1:38:1E:29:DF=kitchen/thermometer`.
  public var description: String { "\(address)=\(name)" }

  /// The names of a list of rules by address, or the first name given to two devices.
  ///
  /// - Parameter rules: The rules; a later rule for the same address wins.
  /// - Returns: The names, or the name two addresses share.
  public static func names(_ rules: [DeviceNameRule]) -> Result<
    [BluetoothAddress: DeviceID], DuplicateName
  > {
    var names: [BluetoothAddress: DeviceID] = [:]
    for rule in rules { names[rule.address] = rule.name }
    var owners: [DeviceID: BluetoothAddress] = [:]
    for (address, name) in names.sorted(by: { $0.key < $1.key }) {
      if let other = owners[name] {
        return .failure(DuplicateName(name: name, first: other, second: address))
      }
      owners[name] = address
    }
    return .success(names)
  }

  /// One name given to two devices.
  public struct DuplicateName: Swift.Error, Sendable, Hashable, CustomStringConvertible {
    /// The name.
    public var name: DeviceID
    /// The devices.
    public var first: BluetoothAddress
    /// The other device.
    public var second: BluetoothAddress

    /// A sentence for people.
    public var description: String { "'\(name)' names both \(first) and \(second)" }
  }
}

extension String {
  /// The string without leading and trailing spaces and tabs.
  fileprivate func trimmedSpaces() -> String {
    var scalars = Substring(self)
    while let first = scalars.first, first == " " || first == "\t" { scalars.removeFirst() }
    while let last = scalars.last, last == " " || last == "\t" { scalars.removeLast() }
    return String(scalars)
  }
}
