/// The D-Bus names of BlueZ's peripheral-role API (`doc/gatt-api.txt`, `doc/advertising-api.txt`).
extension BlueZNames {
  static let gattManager = "org.bluez.GattManager1"
  static let advertisingManager = "org.bluez.LEAdvertisingManager1"
  static let advertisement = "org.bluez.LEAdvertisement1"
}
