import DBus
import Glibc

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
  /// `StartNotify`, `StopNotify` and (with `acquire`) `AcquireNotify` as BlueZ 5.66 answers it:
  /// `NotSupported` without the `notify` flag, `InProgress` while a `StartNotify` session is
  /// on, `NotPermitted` while acquired, else a `SOCK_SEQPACKET` socket and the MTU.
  /// `readReply`, when given, is what `ReadValue` answers instead of the value (to send a
  /// malformed reply).
  @discardableResult
  func addCharacteristic(
    service: String, handle: Int, uuid: String, flags: [String], value: [UInt8] = [],
    mtu: UInt16? = nil, readReply: DBusValue? = nil, acquire: Bool = false
  ) async throws -> String {
    let path = service + "/char" + Self.hex4(handle)
    var properties: [String: DBusValue] = [
      "UUID": .string(uuid), "Service": .objectPath(try DBusObjectPath(service)),
      "Value": .bytes(value), "Notifying": .bool(false), "Flags": .strings(flags),
    ]
    if acquire { properties["NotifyAcquired"] = .bool(false) }
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
        if state.hanging.withLock({ $0.contains("StartNotify") }) {
          try? await Task.sleep(for: .seconds(2))
        }
        // BlueZ 5.66 refuses it while a socket is acquired (by anyone, or left over).
        guard state.notifySockets.withLock({ $0[path] }) == nil else {
          throw DBusError(name: "org.bluez.Error.NotPermitted", message: "Notify acquired")
        }
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
    let acquireMethods =
      acquire
      ? [
        method("AcquireNotify", at: path, in: "a{sv}", out: "hq") { [self] _ in
          guard flags.contains("notify") else {
            throw DBusError(
              name: "org.bluez.Error.NotSupported", message: "Operation is not supported")
          }
          guard !isNotifying(path) else {
            throw DBusError(name: "org.bluez.Error.InProgress", message: "In Progress")
          }
          guard state.notifySockets.withLock({ $0[path] }) == nil else {
            throw DBusError(name: "org.bluez.Error.NotPermitted", message: "Notify acquired")
          }
          var fds: [Int32] = [-1, -1]
          guard
            socketpair(
              AF_UNIX, Int32(SOCK_SEQPACKET.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0, &fds) == 0
          else {
            throw DBusError(name: "org.bluez.Error.Failed", message: "socketpair failed")
          }
          state.notifySockets.withLock { $0[path] = fds[0] }
          for value in state.acquirePrefill.withLock({ $0 }) {
            _ = value.withUnsafeBytes { Glibc.send(fds[0], $0.baseAddress, $0.count, 0) }
          }
          try await change(path, interface, ["NotifyAcquired": .bool(true)])
          return [.unixFD(DBusFileDescriptor(taking: fds[1])), .uint16(mtu ?? 23)]
        }
      ] : []
    try await connection.export(
      DBusExportedObject(interfaces: [
        DBusInterface(
          interface, methods: methods + acquireMethods,
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

  /// Sends a notification through the acquired socket, as BlueZ does after `AcquireNotify`.
  func notifyAcquired(_ path: String, _ value: [UInt8]) {
    guard let fd = state.notifySockets.withLock({ $0[path] }) else { return }
    _ = value.withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, 0) }
  }

  /// Whether the client shut its end of the acquired socket (waits up to `seconds`).
  func acquiredHungUp(_ path: String, within seconds: Int32 = 2) -> Bool {
    guard let fd = state.notifySockets.withLock({ $0[path] }) else { return false }
    var probe = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
    return poll(&probe, 1, seconds * 1000) == 1 && probe.revents & Int16(POLLHUP) != 0
  }

  /// Holds an acquired socket for `path` that is not the gateway's: another D-Bus client's, or
  /// the leftover of a subscription whose CCC write failed (BlueZ 5.66 keeps `notify_io` then,
  /// and its `StopNotify` frees it twice: bluez/bluez#1376).
  func holdForeignSocket(_ path: String) {
    var fds: [Int32] = [-1, -1]
    guard socketpair(AF_UNIX, Int32(SOCK_SEQPACKET.rawValue), 0, &fds) == 0 else { return }
    close(fds[1])
    state.notifySockets.withLock { $0[path] = fds[0] }
  }

  /// Ends the acquired session as BlueZ does when the socket goes: closes the fake's end and
  /// clears `NotifyAcquired`.
  func endAcquired(_ path: String) async throws {
    guard let fd = state.notifySockets.withLock({ $0.removeValue(forKey: path) }) else { return }
    close(fd)
    try await change(path, Self.characteristicInterface, ["NotifyAcquired": .bool(false)])
  }

  /// Sends a notification: a `PropertiesChanged` of `Value`, as BlueZ does.
  func notify(_ path: String, _ value: [UInt8]) async throws {
    try await change(path, Self.characteristicInterface, ["Value": .bytes(value)])
  }
}
