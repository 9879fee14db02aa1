/// What the controller says about a connected device's link: its RSSI and transmit power.
public struct LinkQuality: Sendable, Hashable {
  /// The RSSI of the link in dBm.
  public var rssi: Int
  /// The controller's current transmit power on the link in dBm, when known.
  public var txPower: Int?
  /// The controller's highest transmit power on the link in dBm, when known.
  public var maxTxPower: Int?

  /// Makes a reading.
  ///
  /// - Parameters:
  ///   - rssi: The RSSI in dBm.
  ///   - txPower: The current transmit power, when known.
  ///   - maxTxPower: The highest transmit power, when known.
  public init(rssi: Int, txPower: Int? = nil, maxTxPower: Int? = nil) {
    self.rssi = rssi
    self.txPower = txPower
    self.maxTxPower = maxTxPower
  }

  /// `{"rssi":-61,"tx_power":4,"max_tx_power":4}` (the powers only when known).
  public var json: JSONObject {
    var object: JSONObject = ["rssi": .integer(Int64(rssi))]
    if let txPower { object["tx_power"] = .integer(Int64(txPower)) }
    if let maxTxPower { object["max_tx_power"] = .integer(Int64(maxTxPower)) }
    return object
  }
}

/// Reads a connected device's link quality beside the Bluetooth stack (row C11): a connected
/// peripheral usually stops advertising, so its RSSI must come from the link. BlueZ 5.66 has no
/// D-Bus call for it; the kernel's management interface does (Get Connection Information), and
/// needs `CAP_NET_ADMIN`.
public protocol LinkQualityReader: Sendable {
  /// Reads the link to a connected device.
  ///
  /// - Parameters:
  ///   - address: The device.
  ///   - type: Its address type.
  ///   - adapter: The adapter the link is on (`hci0`).
  /// - Returns: The reading.
  /// - Throws: ``CentralError``: `not_permitted` without the capability, `not_connected` when
  ///   the adapter has no link to the device, `unavailable` when the kernel has no Bluetooth
  ///   management interface, `unknown_adapter`, `timeout`.
  func linkQuality(
    of address: BluetoothAddress, type: Advertisement.AddressType, adapter: String
  ) async throws(CentralError) -> LinkQuality
}
