/// The Home Assistant sensor of a SIG characteristic's value on `<dev>/gatt/<svc>/<chr>`, with
/// a template for each value format that carries the bytes (`hex`, `json`) or the
/// ``SIGValueDecoder`` members (`decoded`).
struct SIGEntity: Sendable {
  let object: String
  let name: String
  let deviceClass: String?
  let unit: String?
  let icon: String?
  /// The template over the value's hex digits, written with `HEX` standing for them.
  let hex: String
  /// The template over ``SIGValueDecoder``'s members.
  let decoded: String

  /// The value template for a format; `nil` for formats a template cannot read.
  func template(_ format: ValueFormat) -> String? {
    switch format {
    case .hex: hex.replacing("HEX", with: "value")
    case .json: hex.replacing("HEX", with: "value_json.hex")
    case .decoded: decoded
    case .base64, .utf8, .raw: nil
    }
  }

  /// A little-endian unsigned integer of `bytes` bytes from the hex digits.
  private static func little(_ bytes: Int) -> String {
    "((" + (0..<bytes).reversed().map { "h[\($0 * 2):\($0 * 2 + 2)]" }.joined(separator: " ~ ")
      + ") | int(0, 16))"
  }

  static let all: [UInt16: SIGEntity] = [
    0x2A19: SIGEntity(
      object: "battery", name: "Battery", deviceClass: "battery", unit: "%", icon: nil,
      hex: "{% set h = HEX %}{{ \(little(1)) }}",
      decoded: "{{ value_json.battery_level }}"),
    0x2A37: SIGEntity(
      object: "heart_rate", name: "Heart rate", deviceClass: nil, unit: "bpm",
      icon: "mdi:heart-pulse",
      hex: "{% set h = HEX %}{{ ((h[4:6] ~ h[2:4]) if (h[0:2] | int(0, 16)) % 2 == 1 "
        + "else h[2:4]) | int(0, 16) }}",
      decoded: "{{ value_json.heart_rate }}"),
    0x2A6E: SIGEntity(
      object: "temperature", name: "Temperature", deviceClass: "temperature", unit: "°C",
      icon: nil,
      hex:
        "{% set h = HEX %}{% set v = \(little(2)) %}{{ ((v - 65536) if v > 32767 else v) / 100 }}",
      decoded: "{{ value_json.temperature if value_json.temperature is not none else '' }}"),
    0x2A6F: SIGEntity(
      object: "humidity", name: "Humidity", deviceClass: "humidity", unit: "%", icon: nil,
      hex: "{% set h = HEX %}{{ \(little(2)) / 100 }}",
      decoded: "{{ value_json.humidity if value_json.humidity is not none else '' }}"),
    0x2A6D: SIGEntity(
      object: "pressure", name: "Pressure", deviceClass: "pressure", unit: "hPa", icon: nil,
      hex: "{% set h = HEX %}{{ \(little(4)) / 1000 }}",
      decoded: "{{ value_json.pressure / 100 }}"),
  ]
}
