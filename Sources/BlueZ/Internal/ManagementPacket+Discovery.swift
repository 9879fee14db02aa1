import BridgeCore

/// The management interface's discovery commands and events (bluez `doc/mgmt-api.txt`): what
/// ``ManagementScanner`` writes and reads. Pure.
extension ManagementPacket {
  /// Start Discovery.
  static let startDiscovery: UInt16 = 0x0023
  /// Stop Discovery.
  static let stopDiscovery: UInt16 = 0x0024
  /// Device Found event: one advertising report (an advertisement merged with its scan response
  /// by the kernel when it can).
  static let deviceFound: UInt16 = 0x0012
  /// Discovering event: discovery started or stopped on a controller.
  static let discovering: UInt16 = 0x0013
  /// The address types of LE discovery: LE public (bit 1) and LE random (bit 2).
  static let leDiscovery: UInt8 = 0x06

  /// The management status codes the scanner tells apart.
  enum Status {
    static let success: UInt8 = 0x00
    static let busy: UInt8 = 0x0A
    static let rejected: UInt8 = 0x0B
    static let notPowered: UInt8 = 0x0F
    static let invalidIndex: UInt8 = 0x11
    static let permissionDenied: UInt8 = 0x14
  }

  /// Start Discovery of LE devices on a controller.
  static func startDiscovery(index: UInt16) -> [UInt8] {
    header(startDiscovery, index: index, length: 1) + [leDiscovery]
  }

  /// Stop Discovery of LE devices on a controller.
  static func stopDiscovery(index: UInt16) -> [UInt8] {
    header(stopDiscovery, index: index, length: 1) + [leDiscovery]
  }

  /// One advertising report of a Device Found event.
  struct Report: Sendable, Hashable {
    /// The device's address.
    var address: BluetoothAddress
    /// Public or random (`nil`: a BR/EDR device, which the central does not scan for).
    var addressType: Advertisement.AddressType?
    /// The RSSI in dBm (127: not available).
    var rssi: Int
    /// The report's flags (bit 0 confirm name, bit 1 legacy pairing, bit 2 not connectable).
    var flags: UInt32
    /// The advertising data and scan response, as AD structures.
    var data: [UInt8]
  }

  /// What one packet from the control socket is.
  enum Event: Sendable, Hashable {
    /// An advertising report from a controller.
    case deviceFound(index: UInt16, Report)
    /// Discovery of the given address types started (`true`) or stopped on a controller.
    case discovering(index: UInt16, addressTypes: UInt8, on: Bool)
    /// The answer to a command (Command Complete or Command Status).
    case reply(index: UInt16, opcode: UInt16, status: UInt8)
    /// Anything else, or a packet too short for its kind.
    case other
  }

  /// Reads one packet of the control socket.
  ///
  /// - Parameter packet: What one `recv` returned.
  /// - Returns: What it is; ``Event/other`` for any packet that is short or not one of these.
  static func event(_ packet: [UInt8]) -> Event {
    guard packet.count >= 6 else { return .other }
    let code = u16(packet, 0)
    let index = u16(packet, 2)
    let length = Int(u16(packet, 4))
    guard packet.count >= 6 + length else { return .other }
    switch code {
    case commandComplete, commandStatus:
      guard length >= 3 else { return .other }
      return .reply(index: index, opcode: u16(packet, 6), status: packet[8])
    case discovering:
      guard length >= 2 else { return .other }
      return .discovering(index: index, addressTypes: packet[6], on: packet[7] != 0)
    case deviceFound:
      // bdaddr (6, least significant byte first), type (1), RSSI (1), flags (4), EIR length
      // (2), EIR.
      guard length >= 14 else { return .other }
      let dataLength = Int(u16(packet, 18))
      guard length >= 14 + dataLength,
        let address = BluetoothAddress(bytes: packet[6..<12].reversed())
      else { return .other }
      let type: Advertisement.AddressType? =
        switch packet[12] {
        case 1: .public
        case 2: .random
        default: nil
        }
      let flags =
        UInt32(packet[14]) | UInt32(packet[15]) << 8 | UInt32(packet[16]) << 16
        | UInt32(packet[17]) << 24
      return .deviceFound(
        index: index,
        Report(
          address: address, addressType: type, rssi: Int(Int8(bitPattern: packet[13])),
          flags: flags, data: Array(packet[20..<(20 + dataLength)])))
    default:
      return .other
    }
  }

  static func header(_ opcode: UInt16, index: UInt16, length: UInt16) -> [UInt8] {
    le16(opcode) + le16(index) + le16(length)
  }
}

/// The fields of advertising data (Core Supplement Part A) the gateway publishes, read from the
/// AD structures of one report. Pure; a malformed structure ends the reading (what came before
/// it stands), never a crash.
struct AdvertisingFields: Sendable, Hashable {
  /// The complete or shortened local name's bytes (the complete one wins).
  var name: [UInt8]?
  /// Whether ``name`` is the complete name.
  var nameComplete = false
  var txPower: Int?
  var manufacturerData: [UInt16: [UInt8]] = [:]
  var serviceData: [BluetoothUUID: [UInt8]] = [:]
  var serviceUUIDs: [BluetoothUUID] = []

  /// Reads the AD structures of `data`.
  init(_ data: [UInt8]) {
    var offset = 0
    while offset < data.count {
      let length = Int(data[offset])
      // A zero length is padding: the rest is unused.
      guard length > 0, offset + 1 + length <= data.count else { break }
      let type = data[offset + 1]
      let value = data[(offset + 2)..<(offset + 1 + length)]
      read(type, value)
      offset += 1 + length
    }
  }

  private mutating func read(_ type: UInt8, _ value: ArraySlice<UInt8>) {
    switch type {
    case 0x02, 0x03: addUUIDs(value, width: 2)
    case 0x04, 0x05: addUUIDs(value, width: 4)
    case 0x06, 0x07: addUUIDs(value, width: 16)
    case 0x08:
      if !nameComplete { name = Array(value) }
    case 0x09:
      name = Array(value)
      nameComplete = true
    case 0x0A:
      if let power = value.first { txPower = Int(Int8(bitPattern: power)) }
    case 0x16:
      if value.count >= 2, let uuid = Self.uuid(value.prefix(2)) {
        serviceData[uuid] = Array(value.dropFirst(2))
      }
    case 0x20:
      if value.count >= 4, let uuid = Self.uuid(value.prefix(4)) {
        serviceData[uuid] = Array(value.dropFirst(4))
      }
    case 0x21:
      if value.count >= 16, let uuid = Self.uuid(value.prefix(16)) {
        serviceData[uuid] = Array(value.dropFirst(16))
      }
    case 0xFF:
      if value.count >= 2 {
        let start = value.startIndex
        let company = UInt16(value[start]) | UInt16(value[start + 1]) << 8
        manufacturerData[company] = Array(value.dropFirst(2))
      }
    default:
      break
    }
  }

  private mutating func addUUIDs(_ value: ArraySlice<UInt8>, width: Int) {
    var start = value.startIndex
    while start + width <= value.endIndex {
      if let uuid = Self.uuid(value[start..<(start + width)]), !serviceUUIDs.contains(uuid) {
        serviceUUIDs.append(uuid)
      }
      start += width
    }
  }

  /// A UUID written least significant byte first, 2, 4 or 16 bytes long.
  static func uuid(_ bytes: ArraySlice<UInt8>) -> BluetoothUUID? {
    switch bytes.count {
    case 2:
      return BluetoothUUID(
        uuid16: UInt16(bytes[bytes.startIndex]) | UInt16(bytes[bytes.startIndex + 1]) << 8)
    case 4:
      let value = bytes.reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
      return BluetoothUUID(uuid32: value)
    case 16:
      return BluetoothUUID(bytes: bytes.reversed())
    default:
      return nil
    }
  }
}
