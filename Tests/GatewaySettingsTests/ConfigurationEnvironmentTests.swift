import Testing

@testable import GatewaySettings

@Suite("Configuration from the environment")
struct ConfigurationEnvironmentTests {
  @Test func unrelatedVariablesAreIgnored() async throws {
    let environment = [
      "PATH": "/usr/bin", "MQTT_HOST": "ignored", "gatt2mqtt_mqtt_host": "ignored",
      "GATT2MQTT": "ignored",
    ]
    let configuration = try await ConfigurationLoader.load(
      file: nil, environment: environment, arguments: [])
    #expect(configuration == GatewayConfiguration())
  }

  @Test func nameWithUnderscoresInsideKeyNamesIsMatchedWhole() async throws {
    let environment = [
      "GATT2MQTT_MQTT_TLS_CA_FILE": "/etc/ca.pem",
      "GATT2MQTT_MQTT_OFFLINE_QUEUE_MAX_MESSAGES": "42",
      "GATT2MQTT_GATEWAY_HEALTH_INTERVAL": "2.5",
    ]
    let configuration = try await ConfigurationLoader.load(
      file: nil, environment: environment, arguments: [])
    #expect(configuration.mqtt.tls.caFile == "/etc/ca.pem")
    #expect(configuration.mqtt.offlineQueue.maxMessages == 42)
    #expect(configuration.gateway.healthInterval == 2.5)
  }

  @Test func unknownPrefixedVariableIsAnErrorNamingIt() async throws {
    let error = try #require(
      await ConfigurationFixture.error(environment: ["GATT2MQTT_MQTT_HOTS": "broker.lan"]))
    #expect(error.key == "GATT2MQTT_MQTT_HOTS")
    #expect(error.source == "environment")
    #expect(
      error.description
        == "environment: GATT2MQTT_MQTT_HOTS: unknown variable (did you mean GATT2MQTT_MQTT_HOST?)")
  }

  @Test func variableMissingItsSectionSuggestsTheFullName() async throws {
    let error = try #require(await ConfigurationFixture.error(environment: ["GATT2MQTT_HOST": "x"]))
    #expect(error.message == "unknown variable (did you mean GATT2MQTT_MQTT_HOST?)")
  }

  @Test func configFileVariableIsNotReportedAsUnknown() async throws {
    let configuration = try await ConfigurationLoader.load(
      file: nil, environment: ["GATT2MQTT_CONFIG": "/etc/gatt2mqtt.yaml"], arguments: [])
    #expect(configuration == GatewayConfiguration())
  }

  @Test func invalidValueNamesTheKeyAndTheVariable() async throws {
    let error = try #require(
      await ConfigurationFixture.error(environment: ["GATT2MQTT_MQTT_PORT": "http"]))
    #expect(error.key == "mqtt.port")
    #expect(
      error.description
        == "environment: mqtt.port: expected an integer in 1...65535, got \"http\" "
        + "(from GATT2MQTT_MQTT_PORT)")
  }

  @Test func booleanWordsAreAcceptedInAnyCase() async throws {
    let environment = [
      "GATT2MQTT_MQTT_RETAIN_VALUES": "YES", "GATT2MQTT_MQTT_CLEAN_SESSION": "off",
      "GATT2MQTT_MQTT_TLS_ENABLED": "1",
    ]
    let configuration = try await ConfigurationLoader.load(
      file: nil, environment: environment, arguments: [])
    #expect(configuration.mqtt.retainValues == true)
    #expect(configuration.mqtt.cleanSession == false)
    #expect(configuration.mqtt.tls.enabled == true)
  }

  @Test func invalidBooleanIsAnError() async throws {
    let error = try #require(
      await ConfigurationFixture.error(environment: ["GATT2MQTT_MQTT_TLS_INSECURE": "maybe"]))
    #expect(error.key == "mqtt.tls.insecure")
    #expect(error.message.hasPrefix("expected true or false, got \"maybe\""))
  }

  @Test func emptyVariableCountsAsUnset() async throws {
    let file = try ConfigurationFixture.file("mqtt:\n  port: 1999\n")
    let configuration = try await ConfigurationLoader.load(
      file: file, environment: ["GATT2MQTT_MQTT_PORT": "", "GATT2MQTT_MQTT_USERNAME": ""],
      arguments: [])
    #expect(configuration.mqtt.port == 1999)
    #expect(configuration.mqtt.username == nil)
  }

  @Test func invalidGatewayIDIsAnError() async throws {
    let error = try #require(
      await ConfigurationFixture.error(environment: ["GATT2MQTT_GATEWAY_ID": "living room/1"]))
    #expect(error.key == "gateway.id")
    #expect(
      error.message.hasPrefix(
        "expected a name of up to 64 letters, digits, '_' and '-', with a letter or digit, "
          + "got \"living room/1\""))
    for id in ["___", "-", String(repeating: "a", count: 65)] {
      let rejected = await ConfigurationFixture.error(environment: ["GATT2MQTT_GATEWAY_ID": id])
      #expect(rejected?.key == "gateway.id", "\(id)")
    }
    let configuration = try await ConfigurationLoader.load(
      file: nil, environment: ["GATT2MQTT_GATEWAY_ID": "gw_1-" + String(repeating: "a", count: 59)],
      arguments: [])
    #expect(configuration.gateway.id?.count == 64)
  }

  @Test func wildcardInBaseTopicIsAnError() async throws {
    let tooLong = String(repeating: "t", count: 1025)
    for topic in ["home/#", "a/+/b", "$SYS", "/home", "home/", "a//b", "a\u{7}b", tooLong] {
      let error = try #require(
        await ConfigurationFixture.error(environment: ["GATT2MQTT_MQTT_BASE_TOPIC": topic]))
      #expect(error.key == "mqtt.base_topic", "\(topic)")
    }
    let configuration = try await ConfigurationLoader.load(
      file: nil, environment: ["GATT2MQTT_MQTT_BASE_TOPIC": "home/ble"], arguments: [])
    #expect(configuration.mqtt.baseTopic == "home/ble")
  }
}
