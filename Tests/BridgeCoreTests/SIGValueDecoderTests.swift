import BridgeCore
import Testing

@Suite("SIGValueDecoder")
struct SIGValueDecoderTests {
  /// The decoded members as JSON text, or `nil`.
  private func decode(_ bytes: [UInt8], _ uuid16: UInt16) -> String? {
    SIGValueDecoder.decode(bytes, characteristic: BluetoothUUID(uuid16: uuid16)).map {
      JSONValue.object($0).serialized()
    }
  }

  @Test(
    "decodes battery level as a percentage",
    arguments: [([0x57], 87), ([0x00], 0), ([0x64], 100)] as [([UInt8], Int)])
  func batteryLevel(_ bytes: [UInt8], _ percent: Int) {
    #expect(decode(bytes, 0x2A19) == #"{"battery_level":\#(percent)}"#)
  }

  @Test(
    "refuses malformed battery levels",
    arguments: [[], [0x65], [0xFF], [0x57, 0x00]] as [[UInt8]])
  func batteryLevelMalformed(_ bytes: [UInt8]) {
    #expect(decode(bytes, 0x2A19) == nil)
  }

  @Test(
    "decodes heart-rate measurements by their flags",
    arguments: [
      // uint8 heart rate, no other field.
      ([0x00, 0x48], #"{"heart_rate":72}"#),
      // uint16 heart rate (flag bit 0), little-endian.
      ([0x01, 0x48, 0x01], #"{"heart_rate":328}"#),
      // Sensor contact supported (bit 2) and detected (bit 1).
      ([0x06, 0x48], #"{"heart_rate":72,"sensor_contact":true}"#),
      // Supported, not detected.
      ([0x04, 0x48], #"{"heart_rate":72,"sensor_contact":false}"#),
      // Detected bit without the supported bit: no contact information.
      ([0x02, 0x48], #"{"heart_rate":72}"#),
      // Energy expended (bit 3), kJ.
      ([0x08, 0x48, 0x10, 0x27], #"{"heart_rate":72,"energy_expended":10000}"#),
      // RR intervals (bit 4), 1/1024 s each.
      ([0x10, 0x48, 0x00, 0x04, 0x00, 0x02], #"{"heart_rate":72,"rr_intervals":[1,0.5]}"#),
      // RR flag without intervals.
      ([0x10, 0x48], #"{"heart_rate":72,"rr_intervals":[]}"#),
      // Everything.
      (
        [0x1F, 0x48, 0x01, 0x10, 0x27, 0x33, 0x03, 0x01, 0x04],
        #"{"heart_rate":328,"sensor_contact":true,"energy_expended":10000,"#
          + #""rr_intervals":[0.7998046875,1.0009765625]}"#
      ),
    ] as [([UInt8], String)])
  func heartRate(_ bytes: [UInt8], _ json: String) {
    #expect(decode(bytes, 0x2A37) == json)
  }

  @Test(
    "refuses truncated or over-long heart-rate measurements",
    arguments: [
      [],  // no flags
      [0x00],  // no heart rate
      [0x01, 0x48],  // uint16 heart rate cut short
      [0x08, 0x48, 0x10],  // energy expended cut short
      [0x18, 0x48],  // energy expended missing
      [0x10, 0x48, 0x00],  // half an RR interval
      [0x10, 0x48, 0x00, 0x04, 0x00],  // one and a half RR intervals
      [0x00, 0x48, 0x00],  // a trailing byte no flag announces
      [0x08, 0x48, 0x10, 0x27, 0x00, 0x04],  // RR intervals without their flag
    ] as [[UInt8]])
  func heartRateMalformed(_ bytes: [UInt8]) {
    #expect(decode(bytes, 0x2A37) == nil)
  }

  @Test(
    "decodes temperature in hundredths of a degree Celsius",
    arguments: [
      ([0x29, 0x09], "23.45"), ([0x00, 0x00], "0"), ([0xE6, 0xFB], "-10.5"),
      ([0x4D, 0x95], "-273.15"), ([0xFF, 0x7F], "327.67"), ([0x00, 0x80], "null"),
    ] as [([UInt8], String)])
  func temperature(_ bytes: [UInt8], _ value: String) {
    #expect(decode(bytes, 0x2A6E) == #"{"temperature":\#(value)}"#)
  }

  @Test(
    "refuses malformed temperatures",
    arguments: [[], [0x29], [0x29, 0x09, 0x00], [0x4C, 0x95]] as [[UInt8]])
  func temperatureMalformed(_ bytes: [UInt8]) {
    #expect(decode(bytes, 0x2A6E) == nil)
  }

  @Test(
    "decodes humidity in hundredths of a percent",
    arguments: [
      ([0x5D, 0x17], "59.81"), ([0x00, 0x00], "0"), ([0x10, 0x27], "100"),
      ([0xFF, 0xFF], "null"),
    ] as [([UInt8], String)])
  func humidity(_ bytes: [UInt8], _ value: String) {
    #expect(decode(bytes, 0x2A6F) == #"{"humidity":\#(value)}"#)
  }

  @Test(
    "refuses malformed humidity",
    arguments: [[], [0x5D], [0x5D, 0x17, 0x00], [0x11, 0x27], [0xFE, 0xFF]] as [[UInt8]])
  func humidityMalformed(_ bytes: [UInt8]) {
    #expect(decode(bytes, 0x2A6F) == nil)
  }

  @Test(
    "decodes pressure in tenths of a pascal",
    arguments: [
      ([0x02, 0x76, 0x0F, 0x00], "101325"), ([0x03, 0x76, 0x0F, 0x00], "101325.1"),
      ([0x00, 0x00, 0x00, 0x00], "0"), ([0xFF, 0xFF, 0xFF, 0xFF], "429496729.5"),
    ] as [([UInt8], String)])
  func pressure(_ bytes: [UInt8], _ value: String) {
    #expect(decode(bytes, 0x2A6D) == #"{"pressure":\#(value)}"#)
  }

  @Test(
    "refuses malformed pressure",
    arguments: [[], [0x02, 0x76, 0x0F], [0x02, 0x76, 0x0F, 0x00, 0x00]] as [[UInt8]])
  func pressureMalformed(_ bytes: [UInt8]) {
    #expect(decode(bytes, 0x2A6D) == nil)
  }

  @Test(
    "decodes the string characteristics as UTF-8 text",
    arguments: [0x2A00, 0x2A24, 0x2A25, 0x2A26, 0x2A27, 0x2A28, 0x2A29] as [UInt16])
  func strings(_ uuid16: UInt16) {
    #expect(decode(Array("Polar H10".utf8), uuid16) == #"{"value":"Polar H10"}"#)
    #expect(decode(Array("Küche 🔋".utf8), uuid16) == #"{"value":"Küche 🔋"}"#)
    #expect(decode([], uuid16) == #"{"value":""}"#)
    // NUL padding at the end is dropped; escapes in the text stay escaped.
    #expect(decode(Array("1.2\"\n".utf8) + [0, 0], uuid16) == #"{"value":"1.2\"\n"}"#)
    // Invalid UTF-8 is not decoded.
    #expect(decode([0x41, 0xFF], uuid16) == nil)
    #expect(decode([0x41, 0xC3], uuid16) == nil)
    #expect(decode([0xED, 0xA0, 0x80], uuid16) == nil)
  }

  @Test("does not decode unknown characteristics")
  func unknown() throws {
    #expect(decode([0x57], 0x2A1C) == nil)
    #expect(decode([0x57], 0x180F) == nil)
    let vendor = try BluetoothUUID("6e400001-b5a3-f393-e0a9-e50e24dcca9e")
    #expect(SIGValueDecoder.decode([0x57], characteristic: vendor) == nil)
    // A 32-bit SIG UUID whose low 16 bits look like Battery Level.
    #expect(SIGValueDecoder.decode([0x57], characteristic: BluetoothUUID(uuid32: 0x1_2A19)) == nil)
  }

  @Test("lists the characteristics it decodes")
  func known() {
    let expected: [UInt16] = [
      0x2A00, 0x2A19, 0x2A24, 0x2A25, 0x2A26, 0x2A27, 0x2A28, 0x2A29, 0x2A37, 0x2A6D, 0x2A6E,
      0x2A6F,
    ]
    #expect(SIGValueDecoder.knownCharacteristics == Set(expected.map(BluetoothUUID.init(uuid16:))))
  }

  @Test("every value of up to two bytes, and longer patterns, decode or fall back without trapping")
  func neverTraps() {
    var decodedCount = 0
    for characteristic in SIGValueDecoder.knownCharacteristics {
      var values: [[UInt8]] = [[]]
      values += (0...255).map { [UInt8($0)] }
      values += (0...0xFFFF).map { [UInt8($0 & 0xFF), UInt8($0 >> 8)] }
      for length in 3...12 {
        values += [0x00, 0x1F, 0xFF].map { [UInt8](repeating: $0, count: length) }
        values.append((0..<length).map { UInt8($0 * 37 & 0xFF) })
      }
      for value in values where SIGValueDecoder.decode(value, characteristic: characteristic) != nil
      {
        decodedCount += 1
      }
    }
    // Many of them are well-formed (most two-byte temperatures, for example).
    #expect(decodedCount > 65536)
  }
}
