import Testing

@testable import GatewaySettings

@Suite("Configuration redaction")
struct ConfigurationRedactionTests {
  static let secret = "pa55-w0rd-xyz"
  static let configuration = GatewayConfiguration(
    mqtt: .init(username: "gw", password: secret, tls: .init(caFile: "/ca.pem")))

  @Test func descriptionsHideThePassword() {
    let texts = [
      "\(Self.configuration)", String(reflecting: Self.configuration),
      "\(Self.configuration.mqtt)", String(reflecting: Self.configuration.mqtt),
    ]
    for text in texts {
      #expect(!text.contains(Self.secret), "\(text)")
      #expect(text.contains("password: ***"), "\(text)")
      #expect(text.contains("gw"), "\(text)")
    }
  }

  @Test func dumpHidesThePassword() {
    var text = ""
    dump(Self.configuration, to: &text)
    #expect(!text.contains(Self.secret))
    #expect(text.contains("***"))
    #expect(text.contains("/ca.pem"))
  }

  @Test func summaryListsEveryKeyInOrderAndHidesThePassword() {
    let summary = Self.configuration.redactedSummary()
    #expect(summary.map(\.key) == ConfigurationLoader.keyPaths)
    let values = Dictionary(uniqueKeysWithValues: summary.map { ($0.key, $0.value) })
    #expect(values["mqtt.password"] == .some("***"))
    #expect(values["mqtt.username"] == .some("gw"))
    #expect(values["mqtt.port"] == .some("1883"))
    #expect(values["mqtt.reconnect.min_delay"] == .some("1"))
    #expect(values["mqtt.protocol"] == .some("3.1.1"))
    #expect(values["mqtt.client_id"] == .some(nil))
    #expect(!summary.contains { $0.value?.contains(Self.secret) == true })
  }

  @Test func summaryShowsAnUnsetPasswordAsUnset() {
    let values = Dictionary(
      uniqueKeysWithValues: GatewayConfiguration().redactedSummary().map { ($0.key, $0.value) })
    #expect(values["mqtt.password"] == .some(nil))
  }

  @Test func summaryOfEveryKeyMatchesTheTextsThatSetThem() {
    let summary = ConfigurationFixture.everyKey.redactedSummary()
    for (key, value) in summary {
      let secret = key == "mqtt.password" || key == "web.token"
      let expected = secret ? "***" : ConfigurationFixture.everyKeyText[key]
      #expect(value == expected, "\(key)")
    }
  }

  @Test func loadedPasswordIsUsableButNeverEchoedInErrors() async throws {
    let configuration = try await ConfigurationLoader.load(
      file: nil,
      environment: ["GATT2MQTT_MQTT_USERNAME": "u", "GATT2MQTT_MQTT_PASSWORD": Self.secret],
      arguments: [])
    #expect(configuration.mqtt.password == Self.secret)
    #expect(!"\(configuration)".contains(Self.secret))
  }

  @Test func secretKeyErrorDoesNotEchoTheValue() {
    var layer = ConfigurationLayer(source: "environment")
    let key = ConfigurationKey(
      "test.secret", .integer(1...2), secret: true, read: nil, value: { _ in nil })
    #expect(throws: ConfigurationError.self) {
      try layer.set(key, text: Self.secret, line: nil, spelling: "GATT2MQTT_TEST_SECRET")
    }
    let error = layer.invalidValue(
      key, text: Self.secret, line: nil, spelling: "GATT2MQTT_TEST_SECRET")
    #expect(!error.description.contains(Self.secret))
  }
}
