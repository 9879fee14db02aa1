import BridgeCore
import DBus

/// Where the peripheral's objects live on our connection: the GATT application (an
/// ObjectManager root with one service and its characteristics) and the advertisement, a
/// sibling of the application so that it is not part of the application's tree.
struct PeripheralPaths: Sendable, Hashable {
  let root: DBusObjectPath
  let application: DBusObjectPath
  let service: DBusObjectPath
  let characteristic: DBusObjectPath
  let writeCharacteristic: DBusObjectPath
  let advertisement: DBusObjectPath

  /// The paths below the default root, `/org/gatt2mqtt`.
  static let standard = PeripheralPaths(
    root: "/org/gatt2mqtt", application: "/org/gatt2mqtt/app",
    service: "/org/gatt2mqtt/app/service0", characteristic: "/org/gatt2mqtt/app/service0/char0",
    writeCharacteristic: "/org/gatt2mqtt/app/service0/char1",
    advertisement: "/org/gatt2mqtt/advertisement0")

  private init(
    root: DBusObjectPath, application: DBusObjectPath, service: DBusObjectPath,
    characteristic: DBusObjectPath, writeCharacteristic: DBusObjectPath,
    advertisement: DBusObjectPath
  ) {
    self.root = root
    self.application = application
    self.service = service
    self.characteristic = characteristic
    self.writeCharacteristic = writeCharacteristic
    self.advertisement = advertisement
  }

  /// The paths below `root`: `<root>/app`, `<root>/app/service0`, `…/service0/char0`,
  /// `…/service0/char1`, `<root>/advertisement0`.
  init(root: DBusObjectPath) throws(DBusError) {
    self.root = root
    application = try root.appending("app")
    service = try application.appending("service0")
    characteristic = try service.appending("char0")
    writeCharacteristic = try service.appending("char1")
    advertisement = try root.appending("advertisement0")
  }

  /// The paths exported for `definition`, children last.
  func applicationObjects(_ definition: PeripheralService) -> [DBusObjectPath] {
    [service, characteristic] + (definition.writeCharacteristic == nil ? [] : [writeCharacteristic])
  }
}

/// The method handlers of the exported objects; each gets the call (for its sender) and its
/// arguments.
struct PeripheralHandlers: Sendable {
  var read: @Sendable (DBusMethodCall) async throws -> [DBusValue]
  var write: @Sendable (DBusMethodCall) async throws -> [DBusValue]
  var startNotify: @Sendable (DBusMethodCall) async throws -> [DBusValue]
  var stopNotify: @Sendable (DBusMethodCall) async throws -> [DBusValue]
  var acquireNotify: @Sendable (DBusMethodCall) async throws -> [DBusValue]
  var release: @Sendable (DBusMethodCall) async throws -> [DBusValue]
}

/// Builds the exported objects of the peripheral role (BlueZ `doc/gatt-api.txt`,
/// `doc/advertising-api.txt`). Pure apart from the handlers it is given.
enum PeripheralObjects {
  /// Flags of the transfer characteristic. With encryption, `encrypt-read` and `encrypt-notify`
  /// (bluetoothd ≥ 5.4x: the CCC descriptor then needs an encrypted link to be written, so a
  /// central must pair before it can subscribe).
  static func characteristicFlags(requireEncryption: Bool) -> [String] {
    requireEncryption ? ["encrypt-read", "encrypt-notify"] : ["read", "notify"]
  }

  /// Flags of the writable characteristic (`encrypt-write` with encryption).
  static func writeFlags(requireEncryption: Bool) -> [String] {
    (requireEncryption ? ["encrypt-write"] : ["write"]) + ["write-without-response"]
  }

  static func constant(_ name: String, _ value: DBusValue) -> DBusProperty {
    DBusProperty(name, signature: value.signature) { value }
  }

  /// `org.bluez.GattService1` {UUID, Primary}.
  static func service(_ definition: PeripheralService) -> DBusExportedObject {
    DBusExportedObject(interfaces: [
      DBusInterface(
        BlueZNames.gattService,
        properties: [
          constant("UUID", .string(definition.service.longForm)),
          constant("Primary", .bool(true)),
        ])
    ])
  }

  /// The transfer characteristic: `ReadValue`, `StartNotify`, `StopNotify`, and with
  /// `notifySocket` `AcquireNotify` with the `NotifyAcquired` property (bluetoothd 5.66 calls
  /// `AcquireNotify` when a central subscribes while it holds no socket of ours, and falls
  /// back to `StartNotify` when we refuse). No `Value`: notifications are datagrams on the
  /// socket or `PropertiesChanged` signals of `Value`, reads go through `ReadValue`.
  static func characteristic(
    _ definition: PeripheralService, paths: PeripheralPaths, handlers: PeripheralHandlers,
    notifySocket: Bool
  ) -> DBusExportedObject {
    var methods = [
      DBusMethod(
        "ReadValue", in: "a{sv}", out: "ay", inNames: ["options"], outNames: ["value"],
        handler: handlers.read),
      DBusMethod("StartNotify", handler: handlers.startNotify),
      DBusMethod("StopNotify", handler: handlers.stopNotify),
    ]
    var properties = [
      constant("UUID", .string(definition.characteristic.longForm)),
      constant("Service", .objectPath(paths.service)),
      constant(
        "Flags", .strings(characteristicFlags(requireEncryption: definition.requireEncryption))),
    ]
    if notifySocket {
      methods.append(
        DBusMethod(
          "AcquireNotify", in: "a{sv}", out: "hq", inNames: ["options"], outNames: ["fd", "mtu"],
          handler: handlers.acquireNotify))
      // bluetoothd looks only at whether the property exists.
      properties.append(constant("NotifyAcquired", .bool(false)))
    }
    return DBusExportedObject(interfaces: [
      DBusInterface(BlueZNames.gattCharacteristic, methods: methods, properties: properties)
    ])
  }

  /// The writable characteristic: `WriteValue` only.
  static func writeCharacteristic(
    _ uuid: BluetoothUUID, _ definition: PeripheralService, paths: PeripheralPaths,
    handlers: PeripheralHandlers
  ) -> DBusExportedObject {
    DBusExportedObject(interfaces: [
      DBusInterface(
        BlueZNames.gattCharacteristic,
        methods: [
          DBusMethod(
            "WriteValue", in: "aya{sv}", inNames: ["value", "options"], handler: handlers.write)
        ],
        properties: [
          constant("UUID", .string(uuid.longForm)),
          constant("Service", .objectPath(paths.service)),
          constant(
            "Flags", .strings(writeFlags(requireEncryption: definition.requireEncryption))),
        ])
    ])
  }

  /// `org.bluez.LEAdvertisement1` {Type "peripheral", ServiceUUIDs, LocalName when it fits}
  /// with `Release`.
  static func advertisement(_ data: LegacyAdvertisingData, handlers: PeripheralHandlers)
    -> DBusExportedObject
  {
    var properties = [
      constant("Type", .string("peripheral")),
      constant("ServiceUUIDs", .strings(data.serviceUUIDs.map(\.longForm))),
    ]
    if let name = data.localName { properties.append(constant("LocalName", .string(name))) }
    return DBusExportedObject(interfaces: [
      DBusInterface(
        BlueZNames.advertisement, methods: [DBusMethod("Release", handler: handlers.release)],
        properties: properties)
    ])
  }
}
