import DBus

/// Remote GATT objects of the fake bluetoothd, nested the way BlueZ nests them
/// (`<device>/serviceXXXX/charXXXX/descXXXX`, XXXX the attribute handle in hex).
extension FakeBlueZ {
  static let serviceInterface = "org.bluez.GattService1"
  static let characteristicInterface = "org.bluez.GattCharacteristic1"
  static let descriptorInterface = "org.bluez.GattDescriptor1"

  static func hex4(_ handle: Int) -> String {
    let digits = Array("0123456789abcdef")
    return String((0..<4).reversed().map { digits[(handle >> (4 * $0)) & 0xF] })
  }

  /// Exports a `GattService1` below `device`.
  @discardableResult
  func addService(device: String, handle: Int, uuid: String, primary: Bool = true) async throws
    -> String
  {
    let path = device + "/service" + Self.hex4(handle)
    let properties: [String: DBusValue] = [
      "UUID": .string(uuid), "Primary": .bool(primary),
      "Device": .objectPath(try DBusObjectPath(device)), "Includes": .array("o", []),
    ]
    state.properties.withLock { $0[path] = [Self.serviceInterface: properties] }
    try await connection.export(
      DBusExportedObject(interfaces: [
        DBusInterface(
          Self.serviceInterface,
          properties: exportedProperties(path, Self.serviceInterface, properties))
      ]), at: try DBusObjectPath(path))
    return path
  }

  /// Exports a `GattCharacteristic1` below `service` with `ReadValue`, `WriteValue`,
  /// `StartNotify` and `StopNotify`. `readReply`, when given, is what `ReadValue` answers
  /// instead of the value (to send a malformed reply).
  @discardableResult
  func addCharacteristic(
    service: String, handle: Int, uuid: String, flags: [String], value: [UInt8] = [],
    mtu: UInt16? = nil, readReply: DBusValue? = nil
  ) async throws -> String {
    let path = service + "/char" + Self.hex4(handle)
    var properties: [String: DBusValue] = [
      "UUID": .string(uuid), "Service": .objectPath(try DBusObjectPath(service)),
      "Value": .bytes(value), "Notifying": .bool(false), "Flags": .strings(flags),
    ]
    if let mtu { properties["MTU"] = .uint16(mtu) }
    state.properties.withLock { $0[path] = [Self.characteristicInterface: properties] }
    let interface = Self.characteristicInterface
    let methods = [
      method("ReadValue", at: path, in: "a{sv}", out: readReply?.signature ?? "ay") {
        [self] _ in
        if let readReply { return [readReply] }
        let current =
          state.properties.withLock { $0[path]?[interface]?["Value"] } ?? .bytes([])
        // Like BlueZ: a read also updates (and signals) the cached value.
        try await change(path, interface, ["Value": current])
        return [current]
      },
      method("WriteValue", at: path, in: "aya{sv}"),
      method("StartNotify", at: path) { [self] _ in
        if !isNotifying(path) { try await change(path, interface, ["Notifying": .bool(true)]) }
        return []
      },
      method("StopNotify", at: path) { [self] _ in
        guard isNotifying(path) else {
          throw DBusError(name: "org.bluez.Error.Failed", message: "No notify session started")
        }
        try await change(path, interface, ["Notifying": .bool(false)])
        return []
      },
    ]
    try await connection.export(
      DBusExportedObject(interfaces: [
        DBusInterface(
          interface, methods: methods,
          properties: exportedProperties(path, interface, properties))
      ]), at: try DBusObjectPath(path))
    return path
  }

  /// Exports a `GattDescriptor1` below `characteristic`.
  @discardableResult
  func addDescriptor(characteristic: String, handle: Int, uuid: String) async throws -> String {
    let path = characteristic + "/desc" + Self.hex4(handle)
    let properties: [String: DBusValue] = [
      "UUID": .string(uuid), "Characteristic": .objectPath(try DBusObjectPath(characteristic)),
      "Value": .bytes([]),
    ]
    state.properties.withLock { $0[path] = [Self.descriptorInterface: properties] }
    try await connection.export(
      DBusExportedObject(interfaces: [
        DBusInterface(
          Self.descriptorInterface,
          properties: exportedProperties(path, Self.descriptorInterface, properties))
      ]), at: try DBusObjectPath(path))
    return path
  }

  func isNotifying(_ path: String) -> Bool {
    state.properties.withLock { $0[path]?[Self.characteristicInterface]?["Notifying"] }
      == .bool(true)
  }

  /// Sends a notification: a `PropertiesChanged` of `Value`, as BlueZ does.
  func notify(_ path: String, _ value: [UInt8]) async throws {
    try await change(path, Self.characteristicInterface, ["Value": .bytes(value)])
  }
}
