import BridgeCore
import DBus
import Logging
import Testing

@testable import BlueZ

/// The pure parts of the peripheral role: the 31-byte advertising rule, the adapter choice and
/// the options bluetoothd passes to reads and writes.
@Suite("Peripheral advertising data, adapters and request options")
struct PeripheralModelTests {
  static let transfer = GATTBridge.defaultTransferService

  @Test("a 128-bit service UUID leaves room for a name of at most 8 bytes")
  func nameBesideA128BitUUID() {
    let fits = LegacyAdvertisingData(serviceUUIDs: [Self.transfer], localName: "gateway8")
    #expect(fits.localName == "gateway8" && fits.droppedLocalName == nil)
    #expect(fits.length == 31)
    let tooLong = LegacyAdvertisingData(serviceUUIDs: [Self.transfer], localName: "gateway09")
    #expect(tooLong.localName == nil && tooLong.droppedLocalName == "gateway09")
    #expect(tooLong.length == 21)
  }

  @Test("a 16-bit service UUID leaves room for 22 bytes of name")
  func nameBesideA16BitUUID() {
    let battery = BluetoothUUID(uuid16: 0x180F)
    let name22 = String(repeating: "n", count: 22)
    #expect(LegacyAdvertisingData(serviceUUIDs: [battery], localName: name22).localName == name22)
    #expect(
      LegacyAdvertisingData(serviceUUIDs: [battery], localName: name22 + "x").localName == nil)
  }

  @Test("names are counted in UTF-8 bytes; an empty name counts as none")
  func utf8AndEmptyNames() {
    // "Küche" is 6 bytes, "Küche-01" 9.
    #expect(
      LegacyAdvertisingData(serviceUUIDs: [Self.transfer], localName: "Küche").localName
        == "Küche")
    #expect(
      LegacyAdvertisingData(serviceUUIDs: [Self.transfer], localName: "Küche-01")
        .droppedLocalName == "Küche-01")
    let empty = LegacyAdvertisingData(serviceUUIDs: [Self.transfer], localName: "")
    #expect(empty.localName == nil && empty.droppedLocalName == nil && empty.length == 21)
  }

  @Test("UUID lists: one AD structure per size")
  func uuidLists() {
    #expect(LegacyAdvertisingData.uuidListsLength([]) == 0)
    #expect(
      LegacyAdvertisingData.uuidListsLength([
        BluetoothUUID(uuid16: 0x180F), BluetoothUUID(uuid16: 0x180A),
      ]) == 6)
    #expect(
      LegacyAdvertisingData.uuidListsLength([BluetoothUUID(uuid16: 0x180F), Self.transfer])
        == 4 + 18)
    // A 32-bit SIG UUID stays 128-bit in bluetoothd 5.66.
    #expect(LegacyAdvertisingData.uuidListsLength([BluetoothUUID(uuid32: 0x1234_5678)]) == 18)
  }

  static func adapters(_ specs: [(String, Bool, Bool)]) throws -> PeripheralAdapters {
    var objects: [(DBusValue, DBusValue)] = []
    for (id, powered, capable) in specs {
      var interfaces: [(DBusValue, DBusValue)] = [
        (.string(BlueZNames.adapter), .properties(["Powered": .bool(powered)]))
      ]
      if capable {
        interfaces.append((.string(BlueZNames.gattManager), .properties([:])))
        interfaces.append((.string(BlueZNames.advertisingManager), .properties([:])))
      }
      objects.append(
        (
          .objectPath(try DBusObjectPath("/org/bluez/" + id)),
          .dictionary(key: "s", value: "a{sv}", interfaces)
        ))
    }
    var adapters = PeripheralAdapters()
    try adapters.load([.dictionary(key: "o", value: "a{sa{sv}}", objects)])
    return adapters
  }

  @Test(
    "a snapshot taken again: a device it finds disconnected (the signal lost) is reported once, a bonded one not"
  )
  func snapshotAgainReportsLostLinks() throws {
    func snapshot(_ devices: [(String, Bool, Bool)]) throws -> [DBusValue] {
      let objects: [(DBusValue, DBusValue)] = try devices.map { name, connected, paired in
        (
          .objectPath(try DBusObjectPath("/org/bluez/hci0/" + name)),
          .dictionary(
            key: "s", value: "a{sv}",
            [
              (
                .string(BlueZNames.device),
                .properties(["Connected": .bool(connected), "Paired": .bool(paired)])
              )
            ])
        )
      }
      return [.dictionary(key: "o", value: "a{sa{sv}}", objects)]
    }
    var adapters = PeripheralAdapters()
    try adapters.load(
      snapshot([("dev_A", true, false), ("dev_B", true, true), ("dev_C", true, false)]))
    #expect(adapters.takeDisconnected().isEmpty)
    try adapters.load(
      snapshot([("dev_A", false, false), ("dev_B", false, true), ("dev_C", true, false)]))
    #expect(adapters.takeDisconnected() == [try DBusObjectPath("/org/bluez/hci0/dev_A")])
    #expect(adapters.connected == [try DBusObjectPath("/org/bluez/hci0/dev_C")])
    #expect(adapters.takeDisconnected().isEmpty)
  }

  @Test("a requested adapter is used only when present, powered and LE-capable")
  func requestedAdapter() throws {
    let adapters = try Self.adapters([
      ("hci0", true, true), ("hci1", false, true), ("hci2", true, false),
    ])
    #expect(adapters.choose(requested: "hci0", current: nil) == .adapter("/org/bluez/hci0"))
    #expect(
      adapters.choose(requested: "hci1", current: nil)
        == .unavailable("adapter hci1 is powered off"))
    #expect(
      adapters.choose(requested: "hci2", current: nil)
        == .unavailable("adapter hci2 offers no LE advertising or GATT server"))
    #expect(
      adapters.choose(requested: "hci9", current: nil)
        == .unavailable("adapter hci9 is not present"))
  }

  @Test("without a request: the current adapter while usable, else the first powered one")
  func anyAdapter() throws {
    let adapters = try Self.adapters([("hci1", true, true), ("hci0", true, true)])
    #expect(adapters.choose(requested: nil, current: nil) == .adapter("/org/bluez/hci0"))
    #expect(
      adapters.choose(requested: nil, current: "/org/bluez/hci1") == .adapter("/org/bluez/hci1"))
    let off = try Self.adapters([("hci0", false, true)])
    #expect(
      off.choose(requested: nil, current: "/org/bluez/hci0")
        == .unavailable("no powered Bluetooth adapter with LE advertising"))
    #expect(
      PeripheralAdapters().choose(requested: nil, current: nil)
        == .unavailable("no Bluetooth adapter is present"))
  }

  @Test(
    "the peripheral is handed only the signals its adapters act on: not devices' RSSI and advertising data"
  )
  func signalsWanted() {
    let peripheral = BlueZPeripheral(
      configuration: BlueZPeripheralConfiguration(
        bus: BlueZSessionConfiguration(busAddress: "unix:path=/nonexistent")),
      logger: Logger(label: "test"))
    func changed(_ interface: String, _ properties: [String: DBusValue]) -> DBusSignal {
      DBusSignal(
        sender: ":1.1", path: "/org/bluez/hci0/dev_11_22_33_44_55_66",
        interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged",
        arguments: [.string(interface), .properties(properties), .strings([])])
    }
    #expect(!peripheral.wants(changed(BlueZNames.device, ["RSSI": .int16(-60)])))
    #expect(
      !peripheral.wants(
        changed(BlueZNames.device, ["ManufacturerData": .properties([:]), "TxPower": .int16(4)])))
    #expect(!peripheral.wants(changed(BlueZNames.gattCharacteristic, ["Value": .bytes([1])])))
    #expect(peripheral.wants(changed(BlueZNames.device, ["Connected": .bool(true)])))
    #expect(peripheral.wants(changed(BlueZNames.adapter, ["Powered": .bool(false)])))
    #expect(
      peripheral.wants(
        DBusSignal(
          sender: ":1.1", path: "/", interface: "org.freedesktop.DBus.ObjectManager",
          member: "InterfacesAdded", arguments: [])))
  }

  @Test("signals: power changes, new and removed adapters matter; other changes do not")
  func adapterSignals() throws {
    var adapters = try Self.adapters([("hci0", true, true)])
    func signal(_ path: DBusObjectPath, _ interface: String, _ member: String, _ args: [DBusValue])
      -> DBusSignal
    {
      DBusSignal(sender: ":1.1", path: path, interface: interface, member: member, arguments: args)
    }
    let hci0: DBusObjectPath = "/org/bluez/hci0"
    let properties = "org.freedesktop.DBus.Properties"
    let manager = "org.freedesktop.DBus.ObjectManager"
    let discovering = adapters.apply(
      signal(
        hci0, properties, "PropertiesChanged",
        [.string(BlueZNames.adapter), .properties(["Discovering": .bool(true)]), .strings([])]))
    #expect(!discovering)
    let poweredOff = adapters.apply(
      signal(
        hci0, properties, "PropertiesChanged",
        [.string(BlueZNames.adapter), .properties(["Powered": .bool(false)]), .strings([])]))
    #expect(poweredOff)
    #expect(
      adapters.choose(requested: "hci0", current: nil)
        == .unavailable("adapter hci0 is powered off"))
    let lostLE = adapters.apply(
      signal(
        "/", manager, "InterfacesRemoved",
        [.objectPath(hci0), .strings([BlueZNames.advertisingManager])]))
    #expect(lostLE)
    #expect(adapters.entries[hci0]?.canPublish == false)
    let removed = adapters.apply(
      signal(
        "/", manager, "InterfacesRemoved", [.objectPath(hci0), .strings([BlueZNames.adapter])]))
    #expect(removed)
    #expect(adapters.entries.isEmpty)
    // A device appearing changes nothing here.
    let device = adapters.apply(
      signal(
        "/", manager, "InterfacesAdded",
        [
          .objectPath("/org/bluez/hci0/dev_11_22_33_44_55_66"),
          .dictionary(
            key: "s", value: "a{sv}", [(.string(BlueZNames.device), .properties([:]))]),
        ]))
    #expect(!device)
    let added = adapters.apply(
      signal(
        "/", manager, "InterfacesAdded",
        [
          .objectPath("/org/bluez/hci1"),
          .dictionary(
            key: "s", value: "a{sv}",
            [
              (.string(BlueZNames.adapter), .properties(["Powered": .bool(true)])),
              (.string(BlueZNames.gattManager), .properties([:])),
              (.string(BlueZNames.advertisingManager), .properties([:])),
            ]),
        ]))
    #expect(added)
    #expect(adapters.choose(requested: nil, current: nil) == .adapter("/org/bluez/hci1"))
  }

  @Test("request options: offset, mtu and the central from the device path")
  func requestOptions() throws {
    let options = PeripheralRequestOptions(
      .properties([
        "offset": .uint16(22), "mtu": .uint16(185), "link": .string("LE"),
        "device": .objectPath("/org/bluez/hci0/dev_A4_C1_38_1E_29_DF"),
      ]))
    #expect(options.offset == 22 && options.mtu == 185)
    #expect(options.central == (try BluetoothAddress("A4:C1:38:1E:29:DF")))
    let wrongTypes = PeripheralRequestOptions(
      .properties(["offset": .int32(5), "mtu": .string("x"), "device": .string("dev_00")]))
    #expect(wrongTypes == PeripheralRequestOptions(nil))
    #expect(PeripheralRequestOptions(nil).offset == 0)
  }
}
