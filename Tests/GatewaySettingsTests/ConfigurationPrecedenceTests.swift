import Testing

@testable import GatewaySettings

@Suite("Configuration precedence")
struct ConfigurationPrecedenceTests {
  @Test func flagsBeatEnvironmentBeatFileBeatDefaults() async throws {
    let file = try ConfigurationFixture.file(
      """
      mqtt:
        host: from-file
        port: 1001
        qos: 0
        keepalive: 11
      log:
        level: error
      """)
    let environment = [
      "GATT2MQTT_MQTT_HOST": "from-env",
      "GATT2MQTT_MQTT_PORT": "1002",
      "GATT2MQTT_MQTT_QOS": "2",
    ]
    let arguments = ["--mqtt.host", "from-flags"]
    let configuration = try await ConfigurationLoader.load(
      file: file, environment: environment, arguments: arguments)
    #expect(configuration.mqtt.host == "from-flags")
    #expect(configuration.mqtt.port == 1002)
    #expect(configuration.mqtt.qos == 2)
    #expect(configuration.mqtt.keepalive == 11)
    #expect(configuration.log.level == .error)
    #expect(configuration.mqtt.baseTopic == "gatt2mqtt")
  }

  @Test func flagsBeatTheFileWithoutEnvironment() async throws {
    let file = try ConfigurationFixture.file("gateway:\n  id: from-file\n")
    let configuration = try await ConfigurationLoader.load(
      file: file, environment: [:], arguments: ["--gateway.id=from-flags"])
    #expect(configuration.gateway.id == "from-flags")
  }

  @Test func environmentSetsAnOptionalKeyTheFileLeavesUnset() async throws {
    let file = try ConfigurationFixture.file("mqtt:\n  username: ~\n")
    let configuration = try await ConfigurationLoader.load(
      file: file, environment: ["GATT2MQTT_MQTT_USERNAME": "env-user"], arguments: [])
    #expect(configuration.mqtt.username == "env-user")
  }

  @Test func aValidHigherSourceDoesNotExcuseAnInvalidLowerOne() async throws {
    let file = try ConfigurationFixture.file("mqtt:\n  port: abc\n")
    let error = try #require(
      await ConfigurationFixture.error(file: file, arguments: ["--mqtt.port", "1883"]))
    #expect(error.source == file)
    #expect(error.key == "mqtt.port")
  }
}
