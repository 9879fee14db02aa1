/// The D-Bus names of the BlueZ API this module uses.
enum BlueZNames {
  static let service = "org.bluez"
  static let adapter = "org.bluez.Adapter1"
  static let device = "org.bluez.Device1"
  static let gattService = "org.bluez.GattService1"
  static let gattCharacteristic = "org.bluez.GattCharacteristic1"
  static let gattDescriptor = "org.bluez.GattDescriptor1"
  static let objectManager = "org.freedesktop.DBus.ObjectManager"
  static let properties = "org.freedesktop.DBus.Properties"
}
