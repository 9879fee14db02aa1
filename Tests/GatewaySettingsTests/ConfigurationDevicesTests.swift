import BridgeCore
import Foundation
import SimulatedRadio
import Testing
import YAMLSupport

@testable import GatewaySettings

@Suite("Configuration file: the devices section")
struct ConfigurationDevicesTests {
  func load(_ yaml: String) async throws -> GatewayConfiguration {
    try await ConfigurationLoader.load(
      file: try ConfigurationFixture.file(yaml), environment: [:], arguments: [])
  }

  func error(_ yaml: String) async throws -> ConfigurationError {
    try #require(await ConfigurationFixture.error(file: try ConfigurationFixture.file(yaml)))
  }

  @Test func eachSettingAddsToTheListKeyItStandsForAfterTheFilesOwnItems() async throws {
    let configuration = try await load(
      """
      bluetooth:
        names: ["11:22:33:44:55:66=hall"]
        connect:
          addresses: ["AA:BB:CC:DD:EE:FF"]
        gatt:
          notify: ["*/180d/2a37"]
      devices:
        "A4:C1:38:1E:29:DF":
          name: porch/thermometer
          connect: true
          notify: [180f/2a19, 181a/2a6e]
          notify_method: start
        "c0:ff:ee:00:00:01": kitchen
        "C0:FF:EE:00:00:02":
          notify: true
          connect: false
      """)
    let b = configuration.bluetooth
    #expect(
      b.names == [
        "11:22:33:44:55:66=hall", "A4:C1:38:1E:29:DF=porch/thermometer",
        "c0:ff:ee:00:00:01=kitchen",
      ])
    #expect(b.connect.addresses == ["AA:BB:CC:DD:EE:FF", "A4:C1:38:1E:29:DF"])
    #expect(b.connect.exclude == ["C0:FF:EE:00:00:02"])
    #expect(
      configuration.gattBridgeConfiguration.policy.excluded == [
        try BluetoothAddress("C0:FF:EE:00:00:02")
      ])
    #expect(
      b.gatt.notify == [
        "*/180d/2a37", "A4:C1:38:1E:29:DF/180f/2a19", "A4:C1:38:1E:29:DF/181a/2a6e",
        "C0:FF:EE:00:00:02",
      ])
    #expect(b.gatt.notifyMethods == ["A4:C1:38:1E:29:DF=start"])
    // The names apply: each device's id in topics is its name.
    let names = configuration.deviceNames
    #expect(names.count == 3)
    #expect(names[try BluetoothAddress("A4:C1:38:1E:29:DF")]?.rawValue == "porch/thermometer")
    #expect(names[try BluetoothAddress("C0:FF:EE:00:00:01")]?.rawValue == "kitchen")
  }

  @Test func anEmptySectionSetsNothing() async throws {
    for yaml in ["devices:\n", "devices: ~\n", "devices: {}\n"] {
      let configuration = try await load(yaml)
      #expect(configuration.bluetooth.names.isEmpty, "\(yaml)")
    }
  }

  @Test(arguments: [
    (
      "devices:\n  kitchen: hall\n",
      "devices:2: \"kitchen\" is not a Bluetooth address (quote addresses: \"A4:C1:38:1E:29:DF\")"
    ),
    (
      "devices:\n  \"A4:C1:38:1E:29:DF\":\n    nmae: porch\n",
      "devices.A4:C1:38:1E:29:DF.nmae:3: unknown key (did you mean 'name'?)"
    ),
    (
      "devices:\n  \"A4:C1:38:1E:29:DF\":\n    connect: sometimes\n",
      "devices.A4:C1:38:1E:29:DF.connect:3: expected true or false, got \"sometimes\""
    ),
    ("devices: [a, b]\n", "devices:1: expected a mapping of device addresses to their settings"),
    (
      "devices:\n  \"A4:C1:38:1E:29:DF\": hall\n  \"a4:c1:38:1e:29:df\": porch\n",
      "devices.a4:c1:38:1e:29:df:3: the device is given twice (also as \"A4:C1:38:1E:29:DF\"): "
        + "give its settings once"
    ),
    (
      "devices:\n  \"A4:C1:38:1E:29:DF\":\n    name: ~\n",
      "devices.A4:C1:38:1E:29:DF.name:3: expected a value, got null"
    ),
    (
      "devices:\n  \"A4:C1:38:1E:29:DF\": [porch]\n",
      "devices.A4:C1:38:1E:29:DF:2: expected a name or a mapping with the keys name, connect, "
        + "notify, notify_method"
    ),
  ])
  func aBadEntrySaysWhereAndWhy(_ yaml: String, _ expected: String) async throws {
    let failure = try await error(yaml)
    #expect("\(failure.key ?? "-"):\(failure.line ?? 0): \(failure.message)" == expected)
  }

  @Test func itemsAreCheckedAsTheirKeysItemsAre() async throws {
    let taken = try await error(
      """
      bluetooth:
        names: ["11:22:33:44:55:66=hall"]
      devices:
        "A4:C1:38:1E:29:DF": hall
      """)
    #expect(taken.key == "bluetooth.names")
    #expect(taken.description.contains("give each device its own name"))
    let uuid = try await error(
      """
      devices:
        "A4:C1:38:1E:29:DF":
          notify: [180f/battery]
      """)
    #expect(uuid.key == "bluetooth.gatt.notify")
    #expect(uuid.line == 3)
    #expect(uuid.description.contains("(from devices)"))
    let method = try await error(
      """
      devices:
        "A4:C1:38:1E:29:DF":
          notify_method: sometimes
      """)
    #expect(method.key == "bluetooth.gatt.notify_methods")
  }

  @Test func aliasesOfADevicesSettingsApplyToEachDevice() async throws {
    let b = try await load(
      """
      devices:
        "A4:C1:38:1E:29:DF": &sensor
          connect: true
          notify: [180f/2a19]
        "C0:FF:EE:00:00:01": *sensor
      """
    ).bluetooth
    #expect(b.connect.addresses == ["A4:C1:38:1E:29:DF", "C0:FF:EE:00:00:01"])
    #expect(b.gatt.notify == ["A4:C1:38:1E:29:DF/180f/2a19", "C0:FF:EE:00:00:01/180f/2a19"])
  }

  @Test(.timeLimit(.minutes(1)))
  func aFileThatAliasesExpandPastTheBoundIsRefusedBeforeItIsRead() async throws {
    // 200 devices, each an alias of one whose list holds 1,000 aliases: 200,000 values from
    // 6 KB. Read item by item, 1,100 such devices (1.1 million values) took 20 s to accept.
    let items = Array(repeating: "*n", count: 999).joined(separator: ", ")
    var yaml = "devices:\n  \"00:00:00:00:00:00\": &d\n    notify: [&n 180f/2a19, \(items)]\n"
    for index in 1...200 {
      yaml += "  \"00:00:00:00:\(String(format: "%02X:%02X", index / 256, index % 256))\": *d\n"
    }
    let error = try await error(yaml)
    #expect(error.key == nil)
    #expect(error.message == BoundedYAML.Refusal.values(BoundedYAML.defaultMaxNodes).description)
  }

  @Test(.timeLimit(.minutes(1)))
  func aFileThatAliasesNestPastTheBoundIsRefusedWithoutOverflowingTheStack() async throws {
    // Ten lists, each 900 levels deep (the parser allows 1,000) around an alias of the one
    // before: 9,000 levels once expanded, within the count of values. (The first version of the
    // walk, without the depth bound, overflowed the stack here: signal 11.)
    var yaml = "chain:\n  - &a0 x\n"
    for level in 1...10 {
      yaml +=
        "  - &a\(level) " + String(repeating: "[", count: 900) + "*a\(level - 1)"
        + String(repeating: "]", count: 900) + "\n"
    }
    yaml += "bluetooth:\n  names: *a10\n"
    let error = try await error(yaml)
    #expect(error.key == nil)
    #expect(error.message == BoundedYAML.Refusal.depth(BoundedYAML.defaultMaxDepth).description)
  }
}
