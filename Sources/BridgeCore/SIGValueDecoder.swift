/// Decodes the values of well-known Bluetooth SIG characteristics into typed JSON members, for
/// the ``ValueFormat/decoded`` value format.
///
/// Multi-byte numbers are little-endian, as the GATT Specification Supplement defines them.
/// Known characteristics and their members:
///
/// | UUID | characteristic | members |
/// |---|---|---|
/// | `2a19` | Battery Level | `battery_level`: percent, integer 0–100 |
/// | `2a37` | Heart Rate Measurement | `heart_rate` (bpm), `sensor_contact` (boolean, only when the sensor reports it), `energy_expended` (kJ, when present), `rr_intervals` (seconds, when present) |
/// | `2a6e` | Temperature | `temperature`: °C, resolution 0.01; `null` when the sensor reports "not known" |
/// | `2a6f` | Humidity | `humidity`: percent, resolution 0.01; `null` when "not known" |
/// | `2a6d` | Pressure | `pressure`: Pa, resolution 0.1 |
/// | `2a00`, `2a24`–`2a29` | Device Name, Model Number, Serial Number, Firmware, Hardware and Software Revision, Manufacturer Name | `value`: the UTF-8 text, without trailing NUL bytes |
///
/// A value that does not have the characteristic's layout (too short, trailing bytes, a reserved
/// value, text that is not UTF-8) is not decoded: the caller falls back to the `json` format.
public enum SIGValueDecoder {
  /// The characteristics this decoder knows.
  public static let knownCharacteristics: Set<BluetoothUUID> = Set(
    [0x2A19, 0x2A37, 0x2A6E, 0x2A6F, 0x2A6D].map { BluetoothUUID(uuid16: $0) }
      + stringCharacteristics.map { BluetoothUUID(uuid16: $0) })

  /// The 16-bit UUIDs of the UTF-8 string characteristics.
  private static let stringCharacteristics: [UInt16] = [
    0x2A00, 0x2A24, 0x2A25, 0x2A26, 0x2A27, 0x2A28, 0x2A29,
  ]

  /// The typed members of a known characteristic's value.
  ///
  /// Never traps, whatever the bytes.
  ///
  /// - Parameters:
  ///   - bytes: The value as read or notified.
  ///   - characteristic: The characteristic's UUID.
  /// - Returns: The members, for example `{"battery_level":87}`; `nil` when the characteristic is
  ///   not one of ``knownCharacteristics`` or the value is malformed.
  public static func decode(_ bytes: [UInt8], characteristic: BluetoothUUID) -> JSONObject? {
    guard let uuid16 = characteristic.uuid16 else { return nil }
    var reader = Reader(bytes)
    switch uuid16 {
    case 0x2A19: return batteryLevel(&reader)
    case 0x2A37: return heartRateMeasurement(&reader)
    case 0x2A6E: return temperature(&reader)
    case 0x2A6F: return humidity(&reader)
    case 0x2A6D: return pressure(&reader)
    case _ where stringCharacteristics.contains(uuid16): return text(bytes)
    default: return nil
    }
  }

  /// Battery Level: uint8 percent, 101–255 reserved.
  private static func batteryLevel(_ reader: inout Reader) -> JSONObject? {
    guard let level = reader.uint8(), reader.isAtEnd, level <= 100 else { return nil }
    return ["battery_level": .integer(Int64(level))]
  }

  /// Heart Rate Measurement: flags, then the heart rate (uint8, or uint16 with flag bit 0),
  /// energy expended (uint16 kJ, flag bit 3) and RR intervals (uint16 in 1/1024 s, flag bit 4).
  /// Flag bit 2 says whether sensor contact is supported, bit 1 whether contact is detected.
  private static func heartRateMeasurement(_ reader: inout Reader) -> JSONObject? {
    guard let flags = reader.uint8() else { return nil }
    let rate = flags & 0x01 != 0 ? reader.uint16() : reader.uint8().map(UInt16.init)
    guard let rate else { return nil }
    var object: JSONObject = ["heart_rate": .integer(Int64(rate))]
    if flags & 0x04 != 0 {
      object["sensor_contact"] = .bool(flags & 0x02 != 0)
    }
    if flags & 0x08 != 0 {
      guard let energy = reader.uint16() else { return nil }
      object["energy_expended"] = .integer(Int64(energy))
    }
    if flags & 0x10 != 0 {
      var intervals: [JSONValue] = []
      while !reader.isAtEnd {
        guard let interval = reader.uint16() else { return nil }
        intervals.append(.number(Double(interval) / 1024))
      }
      object["rr_intervals"] = .array(intervals)
    }
    return reader.isAtEnd ? object : nil
  }

  /// Temperature: sint16 in 0.01 °C, `0x8000` = not known, at least -273.15 °C.
  private static func temperature(_ reader: inout Reader) -> JSONObject? {
    guard let raw = reader.uint16(), reader.isAtEnd else { return nil }
    if raw == 0x8000 { return ["temperature": .null] }
    let hundredths = Int16(bitPattern: raw)
    guard hundredths >= -27315 else { return nil }
    return ["temperature": .number(Double(hundredths) / 100)]
  }

  /// Humidity: uint16 in 0.01 %, `0xFFFF` = not known, at most 100 %.
  private static func humidity(_ reader: inout Reader) -> JSONObject? {
    guard let raw = reader.uint16(), reader.isAtEnd else { return nil }
    if raw == 0xFFFF { return ["humidity": .null] }
    guard raw <= 10000 else { return nil }
    return ["humidity": .number(Double(raw) / 100)]
  }

  /// Pressure: uint32 in 0.1 Pa.
  private static func pressure(_ reader: inout Reader) -> JSONObject? {
    guard let raw = reader.uint32(), reader.isAtEnd else { return nil }
    return ["pressure": .number(Double(raw) / 10)]
  }

  /// A UTF-8 string characteristic; trailing NUL padding is dropped.
  private static func text(_ bytes: [UInt8]) -> JSONObject? {
    var end = bytes.count
    while end > 0, bytes[end - 1] == 0 { end -= 1 }
    let text = Array(bytes[0..<end])
    guard UTF8Rules.firstInvalidOffset(text) == nil else { return nil }
    return ["value": .string(String(decoding: text, as: UTF8.self))]
  }

  /// Reads little-endian integers from the front of a value; `nil` past the end.
  private struct Reader {
    private let bytes: [UInt8]
    private var offset = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    var isAtEnd: Bool { offset == bytes.count }

    mutating func uint8() -> UInt8? {
      guard offset < bytes.count else { return nil }
      defer { offset += 1 }
      return bytes[offset]
    }

    mutating func uint16() -> UInt16? {
      littleEndian(byteCount: 2).map { UInt16(truncatingIfNeeded: $0) }
    }

    mutating func uint32() -> UInt32? {
      littleEndian(byteCount: 4).map { UInt32(truncatingIfNeeded: $0) }
    }

    private mutating func littleEndian(byteCount: Int) -> UInt64? {
      guard bytes.count - offset >= byteCount else { return nil }
      var value: UInt64 = 0
      for index in (offset..<offset + byteCount).reversed() {
        value = value << 8 | UInt64(bytes[index])
      }
      offset += byteCount
      return value
    }
  }
}
