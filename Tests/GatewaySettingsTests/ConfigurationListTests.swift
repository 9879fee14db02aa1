import Testing

@testable import GatewaySettings

@Suite("Configuration lists (bluetooth.filter)")
struct ConfigurationListTests {
  private func load(
    file: String? = nil, environment: [String: String] = [:], arguments: [String] = []
  ) async throws -> GatewayConfiguration.Bluetooth {
    try await ConfigurationLoader.load(
      file: file, environment: environment, arguments: arguments
    ).bluetooth
  }

  @Test func yamlFlowSequenceIsAList() async throws {
    let file = try ConfigurationFixture.file(
      "bluetooth:\n  filter:\n    uuids: [180f, 0x180D]\n    deny: [aa:bb:cc:dd:ee:ff]\n")
    let bluetooth = try await load(file: file)
    #expect(bluetooth.filterUUIDs == ["180f", "0x180d"])
    #expect(bluetooth.filterDeny == ["AA:BB:CC:DD:EE:FF"])
    #expect(bluetooth.filterAllow.isEmpty)
  }

  @Test func yamlBlockSequenceIsAList() async throws {
    let file = try ConfigurationFixture.file(
      """
      bluetooth:
        filter:
          allow:
            - a4:c1:38:1e:29:df
            - "11-22-33-44-55-66"
            - 0123456789ab
      """)
    let bluetooth = try await load(file: file)
    #expect(
      bluetooth.filterAllow == ["A4:C1:38:1E:29:DF", "11:22:33:44:55:66", "01:23:45:67:89:AB"])
  }

  @Test func yamlCommaSeparatedStringIsAList() async throws {
    let file = try ConfigurationFixture.file(
      "bluetooth:\n  filter:\n    uuids: 180f , 0000180D-0000-1000-8000-00805F9B34FB\n"
        + "    allow: \"AA:BB:CC:DD:EE:FF,11:22:33:44:55:66\"\n")
    let bluetooth = try await load(file: file)
    #expect(bluetooth.filterUUIDs == ["180f", "0000180d-0000-1000-8000-00805f9b34fb"])
    #expect(bluetooth.filterAllow == ["AA:BB:CC:DD:EE:FF", "11:22:33:44:55:66"])
  }

  @Test func emptyYAMLSequenceIsTheEmptyList() async throws {
    let file = try ConfigurationFixture.file("bluetooth:\n  filter:\n    uuids: []\n")
    let bluetooth = try await load(file: file)
    #expect(bluetooth.filterUUIDs == [])
    let layer = try YAMLConfigurationParser.layer(
      yaml: "bluetooth:\n  filter:\n    uuids: []\n", source: "t")
    #expect(layer.settings["bluetooth.filter.uuids"]?.content == .stringArray([]))
  }

  @Test func environmentTakesACommaSeparatedString() async throws {
    let bluetooth = try await load(environment: [
      "GATT2MQTT_BLUETOOTH_FILTER_UUIDS": "180f, 180d",
      "GATT2MQTT_BLUETOOTH_FILTER_DENY": " 11:22:33:44:55:66 ",
      "GATT2MQTT_BLUETOOTH_FILTER_NAME": "Thermo*",
    ])
    #expect(bluetooth.filterUUIDs == ["180f", "180d"])
    #expect(bluetooth.filterDeny == ["11:22:33:44:55:66"])
    #expect(bluetooth.filterName == "Thermo*")
  }

  @Test func commandLineTakesACommaSeparatedString() async throws {
    let bluetooth = try await load(arguments: [
      "--bluetooth.filter.allow", "aa:bb:cc:dd:ee:ff,11-22-33-44-55-66",
      "--bluetooth-filter-uuids=FEAA", "--bluetooth.filter.name", "*beacon?",
    ])
    #expect(bluetooth.filterAllow == ["AA:BB:CC:DD:EE:FF", "11:22:33:44:55:66"])
    #expect(bluetooth.filterUUIDs == ["feaa"])
    #expect(bluetooth.filterName == "*beacon?")
  }

  @Test func badUUIDItemIsAnErrorNamingTheKeyAndTheItem() async throws {
    let file = try ConfigurationFixture.file(
      "bluetooth:\n  filter:\n    uuids:\n      - 180f\n      - 18g0\n")
    let error = try #require(await ConfigurationFixture.error(file: file))
    #expect(error.key == "bluetooth.filter.uuids")
    #expect(error.source == file)
    #expect(error.line == 5)
    #expect(
      error.description
        == "\(file):5: bluetooth.filter.uuids: \"18g0\" is not a Bluetooth service UUID")
  }

  @Test func badAddressItemIsAnErrorNamingTheKeyTheSourceAndTheItem() async throws {
    let error = try #require(
      await ConfigurationFixture.error(
        arguments: ["--bluetooth.filter.allow", "AA:BB:CC:DD:EE:FF, zz:11"]))
    #expect(error.key == "bluetooth.filter.allow")
    #expect(error.source == ConfigurationError.commandLineSource)
    #expect(
      error.description
        == "command line: bluetooth.filter.allow: \"zz:11\" is not a Bluetooth address "
        + "(from --bluetooth.filter.allow)")
    let fromEnvironment = try #require(
      await ConfigurationFixture.error(
        environment: ["GATT2MQTT_BLUETOOTH_FILTER_DENY": "AA:BB:CC:DD:EE"]))
    #expect(
      fromEnvironment.description
        == "environment: bluetooth.filter.deny: \"AA:BB:CC:DD:EE\" is not a Bluetooth address "
        + "(from GATT2MQTT_BLUETOOTH_FILTER_DENY)")
  }

  @Test func emptyItemIsAnError() async throws {
    for text in ["180f,,180d", "180f,", ",180f", " , "] {
      let error = try #require(
        await ConfigurationFixture.error(
          environment: ["GATT2MQTT_BLUETOOTH_FILTER_UUIDS": text]),
        "\(text)")
      #expect(error.key == "bluetooth.filter.uuids", "\(text)")
      #expect(
        error.message
          == "empty item in the list (items are separated by commas) "
          + "(from GATT2MQTT_BLUETOOTH_FILTER_UUIDS)", "\(text)")
    }
    let file = try ConfigurationFixture.file("bluetooth:\n  filter:\n    deny:\n      -\n")
    let error = try #require(await ConfigurationFixture.error(file: file))
    #expect(error.key == "bluetooth.filter.deny")
    #expect(error.message == "empty item in the list (items are separated by commas)")
  }

  @Test func sequenceHoldingAMappingIsATypeError() async throws {
    let file = try ConfigurationFixture.file(
      "bluetooth:\n  filter:\n    allow:\n      - AA:BB:CC:DD:EE:FF\n      - address: x\n")
    let error = try #require(await ConfigurationFixture.error(file: file))
    #expect(error.key == "bluetooth.filter.allow")
    #expect(error.line == 5)
    #expect(
      error.message
        == "expected a list of Bluetooth addresses (AA:BB:CC:DD:EE:FF), as a sequence or "
        + "separated by commas, got a list holding a mapping")
    let nested = try ConfigurationFixture.file("bluetooth:\n  filter:\n    uuids: [[180f]]\n")
    let nestedError = try #require(await ConfigurationFixture.error(file: nested))
    #expect(nestedError.message.hasSuffix("got a list holding a list"))
  }

  @Test func mappingOrNullForAListKeyIsAnError() async throws {
    let mapping = try ConfigurationFixture.file("bluetooth:\n  filter:\n    uuids: {a: 1}\n")
    let mappingError = try #require(await ConfigurationFixture.error(file: mapping))
    #expect(mappingError.key == "bluetooth.filter.uuids")
    #expect(mappingError.message.hasSuffix("got a mapping"))
    let null = try ConfigurationFixture.file("bluetooth:\n  filter:\n    deny: ~\n")
    let nullError = try #require(await ConfigurationFixture.error(file: null))
    #expect(nullError.key == "bluetooth.filter.deny")
    #expect(nullError.message.hasSuffix("got null"))
  }

  @Test func higherSourceListReplacesTheLowerOneWhole() async throws {
    let file = try ConfigurationFixture.file(
      "bluetooth:\n  filter:\n    uuids: [180f, 180d]\n    allow: [AA:BB:CC:DD:EE:FF]\n")
    let flagged = try await load(
      file: file, environment: ["GATT2MQTT_BLUETOOTH_FILTER_UUIDS": "fe95,feaa"],
      arguments: ["--bluetooth.filter.uuids", "181a"])
    #expect(flagged.filterUUIDs == ["181a"])
    #expect(flagged.filterAllow == ["AA:BB:CC:DD:EE:FF"])
    let environment = try await load(
      file: file, environment: ["GATT2MQTT_BLUETOOTH_FILTER_UUIDS": "fe95"])
    #expect(environment.filterUUIDs == ["fe95"])
  }

  @Test func emptyOptionValueClearsALowerSourcesList() async throws {
    let file = try ConfigurationFixture.file("bluetooth:\n  filter:\n    deny: [112233445566]\n")
    let bluetooth = try await load(file: file, arguments: ["--bluetooth.filter.deny="])
    #expect(bluetooth.filterDeny == [])
    let unchanged = try await load(
      file: file, environment: ["GATT2MQTT_BLUETOOTH_FILTER_DENY": ""])
    #expect(unchanged.filterDeny == ["11:22:33:44:55:66"])
  }

  @Test(arguments: [
    ("180f", "180f"), ("0x180F", "0x180f"), ("0X2a37", "0x2a37"), ("0000FEAA", "0000feaa"),
    ("0x0000feaa", "0x0000feaa"),
    ("0000180F00001000800000805F9B34FB", "0000180f00001000800000805f9b34fb"),
    ("0000180D-0000-1000-8000-00805F9B34FB", "0000180d-0000-1000-8000-00805f9b34fb"),
  ])
  func serviceUUIDFormsAreAcceptedInLowerCase(written: String, kept: String) {
    #expect(ConfigurationLoader.KeyType.ListItem.serviceUUID.normalize(written) == kept)
  }

  @Test(arguments: [
    "", "18f", "180fa", "0x18", "0x180f0", "18g0", "0y180f", "0x0000180d00001000800000805f9b34fb",
    "0000180d-0000-1000-8000-00805f9b34f", "0000180d_0000_1000_8000_00805f9b34fb",
    "0000180d-00001-000-8000-00805f9b34fb", "１８０f",
  ])
  func malformedServiceUUIDsAreRejected(text: String) {
    #expect(ConfigurationLoader.KeyType.ListItem.serviceUUID.normalize(text) == nil)
  }

  @Test(arguments: [
    ("aa:bb:cc:dd:ee:ff", "AA:BB:CC:DD:EE:FF"), ("A4-C1-38-1E-29-DF", "A4:C1:38:1E:29:DF"),
    ("0123456789aB", "01:23:45:67:89:AB"),
  ])
  func addressFormsAreKeptWithColonsInUpperCase(written: String, kept: String) {
    #expect(ConfigurationLoader.KeyType.ListItem.bluetoothAddress.normalize(written) == kept)
  }

  @Test(arguments: [
    "", "zz:11", "AA:BB:CC:DD:EE", "AA:BB:CC:DD:EE:FF:00", "AA:BB-CC:DD:EE:FF",
    "AA.BB.CC.DD.EE.FF", "AAB:BCC:DDE:EFF:00", "GG:BB:CC:DD:EE:FF", "0123456789abc",
  ])
  func malformedAddressesAreRejected(text: String) {
    #expect(ConfigurationLoader.KeyType.ListItem.bluetoothAddress.normalize(text) == nil)
  }

  @Test func namePatternMustBeOneTo248Characters() async throws {
    let longest = String(repeating: "a", count: 248)
    let bluetooth = try await load(arguments: ["--bluetooth.filter.name", longest])
    #expect(bluetooth.filterName == longest)
    let tooLong = try #require(
      await ConfigurationFixture.error(arguments: ["--bluetooth.filter.name", longest + "a"]))
    #expect(tooLong.key == "bluetooth.filter.name")
    #expect(
      tooLong.message.hasPrefix(
        "expected a name pattern of 1 to 248 characters ('*' any characters, '?' one), got"))
    let empty = try ConfigurationFixture.file("bluetooth:\n  filter:\n    name: \"\"\n")
    let emptyError = try #require(await ConfigurationFixture.error(file: empty))
    #expect(emptyError.key == "bluetooth.filter.name")
    let list = try ConfigurationFixture.file("bluetooth:\n  filter:\n    name: [a, b]\n")
    let listError = try #require(await ConfigurationFixture.error(file: list))
    #expect(listError.message.hasSuffix("got a list"))
  }

  @Test func nullLeavesTheNamePatternUnset() async throws {
    let file = try ConfigurationFixture.file("bluetooth:\n  filter:\n    name: ~\n")
    let bluetooth = try await load(file: file)
    #expect(bluetooth.filterName == nil)
  }

  @Test func summaryShowsListsCommaSeparated() {
    var configuration = GatewayConfiguration()
    let empty = Dictionary(
      uniqueKeysWithValues: configuration.redactedSummary().map { ($0.key, $0.value) })
    #expect(empty["bluetooth.filter.uuids"] == .some(""))
    #expect(empty["bluetooth.filter.name"] == .some(nil))
    configuration.bluetooth.filterUUIDs = ["180f", "180d"]
    configuration.bluetooth.filterAllow = ["AA:BB:CC:DD:EE:FF", "11:22:33:44:55:66"]
    let values = Dictionary(
      uniqueKeysWithValues: configuration.redactedSummary().map { ($0.key, $0.value) })
    #expect(values["bluetooth.filter.uuids"] == .some("180f,180d"))
    #expect(values["bluetooth.filter.allow"] == .some("AA:BB:CC:DD:EE:FF,11:22:33:44:55:66"))
    #expect("\(configuration)".contains("bluetooth.filter.uuids: 180f,180d"))
  }
}
