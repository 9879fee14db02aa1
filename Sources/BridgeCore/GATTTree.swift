/// The GATT tree of a connected device, as published retained on `<base>/<dev>/gatt` (C5).
public struct GATTTree: Sendable, Hashable {
  /// One service.
  public struct Service: Sendable, Hashable {
    /// The service's UUID.
    public var uuid: BluetoothUUID
    /// Whether it is a primary service.
    public var primary: Bool
    /// Its characteristics, in the stack's order.
    public var characteristics: [Characteristic]

    /// Makes a service.
    ///
    /// - Parameters:
    ///   - uuid: The service's UUID.
    ///   - primary: Whether it is a primary service.
    ///   - characteristics: Its characteristics.
    public init(uuid: BluetoothUUID, primary: Bool = true, characteristics: [Characteristic]) {
      self.uuid = uuid
      self.primary = primary
      self.characteristics = characteristics
    }
  }

  /// One characteristic.
  public struct Characteristic: Sendable, Hashable {
    /// The characteristic's UUID.
    public var uuid: BluetoothUUID
    /// Its properties as BlueZ names them (`read`, `write`, `write-without-response`,
    /// `notify`, `indicate`, `authenticated-signed-writes`, `reliable-write`, …).
    public var flags: [String]
    /// The UUIDs of its descriptors.
    public var descriptors: [BluetoothUUID]

    /// Makes a characteristic.
    ///
    /// - Parameters:
    ///   - uuid: The characteristic's UUID.
    ///   - flags: Its properties as BlueZ names them.
    ///   - descriptors: The UUIDs of its descriptors.
    public init(uuid: BluetoothUUID, flags: [String], descriptors: [BluetoothUUID] = []) {
      self.uuid = uuid
      self.flags = flags
      self.descriptors = descriptors
    }

    /// Whether it can be read (`read`, or an encrypted/authenticated read).
    public var canRead: Bool { flags.contains { $0 == "read" || $0.hasSuffix("-read") } }
    /// Whether it takes writes with response.
    public var canWriteWithResponse: Bool {
      flags.contains { $0 == "write" || $0 == "reliable-write" || $0.hasSuffix("-write") }
    }
    /// Whether it takes writes without response.
    public var canWriteWithoutResponse: Bool {
      flags.contains("write-without-response") || flags.contains("authenticated-signed-writes")
    }
    /// Whether it notifies or indicates.
    public var canNotify: Bool {
      flags.contains { $0 == "notify" || $0 == "indicate" || $0.hasSuffix("-notify") }
    }
  }

  /// The services, in the stack's order.
  public var services: [Service]
  /// The ATT MTU of the connection, when the stack reports it.
  public var mtu: Int?

  /// Makes a tree.
  ///
  /// - Parameters:
  ///   - services: The services.
  ///   - mtu: The ATT MTU of the connection.
  public init(services: [Service], mtu: Int? = nil) {
    self.services = services
    self.mtu = mtu
  }

  /// The first characteristic with this service and characteristic UUID.
  ///
  /// - Parameters:
  ///   - service: The service's UUID.
  ///   - characteristic: The characteristic's UUID.
  /// - Returns: The characteristic, or `nil`.
  public func characteristic(service: BluetoothUUID, characteristic: BluetoothUUID)
    -> Characteristic?
  {
    for candidate in services where candidate.uuid == service {
      if let found = candidate.characteristics.first(where: { $0.uuid == characteristic }) {
        return found
      }
    }
    return nil
  }

  /// The tree as published: `{"services":[{"uuid":"180f","primary":true,"characteristics":
  /// [{"uuid":"2a19","flags":["read","notify"],"descriptors":["2902"]}]}],"mtu":247}`.
  public var json: JSONValue {
    var object: JSONObject = [
      "services": .array(
        services.map { service in
          [
            "uuid": .string(service.uuid.topicSegment), "primary": .bool(service.primary),
            "characteristics": .array(
              service.characteristics.map { characteristic in
                [
                  "uuid": .string(characteristic.uuid.topicSegment),
                  "flags": .array(characteristic.flags.map { .string($0) }),
                  "descriptors": .array(
                    characteristic.descriptors.map { .string($0.topicSegment) }),
                ]
              }),
          ]
        })
    ]
    if let mtu { object["mtu"] = .integer(Int64(mtu)) }
    return .object(object)
  }
}
