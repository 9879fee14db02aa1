import Foundation
import Testing

@testable import GatewaySettings

@Suite("Configuration defaults and example file")
struct ConfigurationDefaultsTests {
  /// `config/gatt2mqtt.example.yaml`, found from this file's place in the repository.
  static let examplePath = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("config/gatt2mqtt.example.yaml").path

  /// The keys the example shows commented out: those without a fixed default.
  static let commentedKeys: Set<String> = [
    "mqtt.client_id", "mqtt.username", "mqtt.password", "mqtt.tls.enabled", "mqtt.tls.ca_file",
    "mqtt.tls.cert_file", "mqtt.tls.key_file", "gateway.id", "bluetooth.adapter",
    "bluetooth.simulation",
    "bluetooth.min_rssi", "bluetooth.filter.name", "peripheral.write_characteristic",
    "peripheral.adapter", "mqtt.response_topic_prefix", "web.token",
  ]

  @Test func noSourcesGiveTheDocumentedDefaults() async throws {
    let configuration = try await ConfigurationLoader.load(
      file: nil, environment: [:], arguments: [])
    #expect(configuration == GatewayConfiguration())
    let mqtt = configuration.mqtt
    #expect(mqtt.host == "localhost")
    #expect(mqtt.port == 1883)
    #expect(mqtt.clientID == nil)
    #expect(mqtt.keepalive == 60)
    #expect(mqtt.cleanSession == true)
    #expect(mqtt.protocolVersion == .v311)
    #expect(mqtt.username == nil)
    #expect(mqtt.password == nil)
    #expect(mqtt.baseTopic == "gatt2mqtt")
    #expect(mqtt.qos == 1)
    #expect(mqtt.retainValues == false)
    #expect(mqtt.tls == .init(enabled: false, caFile: nil, certFile: nil, keyFile: nil))
    #expect(mqtt.tls.insecure == false)
    #expect(mqtt.reconnect.minDelay == 1)
    #expect(mqtt.reconnect.maxDelay == 60)
    #expect(mqtt.offlineQueue.maxMessages == 10_000)
    #expect(mqtt.offlineQueue.policy == .dropOldest)
    #expect(configuration.gateway.id == nil)
    #expect(configuration.gateway.healthInterval == 60)
    #expect(configuration.log.level == .info)
    let bluetooth = configuration.bluetooth
    #expect(bluetooth.filterUUIDs.isEmpty)
    #expect(bluetooth.filterName == nil)
    #expect(bluetooth.filterAllow.isEmpty)
    #expect(bluetooth.filterDeny.isEmpty)
  }

  @Test func exampleFileLoadsToExactlyTheDefaults() async throws {
    let configuration = try await ConfigurationLoader.load(
      file: Self.examplePath, environment: [:], arguments: [])
    #expect(configuration == GatewayConfiguration())
  }

  @Test func exampleFileSetsEveryKeyWithAFixedDefault() throws {
    let text = try String(contentsOfFile: Self.examplePath, encoding: .utf8)
    let layer = try YAMLConfigurationParser.layer(yaml: text, source: Self.examplePath)
    let expected = Set(ConfigurationLoader.knownKeys.keys).subtracting(Self.commentedKeys)
    #expect(Set(layer.settings.keys) == expected)
  }

  @Test func exampleFileShowsTheOtherKeysCommentedOutWithValidValues() throws {
    let text = try String(contentsOfFile: Self.examplePath, encoding: .utf8)
    let uncommented = text.split(separator: "\n", omittingEmptySubsequences: false).map {
      line -> String in
      let indentation = line.prefix { $0 == " " }
      let rest = line.dropFirst(indentation.count)
      guard rest.hasPrefix("# ") else { return String(line) }
      let body = rest.dropFirst(2)
      let name = body.prefix { $0.isLowercase || $0 == "_" }
      guard !name.isEmpty, body.dropFirst(name.count).hasPrefix(":") else { return String(line) }
      return String(indentation + body)
    }.joined(separator: "\n")
    let active = try YAMLConfigurationParser.layer(yaml: text, source: "example")
    let all = try YAMLConfigurationParser.layer(yaml: uncommented, source: "uncommented example")
    #expect(Set(all.settings.keys).subtracting(active.settings.keys) == Self.commentedKeys)
    #expect(Set(all.settings.keys) == Set(ConfigurationLoader.knownKeys.keys))
  }

  @Test func everyKeyHasItsOwnEnvironmentVariableAndOption() {
    let keys = ConfigurationKey.all
    #expect(Set(keys.map(\.environmentName)).count == keys.count)
    #expect(Set(keys.map { ConfigurationKey.normalizedOptionName($0.path) }).count == keys.count)
    #expect(
      ConfigurationKey.byPath["mqtt.tls.ca_file"]?.environmentName
        == "GATT2MQTT_MQTT_TLS_CA_FILE")
    #expect(ConfigurationKey.byPath["mqtt.tls.ca_file"]?.optionName == "--mqtt.tls.ca-file")
  }

  @Test func knownKeysListEveryKeyWithItsType() {
    let keys = ConfigurationLoader.knownKeys
    #expect(keys.count == 94)
    #expect(keys["bluetooth.scan_method"] == .choice(["dbus", "management"]))
    #expect(keys["bluetooth.batch_window"] == .number(greaterThan: 0, orEqual: true, atMost: 0.25))
    #expect(
      keys["bluetooth.advertisement_min_interval"]
        == .number(greaterThan: 0, orEqual: true, atMost: 86_400))
    #expect(keys["bluetooth.connect.exclude"] == .list(.bluetoothAddress))
    #expect(keys["bluetooth.names"] == .list(.nameRule))
    #expect(keys["fleet.ownership.enabled"] == .boolean)
    #expect(keys["web.listen"] == .listenAddress)
    #expect(keys["homeassistant.controls"] == .list(.controlRule))
    #expect(keys["bluetooth.decode"] == .boolean)
    #expect(keys["peripheral.notify_socket"] == .boolean)
    #expect(keys["peripheral.several_centrals"] == .choice(["signals", "socket"]))
    #expect(keys["bluetooth.gatt.notify_method"] == .choice(["auto", "acquire", "start"]))
    #expect(keys["bluetooth.gatt.notify_methods"] == .list(.notifyMethodRule))
    #expect(keys["bluetooth.filter.uuids"] == .list(.serviceUUID))
    #expect(keys["bluetooth.filter.name"] == .namePattern)
    #expect(keys["bluetooth.filter.allow"] == .list(.bluetoothAddress))
    #expect(keys["bluetooth.filter.deny"] == .list(.bluetoothAddress))
    #expect(keys["bluetooth.min_rssi"] == .integer(-127...20))
    #expect(keys["mqtt.port"] == .integer(1...65535))
    #expect(keys["mqtt.keepalive"] == .integer(5...65535))
    #expect(keys["mqtt.qos"] == .integer(0...2))
    #expect(keys["mqtt.protocol"] == .choice(["3.1.1", "5"]))
    #expect(keys["mqtt.offline_queue.policy"] == .choice(["drop_oldest", "drop_newest"]))
    #expect(keys["mqtt.tls.insecure"] == .boolean)
    #expect(keys["gateway.id"] == .topicLevel)
    #expect(ConfigurationLoader.keyPaths.count == keys.count)
    #expect(Set(ConfigurationLoader.keyPaths) == Set(keys.keys))
  }

  @Test func systemHostnameIsTheKernelsHostName() throws {
    let kernel = try String(contentsOfFile: "/proc/sys/kernel/hostname", encoding: .utf8)
    #expect(
      GatewayConfiguration.Gateway.systemHostname() == kernel.trimmingCharacters(in: .newlines))
    #expect(!GatewayConfiguration.Gateway.systemHostname().isEmpty)
  }

  @Test func clientIDDefaultsToThePrefixedGatewayID() {
    #expect(
      GatewayConfiguration.MQTT().resolvedClientID(gatewayID: "pi", instance: "01")
        == "gatt2mqtt-pi-01")
    #expect(
      GatewayConfiguration.MQTT(clientID: "x").resolvedClientID(gatewayID: "pi", instance: "01")
        == "x")
  }
}
