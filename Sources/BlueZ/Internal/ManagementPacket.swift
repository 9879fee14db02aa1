import BridgeCore

/// The packets of the kernel's Bluetooth management interface that the gateway uses
/// (BlueZ's doc/mgmt-api.txt): the Get Connection Information command and its replies. Every
/// field is little-endian; a packet is `opcode or event (2) | controller index (2) | length (2)
/// | parameters`.
enum ManagementPacket {
  /// Get Connection Information.
  static let getConnectionInformation: UInt16 = 0x0031
  /// Command Complete event.
  static let commandComplete: UInt16 = 0x0001
  /// Command Status event.
  static let commandStatus: UInt16 = 0x0002
  /// The RSSI the kernel reports when it has none (`HCI_RSSI_INVALID`).
  static let invalidRSSI: Int8 = 127
  /// The transmit power the kernel reports when it has none (`HCI_TX_POWER_INVALID`).
  static let invalidPower: Int8 = 127

  /// The controller index of an adapter id: `hci0` → 0.
  static func index(of adapter: String) -> UInt16? {
    guard adapter.hasPrefix("hci"), let number = UInt16(adapter.dropFirst(3)), number < 0xFFFF
    else { return nil }
    return number
  }

  /// The address type as the management interface numbers it: 1 LE public, 2 LE random.
  static func addressType(_ type: Advertisement.AddressType) -> UInt8 {
    type == .random ? 2 : 1
  }

  /// The Get Connection Information command for a device on a controller.
  static func getConnectionInformation(
    index: UInt16, address: BluetoothAddress, type: Advertisement.AddressType
  ) -> [UInt8] {
    var packet = le16(getConnectionInformation) + le16(index) + le16(7)
    packet += address.bytes.reversed()  // bdaddr_t is least significant byte first
    packet.append(addressType(type))
    return packet
  }

  /// What one packet read from the socket says about our command.
  enum Reply: Equatable {
    /// Not an answer to it (another event, another command, another controller).
    case unrelated
    /// The reading.
    case quality(LinkQuality)
    /// The kernel refused it with a management status code.
    case failed(status: UInt8)
  }

  /// Reads one packet.
  ///
  /// - Parameters:
  ///   - packet: What the socket returned.
  ///   - index: The controller the command went to.
  /// - Returns: What it says.
  static func reply(_ packet: [UInt8], index: UInt16) -> Reply {
    guard packet.count >= 9 else { return .unrelated }
    let event = u16(packet, 0)
    guard event == commandComplete || event == commandStatus, u16(packet, 2) == index,
      u16(packet, 6) == getConnectionInformation
    else { return .unrelated }
    let status = packet[8]
    guard status == 0 else { return .failed(status: status) }
    // Command Complete: opcode, status, then the address (6 + 1) and three signed bytes.
    guard event == commandComplete, packet.count >= 9 + 7 + 3 else {
      return .failed(status: 0xFF)
    }
    let rssi = Int8(bitPattern: packet[16])
    let tx = Int8(bitPattern: packet[17])
    let max = Int8(bitPattern: packet[18])
    guard rssi != invalidRSSI else { return .failed(status: 0xFE) }
    return .quality(
      LinkQuality(
        rssi: Int(rssi), txPower: tx == invalidPower ? nil : Int(tx),
        maxTxPower: max == invalidPower ? nil : Int(max)))
  }

  /// The error for a management status code.
  static func error(status: UInt8, adapter: String, address: BluetoothAddress) -> CentralError {
    switch status {
    case 0x02:
      CentralError(.notConnected, message: "\(adapter) has no link to \(address)")
    case 0x0F:
      CentralError(.poweredOff, message: "\(adapter) is powered off")
    case 0x11:
      CentralError(.unknownAdapter, message: "the kernel has no controller \(adapter)")
    case 0x14:
      CentralError(
        .notPermitted,
        message:
          "reading a link's RSSI through the kernel's Bluetooth management interface needs CAP_NET_ADMIN"
      )
    case 0xFE:
      CentralError(.bluezError, message: "the controller reported no RSSI for \(address)")
    case 0xFF:
      CentralError(.bluezError, message: "a short Get Connection Information reply")
    default:
      CentralError(
        .bluezError,
        message: "Get Connection Information for \(address) failed: management status 0x"
          + String(status, radix: 16))
    }
  }

  static func le16(_ value: UInt16) -> [UInt8] {
    [UInt8(value & 0xFF), UInt8(value >> 8)]
  }

  static func u16(_ bytes: [UInt8], _ offset: Int) -> UInt16 {
    UInt16(bytes[offset]) | UInt16(bytes[offset + 1]) << 8
  }
}
