/// Eddystone service data (UUID `feaa`): UID, URL and unencrypted TLM frames
/// (google/eddystone, protocol specification). EID and other frames are not decoded.
enum EddystoneDecoder {
  /// URL scheme prefixes by code.
  static let schemes = ["http://www.", "https://www.", "http://", "https://"]
  /// URL expansions for the codes 0x00–0x0D.
  static let expansions = [
    ".com/", ".org/", ".edu/", ".net/", ".info/", ".biz/", ".gov/",
    ".com", ".org", ".edu", ".net", ".info", ".biz", ".gov",
  ]

  /// Decodes one Eddystone frame into `result`.
  static func decode(_ data: [UInt8], into result: inout DecodedAdvertisement) {
    guard let frame = data.first else {
      result.fail("eddystone", "empty frame")
      return
    }
    switch frame {
    case 0x00: uid(data, into: &result)
    case 0x10: url(data, into: &result)
    case 0x20: telemetry(data, into: &result)
    default: result.fail("eddystone", "frame type 0x\(Hex.encode([frame])) not decoded")
    }
  }

  private static func uid(_ data: [UInt8], into result: inout DecodedAdvertisement) {
    var reader = ByteReader(data, offset: 1)
    guard let power = reader.signed(1), let namespace = reader.take(10),
      let instance = reader.take(6)
    else {
      result.fail("eddystone_uid", "\(data.count) bytes, at least 18 expected")
      return
    }
    result.note("eddystone_uid")
    result.set("eddystone_namespace", .string(Hex.encode(namespace)))
    result.set("eddystone_instance", .string(Hex.encode(instance)))
    result.set("tx_power_0m", power)
  }

  private static func url(_ data: [UInt8], into result: inout DecodedAdvertisement) {
    guard data.count >= 3 else {
      result.fail("eddystone_url", "\(data.count) bytes, at least 3 expected")
      return
    }
    let power = Int8(bitPattern: data[1])
    guard Int(data[2]) < schemes.count else {
      result.fail("eddystone_url", "unknown URL scheme 0x\(Hex.encode([data[2]]))")
      return
    }
    var text = schemes[Int(data[2])]
    for byte in data.dropFirst(3) {
      if Int(byte) < expansions.count {
        text += expansions[Int(byte)]
      } else if byte > 0x20, byte < 0x7F {
        text.unicodeScalars.append(Unicode.Scalar(byte))
      } else {
        result.fail("eddystone_url", "byte 0x\(Hex.encode([byte])) is not allowed in a URL")
        return
      }
    }
    result.note("eddystone_url")
    result.set("url", .string(text))
    result.set("tx_power_0m", power)
  }

  private static func telemetry(_ data: [UInt8], into result: inout DecodedAdvertisement) {
    var reader = ByteReader(data, offset: 1)
    guard let version = reader.unsigned(1) else {
      result.fail("eddystone_tlm", "no version byte")
      return
    }
    guard version == 0 else {
      result.fail("eddystone_tlm", "version \(version) (encrypted) not decoded")
      return
    }
    guard let millivolts = reader.unsigned(2, bigEndian: true),
      let temperature = reader.signed(2, bigEndian: true),
      let advertisements = reader.unsigned(4, bigEndian: true),
      let tenths = reader.unsigned(4, bigEndian: true)
    else {
      result.fail("eddystone_tlm", "\(data.count) bytes, 14 expected")
      return
    }
    result.note("eddystone_tlm")
    // 0 mV and -128 °C (0x8000) mean "not supported".
    if millivolts != 0 { result.set("voltage", Double(millivolts) / 1000) }
    if temperature != -0x8000 { result.set("temperature", Double(temperature) / 256) }
    result.set("advertisement_count", advertisements)
    result.set("uptime", Double(tenths) / 10)
  }
}
