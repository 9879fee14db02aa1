/// BTHome v2 service data (UUID `fcd2`): one device-information byte, then objects of an id
/// byte and a value whose length the id fixes (bthome.io/format).
enum BTHomeDecoder {
  /// How an object's value is read and named.
  struct Object {
    let name: String
    /// Bytes of the value; 0 for the two variable-length ids (a length byte first).
    let width: Int
    let signed: Bool
    /// Decimal places: the value is the integer divided by 10^decimals.
    let decimals: Int
    let kind: Kind
    /// A factor that is no power of ten (0x58: 0.35 °C per step), or `nil`.
    let scale: Double?

    enum Kind { case number, binary, button, dimmer, text, raw, version }

    init(
      _ name: String, _ width: Int, signed: Bool = false, decimals: Int = 0, scale: Double? = nil,
      _ kind: Kind = .number
    ) {
      self.name = name
      self.width = width
      self.signed = signed
      self.decimals = decimals
      self.scale = scale
      self.kind = kind
    }
  }

  /// The object ids of BTHome v2 this decoder knows, by id.
  static let objects: [UInt8: Object] = [
    0x00: Object("packet_id", 1),
    0x01: Object("battery", 1),
    0x02: Object("temperature", 2, signed: true, decimals: 2),
    0x03: Object("humidity", 2, decimals: 2),
    0x04: Object("pressure", 3, decimals: 2),
    0x05: Object("illuminance", 3, decimals: 2),
    0x06: Object("mass_kg", 2, decimals: 2),
    0x07: Object("mass_lb", 2, decimals: 2),
    0x08: Object("dewpoint", 2, signed: true, decimals: 2),
    0x09: Object("count", 1),
    0x0A: Object("energy", 3, decimals: 3),
    0x0B: Object("power", 3, decimals: 2),
    0x0C: Object("voltage", 2, decimals: 3),
    0x0D: Object("pm25", 2),
    0x0E: Object("pm10", 2),
    0x0F: Object("generic_boolean", 1, .binary),
    0x10: Object("power_on", 1, .binary),
    0x11: Object("opening", 1, .binary),
    0x12: Object("co2", 2),
    0x13: Object("tvoc", 2),
    0x14: Object("moisture", 2, decimals: 2),
    0x15: Object("battery_low", 1, .binary),
    0x16: Object("battery_charging", 1, .binary),
    0x17: Object("carbon_monoxide", 1, .binary),
    0x18: Object("cold", 1, .binary),
    0x19: Object("connectivity", 1, .binary),
    0x1A: Object("door", 1, .binary),
    0x1B: Object("garage_door", 1, .binary),
    0x1C: Object("gas_detected", 1, .binary),
    0x1D: Object("heat", 1, .binary),
    0x1E: Object("light", 1, .binary),
    0x1F: Object("lock", 1, .binary),
    0x20: Object("moisture_detected", 1, .binary),
    0x21: Object("motion", 1, .binary),
    0x22: Object("moving", 1, .binary),
    0x23: Object("occupancy", 1, .binary),
    0x24: Object("plug", 1, .binary),
    // Not `presence`: that name is the device entity from RSSI (Home Assistant discovery).
    0x25: Object("presence_detected", 1, .binary),
    0x26: Object("problem", 1, .binary),
    0x27: Object("running", 1, .binary),
    0x28: Object("safety", 1, .binary),
    0x29: Object("smoke", 1, .binary),
    0x2A: Object("sound", 1, .binary),
    0x2B: Object("tamper", 1, .binary),
    0x2C: Object("vibration", 1, .binary),
    0x2D: Object("window", 1, .binary),
    0x2E: Object("humidity", 1),
    0x2F: Object("moisture", 1),
    0x3A: Object("button", 1, .button),
    0x3C: Object("dimmer", 2, .dimmer),
    0x3D: Object("count", 2),
    0x3E: Object("count", 4),
    0x3F: Object("rotation", 2, signed: true, decimals: 1),
    0x40: Object("distance_mm", 2),
    0x41: Object("distance_m", 2, decimals: 1),
    0x42: Object("duration", 3, decimals: 3),
    0x43: Object("current", 2, decimals: 3),
    0x44: Object("speed", 2, decimals: 2),
    0x45: Object("temperature", 2, signed: true, decimals: 1),
    0x46: Object("uv_index", 1, decimals: 1),
    0x47: Object("volume", 2, decimals: 1),
    0x48: Object("volume_ml", 2),
    0x49: Object("volume_flow_rate", 2, decimals: 3),
    0x4A: Object("voltage", 2, decimals: 1),
    0x4B: Object("gas", 3, decimals: 3),
    0x4C: Object("gas", 4, decimals: 3),
    0x4D: Object("energy", 4, decimals: 3),
    0x4E: Object("volume", 4, decimals: 3),
    0x4F: Object("water", 4, decimals: 3),
    0x50: Object("timestamp", 4),
    0x51: Object("acceleration", 2, decimals: 3),
    0x52: Object("gyroscope", 2, decimals: 3),
    0x53: Object("text", 0, .text),
    0x54: Object("raw", 0, .raw),
    0x55: Object("volume_storage", 4, decimals: 3),
    0x56: Object("conductivity", 2),
    0x57: Object("temperature", 1, signed: true),
    0x58: Object("temperature", 1, signed: true, scale: 0.35),
    0x59: Object("count", 1, signed: true),
    0x5A: Object("count", 2, signed: true),
    0x5B: Object("count", 4, signed: true),
    0x5C: Object("power", 4, signed: true, decimals: 2),
    0x5D: Object("current", 2, signed: true, decimals: 3),
    0xF0: Object("device_type_id", 2),
    0xF1: Object("firmware_version", 4, .version),
    0xF2: Object("firmware_version", 3, .version),
  ]

  /// The events of the button object (0x3A), by value.
  static let buttonEvents: [UInt32: String] = [
    0x00: "none", 0x01: "press", 0x02: "double_press", 0x03: "triple_press", 0x04: "long_press",
    0x05: "long_double_press", 0x06: "long_triple_press", 0x80: "hold_press",
  ]

  /// Decodes one BTHome service data value into `result`.
  static func decode(_ data: [UInt8], into result: inout DecodedAdvertisement) {
    var reader = ByteReader(data)
    guard let info = reader.unsigned(1) else {
      result.fail("bthome", "no device information byte")
      return
    }
    guard info >> 5 == 2 else {
      result.fail("bthome", "version \(info >> 5) is not BTHome v2")
      return
    }
    guard info & 0x01 == 0 else {
      result.fail("bthome", "encrypted (a bind key is not supported)")
      return
    }
    result.note("bthome")
    var seen: [String: Int] = [:]
    while reader.remaining > 0 {
      let at = reader.offset
      let id = UInt8(reader.unsigned(1) ?? 0)
      guard let object = objects[id] else {
        result.fail("bthome", "unknown object id 0x\(Hex.encode([id])) at byte \(at)")
        return
      }
      let count = (seen[object.name] ?? 0) + 1
      seen[object.name] = count
      let name = count == 1 ? object.name : "\(object.name)_\(count)"
      guard let value = read(object, from: &reader) else {
        result.fail(
          "bthome", "object 0x\(Hex.encode([id])) (\(object.name)) cut short at byte \(at)")
        return
      }
      result.set(name, value)
    }
  }

  /// Reads one object's value, or `nil` when the data ends first.
  private static func read(_ object: Object, from reader: inout ByteReader) -> JSONValue? {
    switch object.kind {
    case .text, .raw:
      guard let length = reader.unsigned(1), let bytes = reader.take(Int(length)) else {
        return nil
      }
      return object.kind == .text
        ? .string(String(decoding: bytes, as: UTF8.self)) : .string(Hex.encode(bytes))
    case .binary:
      return reader.unsigned(1).map { .bool($0 != 0) }
    case .button:
      return reader.unsigned(1).map { value in
        buttonEvents[value].map(JSONValue.string) ?? .integer(Int64(value))
      }
    case .dimmer:
      guard let event = reader.unsigned(1), let steps = reader.unsigned(1) else { return nil }
      switch event {
      case 1: return .integer(-Int64(steps))
      case 2: return .integer(Int64(steps))
      default: return .integer(0)
      }
    case .version:
      // Little-endian: the last byte is the major version (`1.2.3.4` for 04 03 02 01).
      guard let bytes = reader.take(object.width) else { return nil }
      return .string(bytes.reversed().map { String($0) }.joined(separator: "."))
    case .number:
      let raw: Int64
      if object.signed {
        guard let value = reader.signed(object.width) else { return nil }
        raw = Int64(value)
      } else {
        guard let value = reader.unsigned(object.width) else { return nil }
        raw = Int64(value)
      }
      if let scale = object.scale { return .number((Double(raw) * scale * 100).rounded() / 100) }
      return scaled(raw, decimals: object.decimals)
    }
  }

  /// `raw` / 10^decimals: an integer when there are no decimals. Dividing (not multiplying by
  /// 0.01) gives the shortest decimal text: 2506 / 100 prints as 25.06.
  static func scaled(_ raw: Int64, decimals: Int) -> JSONValue {
    guard decimals > 0 else { return .integer(raw) }
    var divisor = 1.0
    for _ in 0..<decimals { divisor *= 10 }
    return .number(Double(raw) / divisor)
  }
}
