import BridgeCore
import BusTestSupport
import DBus
import Testing

@testable import BlueZ

@Suite("BlueZ properties → port values")
struct BlueZPropertyTests {
  static let now = ContinuousClock.now
  static let devicePath: DBusObjectPath = "/org/bluez/hci0/dev_A4_C1_38_1E_29_DF"

  static func manufacturer(_ entries: [(DBusValue, DBusValue)]) -> DBusValue {
    .dictionary(key: "q", value: "v", entries)
  }

  @Test("a full Device1 property map becomes the advertisement")
  func fullDevice() throws {
    let properties: [String: DBusValue] = [
      "Address": .string("A4:C1:38:1E:29:DF"), "AddressType": .string("random"),
      "Name": .string("Thermo"), "Alias": .string("Thermo"), "RSSI": .int16(-71),
      "TxPower": .int16(4),
      "ManufacturerData": Self.manufacturer([
        (.uint16(0x004C), .variant(.bytes([0x02, 0x15]))),
        (.uint16(0x0059), .variant(.bytes([]))),
      ]),
      "ServiceData": .dictionary(
        key: "s", value: "v",
        [(.string("0000fcd2-0000-1000-8000-00805f9b34fb"), .variant(.bytes([0x40, 0x01])))]),
      "UUIDs": .strings(["0000180f-0000-1000-8000-00805f9b34fb"]),
      "Connected": .bool(true), "ServicesResolved": .bool(true),
      "Adapter": .objectPath("/org/bluez/hci0"),
    ]
    let device = try #require(
      BlueZDevice(path: Self.devicePath, properties: properties, now: Self.now))
    let expected = Advertisement(
      address: try BluetoothAddress("A4:C1:38:1E:29:DF"), addressType: .random,
      name: Array("Thermo".utf8), rssi: -71, txPower: 4,
      manufacturerData: [0x004C: [0x02, 0x15], 0x0059: []],
      serviceData: [BluetoothUUID(uuid16: 0xFCD2): [0x40, 0x01]],
      serviceUUIDs: [BluetoothUUID(uuid16: 0x180F)])
    #expect(device.advertisement == expected)
    #expect(device.connected && device.servicesResolved)
    #expect(device.adapter == "/org/bluez/hci0")
  }

  @Test("hostile names keep their exact bytes: strings as UTF-8, an ay name as raw bytes")
  func hostileNames() throws {
    let hostile = "+/#\u{FFFD}\u{202E}evil\u{0007}"
    let device = try #require(
      BlueZDevice(
        path: Self.devicePath,
        properties: ["Address": .string("A4:C1:38:1E:29:DF"), "Name": .string(hostile)],
        now: Self.now))
    #expect(device.advertisement.name == Array(hostile.utf8))
    #expect(device.advertisement.nameText == hostile)

    let invalid: [UInt8] = [0x54, 0xFF, 0xC3, 0x28, 0x00, 0x41]
    var raw = device
    raw.update(["Name": .bytes(invalid)], invalidated: [])
    #expect(raw.advertisement.name == invalid)
    #expect(raw.advertisement.nameText == "T\u{FFFD}\u{FFFD}(\u{0000}A")
    raw.update([:], invalidated: ["Name"])
    #expect(raw.advertisement.name == nil)
  }

  @Test("manufacturer data a{qv}: ay values by company id, malformed entries skipped")
  func manufacturerData() {
    let value = Self.manufacturer([
      (.uint16(0x004C), .variant(.bytes([1, 2, 3]))),
      (.uint16(0xFFFF), .variant(.bytes([0xFF]))),
      (.uint16(0x0001), .variant(.string("not bytes"))),
    ])
    #expect(BlueZDevice.manufacturerData(value) == [0x004C: [1, 2, 3], 0xFFFF: [0xFF]])
    let wrongKey = DBusValue.dictionary(
      key: "i", value: "v",
      [(.int32(70_000), .variant(.bytes([1]))), (.int32(7), .variant(.bytes([2])))])
    #expect(BlueZDevice.manufacturerData(wrongKey) == [7: [2]])
    #expect(BlueZDevice.manufacturerData(.string("nope")) == nil)
  }

  @Test("properties of the wrong type are ignored, never fatal")
  func wrongTypes() throws {
    let properties: [String: DBusValue] = [
      "Address": .string("A4:C1:38:1E:29:DF"), "AddressType": .uint32(1),
      "RSSI": .string("loud"), "TxPower": .int32(1_000_000), "Name": .int32(5),
      "ManufacturerData": .strings(["x"]), "ServiceData": .bool(true),
      "UUIDs": .strings(["not-a-uuid", "180f"]), "Connected": .string("yes"),
      "Adapter": .string("/org/bluez/hci0"),
    ]
    let device = try #require(
      BlueZDevice(path: Self.devicePath, properties: properties, now: Self.now))
    let advertisement = device.advertisement
    #expect(advertisement.addressType == .public)
    #expect(advertisement.rssi == nil && advertisement.txPower == nil && advertisement.name == nil)
    #expect(advertisement.manufacturerData.isEmpty && advertisement.serviceData.isEmpty)
    #expect(advertisement.serviceUUIDs == [BluetoothUUID(uuid16: 0x180F)])
    #expect(!device.connected)
  }

  @Test("a device without a valid Address takes it from its path, or is refused")
  func missingAddress() throws {
    let fromPath = try #require(
      BlueZDevice(path: Self.devicePath, properties: ["RSSI": .int16(-50)], now: Self.now))
    #expect(fromPath.address.description == "A4:C1:38:1E:29:DF")
    #expect(
      BlueZDevice(
        path: "/org/bluez/hci0/weird", properties: ["Address": .string("zz")], now: Self.now)
        == nil)
  }

  @Test("Adapter1 properties become AdapterInfo, the alias preferred to the name")
  func adapter() throws {
    let adapter = BlueZAdapter(
      path: "/org/bluez/hci1",
      properties: [
        "Address": .string("00:1A:7D:DA:71:13"), "Name": .string("pi"),
        "Alias": .string("kitchen"), "Powered": .bool(true), "Discovering": .bool(true),
        "PowerState": .string("on"),
      ])
    #expect(
      adapter.info(resetting: false)
        == AdapterInfo(
          id: "hci1", address: try BluetoothAddress("00:1A:7D:DA:71:13"), name: "kitchen",
          powered: true, discovering: true))
    let broken = BlueZAdapter(
      path: "/org/bluez/hci2", properties: ["Powered": .string("on"), "Address": .int32(1)])
    #expect(
      broken.info(resetting: true) == AdapterInfo(id: "hci2", powered: false, resetting: true))
  }

  @Test(
    "BlueZ's version from its default Device ID; any other Device ID gives none",
    arguments: [
      ("usb:v1D6Bp0246d0542", "5.66"), ("usb:v1d6bp0246d054f", "5.79"),
      ("usb:v1D6Bp0246d0532", "5.50"), ("usb:v1D6Bp0246d054", nil), ("usb:v1D6Bp0246dXYZW", nil),
      ("usb:v0A12p0001d0542", nil), ("", nil),
    ] as [(String, String?)])
  func stackVersion(modalias: String, version: String?) {
    #expect(BlueZAdapter.bluezVersion(modalias: modalias) == version)
    let adapter = BlueZAdapter(
      path: "/org/bluez/hci0", properties: ["Modalias": .string(modalias), "Powered": .bool(true)])
    #expect(adapter.info(resetting: false).stackVersion == version)
  }

  @Test(
    "D-Bus error names map to stable codes and keep the name",
    arguments: [
      ("org.bluez.Error.InProgress", CentralError.Code.inProgress),
      ("org.bluez.Error.Busy", .inProgress),
      ("org.bluez.Error.InProgressX", .bluezError),
      ("org.bluez.Error.", .bluezError),
      ("org.example.Error.InProgress", .bluezError),
      ("org.bluez.Error.NotReady", .poweredOff),
      ("org.bluez.Error.Failed", .bluezError),
      ("org.bluez.Error.NotAuthorized", .notPermitted),
      ("org.bluez.Error.NotPermitted", .notPermitted),
      ("org.bluez.Error.NotSupported", .notPermitted),
      ("org.bluez.Error.NotConnected", .notConnected),
      ("org.bluez.Error.InvalidArguments", .bluezError),
      ("org.freedesktop.DBus.Error.ServiceUnknown", .unavailable),
      ("org.freedesktop.DBus.Error.NameHasNoOwner", .unavailable),
      ("org.freedesktop.DBus.Error.UnknownObject", .unknownAdapter),
      ("org.freedesktop.DBus.Error.NoReply", .timeout),
    ])
  func errorMapping(name: String, code: CentralError.Code) {
    let error = CentralError.bluez(DBusError(name: name, message: "m"), operation: "op")
    #expect(error.code == code)
    #expect(error.detail == name)
    #expect(error.message == "op: m")
  }

  @Test("BlueZ error names parse into one enum and back; other names do not parse")
  func errorNames() {
    for error in BlueZError.allCases {
      #expect(BlueZError(name: error.name) == error)
      #expect(error.name == "org.bluez.Error.\(error.rawValue)")
      #expect(DBusError(name: error.name, message: "m").bluez == error)
      #expect(error.reply("why").name == error.name)
    }
    #expect(BlueZError(name: "org.bluez.Error.Unheard") == nil)
    #expect(BlueZError(name: "Failed") == nil)
    #expect(BlueZError(name: "org.freedesktop.DBus.Error.Failed") == nil)
    #expect(
      CentralError(.bluezError, message: "m", detail: "org.bluez.Error.Failed").bluez == .failed)
    #expect(CentralError(.timeout, message: "m").bluez == nil)
  }

  @Test("a lost connection maps to unavailable")
  func disconnected() {
    let error = CentralError.bluez(DBusError(.disconnected, "gone"), operation: "StartDiscovery")
    #expect(error.code == .unavailable)
  }

  @Test("the discovery filter dictionary never holds a false boolean")
  func discoveryFilter() throws {
    let full = DiscoveryFilter(serviceUUIDs: [BluetoothUUID(uuid16: 0x180F)], rssiFloor: -80)
    #expect(
      full.bluezDictionary
        == .properties([
          "Transport": .string("le"), "DuplicateData": .bool(true), "RSSI": .int16(-80),
          "UUIDs": .strings(["0000180f-0000-1000-8000-00805f9b34fb"]),
        ]))
    let minimal = DiscoveryFilter(duplicateData: false)
    #expect(minimal.bluezDictionary == .properties(["Transport": .string("le")]))
  }
}
