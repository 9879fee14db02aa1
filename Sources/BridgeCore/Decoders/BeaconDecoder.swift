/// Manufacturer-data formats: Apple's iBeacon (company `004c`) and Ruuvi's RAWv2 (company
/// `0499`, data format 5).
enum BeaconDecoder {
  /// iBeacon: `02 15`, a 16-byte proximity UUID, major and minor (big-endian) and the measured
  /// power at 1 m. Other Apple data (AirDrop, Find My, …) is not an error: it is not decoded.
  static func decodeIBeacon(_ data: [UInt8], into result: inout DecodedAdvertisement) {
    guard data.count >= 2, data[0] == 0x02 else { return }
    guard data[1] == 0x15, data.count == 23 else {
      result.fail("ibeacon", "\(data.count) bytes with length field \(data[1]), 23 and 21 expected")
      return
    }
    var reader = ByteReader(data, offset: 2)
    guard let uuid = reader.take(16).flatMap(BluetoothUUID.init(bytes:)),
      let major = reader.unsigned(2, bigEndian: true),
      let minor = reader.unsigned(2, bigEndian: true), let power = reader.signed(1)
    else { return }
    result.note("ibeacon")
    result.set("ibeacon_uuid", .string(uuid.longForm))
    result.set("ibeacon_major", major)
    result.set("ibeacon_minor", minor)
    result.set("tx_power_1m", power)
  }

  /// Ruuvi data format 5 (docs.ruuvi.com): 24 bytes, big-endian; each field's all-ones (or
  /// most negative) value means "not available" and is left out.
  static func decodeRuuvi(_ data: [UInt8], into result: inout DecodedAdvertisement) {
    guard let format = data.first else {
      result.fail("ruuvi", "empty manufacturer data")
      return
    }
    guard format == 5 else {
      result.fail("ruuvi", "data format \(format) not decoded (5 is)")
      return
    }
    var reader = ByteReader(data, offset: 1)
    guard data.count >= 24, let temperature = reader.signed(2, bigEndian: true),
      let humidity = reader.unsigned(2, bigEndian: true),
      let pressure = reader.unsigned(2, bigEndian: true),
      let x = reader.signed(2, bigEndian: true), let y = reader.signed(2, bigEndian: true),
      let z = reader.signed(2, bigEndian: true), let power = reader.unsigned(2, bigEndian: true),
      let movements = reader.unsigned(1), let sequence = reader.unsigned(2, bigEndian: true),
      let mac = reader.take(6)
    else {
      result.fail("ruuvi_v5", "\(data.count) bytes, 24 expected")
      return
    }
    result.note("ruuvi_v5")
    if temperature != -0x8000 { result.set("temperature", Double(temperature) / 200) }
    if humidity != 0xFFFF { result.set("humidity", Double(humidity) / 400) }
    if pressure != 0xFFFF { result.set("pressure", Double(pressure + 50_000) / 100) }
    for (axis, value) in [("x", x), ("y", y), ("z", z)] where value != -0x8000 {
      result.set("acceleration_\(axis)", Double(value) / 1000)
    }
    let millivolts = power >> 5
    if millivolts != 0x7FF { result.set("voltage", Double(millivolts + 1600) / 1000) }
    if power & 0x1F != 0x1F { result.set("tx_power", Int(power & 0x1F) * 2 - 40) }
    if movements != 0xFF { result.set("movement_counter", movements) }
    if sequence != 0xFFFF { result.set("measurement_sequence", sequence) }
    if mac != [UInt8](repeating: 0xFF, count: 6) {
      result.set("mac", .string(mac.map { Hex.encode([$0]) }.joined(separator: ":").uppercased()))
    }
  }
}
