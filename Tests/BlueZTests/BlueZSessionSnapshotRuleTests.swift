import DBus
import Testing

@testable import BlueZ

/// Which signals ``BlueZSession`` hands on after a snapshot (``BlueZSession/isHandedOn(_:snapshotSerial:)``):
/// those bluetoothd sent before the snapshot's reply are in the snapshot already, and handed on
/// they would put older values back; a characteristic's `Value` is a notification and always goes.
@Suite("BlueZSession: signals older than the snapshot")
struct BlueZSessionSnapshotRuleTests {
  /// A signal of bluetoothd numbered `serial`.
  static func signal(
    _ serial: UInt32, interface: String = "org.bluez.Device1",
    properties: [String: DBusValue] = ["Connected": .bool(true)]
  ) -> DBusSignal {
    var signal = DBusSignal(
      sender: ":1.5", path: "/org/bluez/hci0/dev_00_11_22_33_44_55",
      interface: "org.freedesktop.DBus.Properties", member: "PropertiesChanged",
      arguments: [.string(interface), .properties(properties), .strings([])])
    signal.serial = serial
    return signal
  }

  @Test(
    "a property change sent before the snapshot's reply is dropped, one sent after it is handed on")
  func olderDropped() {
    #expect(!BlueZSession.isHandedOn(Self.signal(99), snapshotSerial: 100))
    #expect(!BlueZSession.isHandedOn(Self.signal(100), snapshotSerial: 100))
    #expect(BlueZSession.isHandedOn(Self.signal(101), snapshotSerial: 100))
  }

  @Test("across the wrap-around of serials, order decides, not size")
  func wrapAround() {
    #expect(BlueZSession.isHandedOn(Self.signal(2), snapshotSerial: UInt32.max - 1))
    #expect(!BlueZSession.isHandedOn(Self.signal(UInt32.max - 2), snapshotSerial: UInt32.max - 1))
  }

  @Test("without a snapshot serial, and for a signal made here (serial 0), everything is handed on")
  func noSerial() {
    #expect(BlueZSession.isHandedOn(Self.signal(5), snapshotSerial: nil))
    #expect(BlueZSession.isHandedOn(Self.signal(0), snapshotSerial: 100))
  }

  @Test(
    "a characteristic's Value older than the snapshot is handed on (a notification); its other properties are not"
  )
  func notificationsPass() {
    let gatt = "org.bluez.GattCharacteristic1"
    #expect(
      BlueZSession.isHandedOn(
        Self.signal(50, interface: gatt, properties: ["Value": .bytes([1, 2])]), snapshotSerial: 100
      ))
    #expect(
      !BlueZSession.isHandedOn(
        Self.signal(50, interface: gatt, properties: ["Notifying": .bool(false)]),
        snapshotSerial: 100))
    // A Device1 property named Value would not be a notification.
    #expect(
      !BlueZSession.isHandedOn(
        Self.signal(50, properties: ["Value": .bytes([1])]), snapshotSerial: 100))
  }
}
