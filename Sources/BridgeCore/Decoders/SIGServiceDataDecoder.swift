/// Service data keyed by a Bluetooth SIG UUID: the Battery service and the characteristic
/// UUIDs of battery level, temperature, humidity and pressure (values as the GATT
/// Specification Supplement encodes them, little-endian), and the Environmental Sensing
/// service data of the ATC1441 and pvvx thermometer firmwares.
enum SIGServiceDataDecoder {
  /// Decodes service data under a 16-bit SIG UUID; other UUIDs are left alone.
  static func decode(_ uuid: UInt16, _ data: [UInt8], into result: inout DecodedAdvertisement) {
    var reader = ByteReader(data)
    switch uuid {
    case 0x180F, 0x2A19:
      guard data.count == 1, let level = reader.unsigned(1) else {
        return result.fail("sig", "battery level: \(data.count) bytes, 1 expected")
      }
      guard level <= 100 else { return result.fail("sig", "battery level \(level) % over 100") }
      result.set("battery", level)
    case 0x2A6E:
      guard data.count == 2, let value = reader.signed(2) else {
        return result.fail("sig", "temperature: \(data.count) bytes, 2 expected")
      }
      guard value != -0x8000 else { return }  // "value is not known"
      result.set("temperature", Double(value) / 100)
    case 0x2A6F:
      guard data.count == 2, let value = reader.unsigned(2) else {
        return result.fail("sig", "humidity: \(data.count) bytes, 2 expected")
      }
      guard value != 0xFFFF else { return }
      result.set("humidity", Double(value) / 100)
    case 0x2A6D:
      guard data.count == 4, let value = reader.unsigned(4) else {
        return result.fail("sig", "pressure: \(data.count) bytes, 4 expected")
      }
      result.set("pressure", Double(value) / 1000)  // 0.1 Pa → hPa
    default:
      return
    }
    result.note("sig")
  }

  /// Environmental Sensing (`181a`) service data: the ATC1441 layout (13 bytes, big-endian:
  /// MAC, temperature 0.1 °C, humidity %, battery %, battery mV, frame counter) or the pvvx
  /// layout (15 bytes, little-endian: MAC reversed, temperature 0.01 °C, humidity 0.01 %,
  /// battery mV, battery %, counter, flags).
  static func decodeEnvironmental(_ data: [UInt8], into result: inout DecodedAdvertisement) {
    var reader = ByteReader(data, offset: 6)
    switch data.count {
    case 13:
      guard let temperature = reader.signed(2, bigEndian: true), let humidity = reader.unsigned(1),
        let battery = reader.unsigned(1), let millivolts = reader.unsigned(2, bigEndian: true),
        let counter = reader.unsigned(1)
      else { return }
      result.note("atc1441")
      result.set("temperature", Double(temperature) / 10)
      result.set("humidity", humidity)
      result.set("battery", battery)
      result.set("voltage", Double(millivolts) / 1000)
      result.set("packet_id", counter)
    case 15:
      guard let temperature = reader.signed(2), let humidity = reader.unsigned(2),
        let millivolts = reader.unsigned(2), let battery = reader.unsigned(1),
        let counter = reader.unsigned(1)
      else { return }
      result.note("pvvx")
      result.set("temperature", Double(temperature) / 100)
      result.set("humidity", Double(humidity) / 100)
      result.set("voltage", Double(millivolts) / 1000)
      result.set("battery", battery)
      result.set("packet_id", counter)
    default:
      result.fail(
        "environmental_sensing", "\(data.count) bytes, 13 (ATC1441) or 15 (pvvx) expected")
    }
  }
}
