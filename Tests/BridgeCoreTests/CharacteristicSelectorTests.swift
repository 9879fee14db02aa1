import BridgeCore
import Testing

@Suite("CharacteristicSelector")
struct CharacteristicSelectorTests {
  static let address = try! BluetoothAddress("A4:C1:38:1E:29:DF")
  static let sensor = DeviceID(address: address)
  static let other = DeviceID(address: try! BluetoothAddress("00:11:22:33:44:55"))
  static let battery = BluetoothUUID(uuid16: 0x180F)
  static let level = BluetoothUUID(uuid16: 0x2A19)
  static let heartRate = BluetoothUUID(uuid16: 0x180D)
  static let measurement = BluetoothUUID(uuid16: 0x2A37)

  private func matches(
    _ selector: CharacteristicSelector, _ device: DeviceID, _ service: BluetoothUUID,
    _ characteristic: BluetoothUUID
  ) -> Bool {
    selector.matches(device: device, service: service, characteristic: characteristic)
  }

  @Test(
    "every written form of a device, service and characteristic is the same selector",
    arguments: [
      "A4C1381E29DF/180f/2a19", "a4c1381e29df/180F/2A19", "A4:C1:38:1E:29:DF/0x180f/0x2a19",
      "a4:c1:38:1e:29:df/0000180f/00002a19", "A4-C1-38-1E-29-DF/180f/2a19",
      "A4C1381E29DF/0000180f-0000-1000-8000-00805f9b34fb/00002a1900001000800000805f9b34fb",
      "  A4C1381E29DF/180f/2a19\n",
    ])
  func forms(_ text: String) throws {
    let selector = try CharacteristicSelector(parsing: text)
    #expect(
      selector
        == CharacteristicSelector(
          device: Self.sensor, service: Self.battery, characteristic: Self.level))
    #expect(selector.description == "A4C1381E29DF/180f/2a19")
  }

  @Test("a device alone is every characteristic of that device")
  func deviceAlone() throws {
    for text in ["A4C1381E29DF", "A4:C1:38:1E:29:DF", "a4c1381e29df"] {
      let selector = try CharacteristicSelector(parsing: text)
      #expect(selector == (try CharacteristicSelector(parsing: "A4C1381E29DF/*/*")))
      #expect(selector.description == "A4C1381E29DF/*/*")
      #expect(matches(selector, Self.sensor, Self.battery, Self.level))
      #expect(matches(selector, Self.sensor, Self.heartRate, Self.measurement))
      #expect(!matches(selector, Self.other, Self.battery, Self.level))
    }
  }

  @Test("'*' matches anything in its part and only there")
  func wildcards() throws {
    let any = try CharacteristicSelector(parsing: "*")
    #expect(any == (try CharacteristicSelector(parsing: "*/*/*")))
    #expect(any.description == "*/*/*")
    #expect(matches(any, Self.other, Self.heartRate, Self.measurement))

    let anyDevice = try CharacteristicSelector(parsing: "*/180f/2a19")
    #expect(matches(anyDevice, Self.sensor, Self.battery, Self.level))
    #expect(matches(anyDevice, Self.other, Self.battery, Self.level))
    #expect(!matches(anyDevice, Self.sensor, Self.battery, Self.measurement))
    #expect(!matches(anyDevice, Self.sensor, Self.heartRate, Self.level))

    let anyService = try CharacteristicSelector(parsing: "A4C1381E29DF/*/2a37")
    #expect(matches(anyService, Self.sensor, Self.heartRate, Self.measurement))
    #expect(matches(anyService, Self.sensor, Self.battery, Self.measurement))
    #expect(!matches(anyService, Self.other, Self.heartRate, Self.measurement))
    #expect(!matches(anyService, Self.sensor, Self.heartRate, Self.level))

    let anyCharacteristic = try CharacteristicSelector(parsing: "*/180d/*")
    #expect(matches(anyCharacteristic, Self.other, Self.heartRate, Self.measurement))
    #expect(matches(anyCharacteristic, Self.other, Self.heartRate, Self.level))
    #expect(!matches(anyCharacteristic, Self.other, Self.battery, Self.level))
  }

  @Test("a vendor UUID matches in any written form")
  func vendorUUID() throws {
    let service = try BluetoothUUID("e20a39f4-73f5-4bc4-a12f-17d1ad07a961")
    let selector = try CharacteristicSelector(parsing: "*/E20A39F4-73F5-4BC4-A12F-17D1AD07A961/*")
    #expect(matches(selector, Self.sensor, service, Self.level))
    #expect(!matches(selector, Self.sensor, Self.battery, Self.level))
    #expect(selector.description == "*/e20a39f4-73f5-4bc4-a12f-17d1ad07a961/*")
  }

  @Test("a friendly name selects its device; with levels, only in the three-part form")
  func friendlyNames() throws {
    let thermometer = try DeviceID(friendlyName: "kitchen/thermometer")
    let selector = try CharacteristicSelector(parsing: "kitchen/thermometer/180f/*")
    #expect(selector.device == thermometer)
    #expect(matches(selector, thermometer, Self.battery, Self.level))
    #expect(!matches(selector, Self.sensor, Self.battery, Self.level))
    #expect(selector.description == "kitchen/thermometer/180f/*")

    let plant = try CharacteristicSelector(parsing: "plant")
    #expect(plant.device == (try DeviceID(friendlyName: "plant")))
  }

  @Test("a selector by address also matches the device under its friendly name")
  func addressMatchesFriendlyName() throws {
    let thermometer = try DeviceID(friendlyName: "kitchen/thermometer")
    let selector = try CharacteristicSelector(parsing: "A4:C1:38:1E:29:DF/180f/2a19")
    #expect(!matches(selector, thermometer, Self.battery, Self.level))
    #expect(
      selector.matches(
        device: thermometer, address: Self.address, service: Self.battery,
        characteristic: Self.level))
    #expect(selector.matches(device: thermometer, address: Self.address))
    #expect(
      !selector.matches(
        device: thermometer, address: try BluetoothAddress("00:11:22:33:44:55"),
        service: Self.battery, characteristic: Self.level))
  }

  @Test(
    "the description parses back to the same selector",
    arguments: [
      "*", "*/*/*", "A4C1381E29DF", "*/180f/2a19", "A4C1381E29DF/*/2a19",
      "kitchen/thermometer/*/*", "*/6e400001-b5a3-f393-e0a9-e50e24dcca9e/0x12345678",
    ])
  func descriptionRoundTrips(_ text: String) throws {
    let selector = try CharacteristicSelector(parsing: text)
    #expect(try CharacteristicSelector(parsing: selector.description) == selector)
  }

  @Test(
    "refuses malformed selectors, naming the part",
    arguments: [
      ("", CharacteristicSelector.Error.empty),
      ("  ", .empty),
      ("A4C1381E29DF/180f", .wrongPartCount("A4C1381E29DF/180f")),
      ("*/x/2a19", .invalidService("x", .invalidLength(byteCount: 1))),
      ("*//2a19", .invalidService("", .invalidLength(byteCount: 0))),
      ("*/180g/2a19", .invalidService("180g", .invalidCharacter(offset: 3))),
      ("*/180f/2a1", .invalidCharacteristic("2a1", .invalidLength(byteCount: 3))),
      ("*/180f/", .invalidCharacteristic("", .invalidLength(byteCount: 0))),
      (
        "A4:C1:38:1E:29/180f/2a19", .invalidAddress("A4:C1:38:1E:29", .invalidLength(byteCount: 14))
      ),
      ("A4:C1:38:1E:29:DG", .invalidAddress("A4:C1:38:1E:29:DG", .invalidCharacter(offset: 16))),
      ("/180f/2a19", .invalidDevice("", .empty)),
      ("a+b", .invalidDevice("a+b", .wildcard(offset: 1))),
      ("bridge/*/*", .invalidDevice("bridge", .reservedName("bridge"))),
      ("A4C1*/*/*", .partialWildcard("A4C1*")),
      ("*/18*/*", .partialWildcard("18*")),
      ("*/*/**", .partialWildcard("**")),
    ])
  func refusesMalformed(_ text: String, _ error: CharacteristicSelector.Error) {
    #expect(throws: error) { try CharacteristicSelector(parsing: text) }
    #expect(error.code == "invalid_payload")
  }

  @Test("selector errors describe the problem for people")
  func descriptions() {
    #expect(
      CharacteristicSelector.Error.invalidService("x", .invalidLength(byteCount: 1)).description
        .hasPrefix("'x' is not a service UUID: "))
    #expect(
      CharacteristicSelector.Error.invalidCharacteristic("2a1", .invalidLength(byteCount: 3))
        .description.hasPrefix("'2a1' is not a characteristic UUID: "))
    #expect(
      CharacteristicSelector.Error.wrongPartCount("a/b").description
        == "'a/b' is not '<dev>' or '<dev>/<svc>/<chr>' (any part may be '*')")
    #expect(
      CharacteristicSelector.Error.invalidAddress("A4:C1", .invalidLength(byteCount: 5))
        .description.hasPrefix("'A4:C1' is not a Bluetooth address: "))
  }
}

@Suite("FormatRule")
struct FormatRuleTests {
  @Test("parses a selector and a format", arguments: ValueFormat.allCases)
  func parses(_ format: ValueFormat) throws {
    let rule = try FormatRule(parsing: "*/180f/2a19=\(format.rawValue)")
    #expect(rule.value == format)
    #expect(rule.selector == (try CharacteristicSelector(parsing: "*/180f/2a19")))
    #expect(rule.description == "*/180f/2a19=\(format.rawValue)")
    #expect(try FormatRule(parsing: rule.description) == rule)
  }

  @Test("tolerates whitespace around the parts and takes a device alone")
  func whitespaceAndDevice() throws {
    let rule = try FormatRule(parsing: " A4:C1:38:1E:29:DF = decoded ")
    #expect(rule.value == .decoded)
    #expect(rule.selector == (try CharacteristicSelector(parsing: "A4C1381E29DF/*/*")))
  }

  @Test(
    "refuses malformed rules, naming what is wrong",
    arguments: [
      ("*/180f/2a19", FormatRule.Error.missingValue("*/180f/2a19")),
      ("*/180f/2a19=", .missingValue("*/180f/2a19=")),
      ("*/180f/2a19= ", .missingValue("*/180f/2a19= ")),
      ("*/180f/2a19=foo", .unknownValue("foo")),
      ("*/180f/2a19=HEX", .unknownValue("HEX")),
      (
        "*/180f/2a19=hex=json",
        .invalidSelector(.invalidCharacteristic("2a19=hex", .invalidCharacter(offset: 4)))
      ),
      ("=hex", .invalidSelector(.empty)),
      ("*/x/2a19=hex", .invalidSelector(.invalidService("x", .invalidLength(byteCount: 1)))),
    ])
  func refusesMalformed(_ text: String, _ error: FormatRule.Error) {
    #expect(throws: error) { try FormatRule(parsing: text) }
  }

  @Test("rule errors describe the problem for people")
  func descriptions() {
    #expect(
      FormatRule.Error.unknownValue("foo").description
        == "unknown format 'foo' (hex, base64, utf8, raw, json, decoded)")
    #expect(
      FormatRule.Error.invalidSelector(.invalidService("x", .invalidLength(byteCount: 1)))
        .description.hasPrefix("'x' is not a service UUID: "))
    #expect(
      FormatRule.Error.missingValue("*/180f/2a19").description
        == "'*/180f/2a19' has no '=<format>' (for example */180f/2a19=decoded)")
  }
}

@Suite("NotifyMethodRule")
struct NotifyMethodRuleTests {
  @Test("parses every method and names the choices when the method is unknown")
  func parses() throws {
    for method in NotifyMethod.allCases {
      #expect(try NotifyMethodRule(parsing: "*/180d/2a37=\(method.rawValue)").value == method)
    }
    #expect(throws: NotifyMethodRule.Error.unknownValue("fd")) {
      try NotifyMethodRule(parsing: "*/180d/2a37=fd")
    }
    #expect(
      NotifyMethodRule.Error.unknownValue("fd").description
        == "unknown notify method 'fd' (auto, acquire, start)")
    #expect(
      NotifyMethodRule.Error.missingValue("*").description
        == "'*' has no '=<notify method>' (for example */180d/2a37=start)")
  }

  @Test("the first matching rule wins; by id or by address; the default when none matches")
  func firstMatchWins() throws {
    let rules = try ["A4C1381E29DF/180d/2a37=start", "*/180d/*=acquire"].map {
      try NotifyMethodRule(parsing: $0)
    }
    let address = try BluetoothAddress("A4:C1:38:1E:29:DF")
    let heartRate = CharacteristicPath(
      device: try DeviceID(friendlyName: "kitchen"), service: BluetoothUUID(uuid16: 0x180D),
      characteristic: BluetoothUUID(uuid16: 0x2A37))
    #expect(rules.value(for: heartRate, address: address, default: .auto) == .start)
    #expect(rules.value(for: heartRate, default: .auto) == .acquire)
    var battery = heartRate
    battery.service = BluetoothUUID(uuid16: 0x180F)
    #expect(rules.value(for: battery, address: address, default: .auto) == .auto)
  }
}
