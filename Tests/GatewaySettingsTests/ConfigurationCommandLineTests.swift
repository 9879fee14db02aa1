import Testing

@testable import GatewaySettings

@Suite("Configuration from the command line")
struct ConfigurationCommandLineTests {
  private func load(_ arguments: [String]) async throws -> GatewayConfiguration {
    try await ConfigurationLoader.load(file: nil, environment: [:], arguments: arguments)
  }

  @Test func dottedDashedAndEqualsSpellingsAreAccepted() async throws {
    let configuration = try await load([
      "--mqtt.host", "a.lan", "--mqtt-port", "1884", "--mqtt.tls.ca-file", "/ca.pem",
      "--mqtt-offline-queue-max-messages=7", "--mqtt.reconnect.max_delay=9",
    ])
    #expect(configuration.mqtt.host == "a.lan")
    #expect(configuration.mqtt.port == 1884)
    #expect(configuration.mqtt.tls.caFile == "/ca.pem")
    #expect(configuration.mqtt.offlineQueue.maxMessages == 7)
    #expect(configuration.mqtt.reconnect.maxDelay == 9)
  }

  @Test func booleanOptionAloneMeansTrue() async throws {
    let configuration = try await load(["--mqtt.retain-values", "--log.level", "trace"])
    #expect(configuration.mqtt.retainValues == true)
    #expect(configuration.log.level == .trace)
  }

  @Test func booleanOptionTakesAnExplicitValue() async throws {
    let configuration = try await load([
      "--mqtt.clean-session=false", "--mqtt.retain-values", "no",
    ])
    #expect(configuration.mqtt.cleanSession == false)
    #expect(configuration.mqtt.retainValues == false)
  }

  @Test func booleanOptionAtTheEndMeansTrue() async throws {
    let configuration = try await load(["--mqtt.tls.insecure"])
    #expect(configuration.mqtt.tls.insecure == true)
  }

  @Test func lastOfARepeatedOptionWins() async throws {
    let configuration = try await load(["--mqtt.qos", "0", "--mqtt.qos=2"])
    #expect(configuration.mqtt.qos == 2)
  }

  @Test func valueAfterEqualsMayStartWithDashes() async throws {
    let configuration = try await load(["--mqtt.username=u", "--mqtt.password=--secret"])
    #expect(configuration.mqtt.password == "--secret")
  }

  @Test func unknownOptionIsAnErrorNamingIt() async throws {
    let error = try #require(await ConfigurationFixture.error(arguments: ["--mqtt.hots", "x"]))
    #expect(error.key == "--mqtt.hots")
    #expect(error.source == "command line")
    #expect(
      error.description == "command line: --mqtt.hots: unknown option (did you mean --mqtt.host?)")
  }

  @Test func unknownOptionWithEqualsIsNamedWithoutItsValue() async throws {
    let error = try #require(
      await ConfigurationFixture.error(arguments: ["--mqtt.pasword=hunter2"]))
    #expect(error.key == "--mqtt.pasword")
    #expect(!error.description.contains("hunter2"))
    #expect(error.message == "unknown option (did you mean --mqtt.password?)")
  }

  @Test func missingValueIsAnError() async throws {
    let error = try #require(await ConfigurationFixture.error(arguments: ["--mqtt.host"]))
    #expect(error.key == "mqtt.host")
    #expect(error.message == "missing value for --mqtt.host (write --mqtt.host=VALUE)")
    let followed = try #require(
      await ConfigurationFixture.error(arguments: ["--mqtt.port", "--mqtt.qos", "1"]))
    #expect(followed.key == "mqtt.port")
  }

  @Test func positionalArgumentIsAnError() async throws {
    let error = try #require(await ConfigurationFixture.error(arguments: ["gatt2mqtt"]))
    #expect(error.key == nil)
    #expect(
      error.description
        == "command line: unexpected argument 'gatt2mqtt' (options look like --mqtt.host=broker.lan)"
    )
  }

  @Test func wordAfterABooleanOptionThatIsNotABooleanIsAnError() async throws {
    let error = try #require(
      await ConfigurationFixture.error(arguments: ["--mqtt.tls.insecure", "maybe"]))
    #expect(error.message.hasPrefix("unexpected argument 'maybe'"))
  }

  @Test func invalidValueNamesTheOption() async throws {
    let error = try #require(
      await ConfigurationFixture.error(arguments: ["--mqtt-keepalive", "2"]))
    #expect(error.key == "mqtt.keepalive")
    #expect(error.message == "expected an integer in 5...65535, got \"2\" (from --mqtt-keepalive)")
  }

  @Test func badProtocolVersionIsAnError() async throws {
    let error = try #require(await ConfigurationFixture.error(arguments: ["--mqtt.protocol=4"]))
    #expect(error.key == "mqtt.protocol")
    #expect(error.message.hasPrefix("expected one of \"3.1.1\", \"5\", got \"4\""))
  }
}

@Suite("Configuration: broker host and credentials")
struct ConfigurationBrokerTests {
  @Test(
    "mqtt.host must be a host name: not 10 MB, not with spaces or control characters",
    arguments: [String(repeating: "a", count: 10_000_000), "broker lan", "broker\n", ""])
  func badHosts(host: String) async throws {
    let error = try #require(await ConfigurationFixture.error(arguments: ["--mqtt.host", host]))
    #expect(error.key == "mqtt.host")
    #expect(error.description.count < 300, "the error does not echo the value whole")
  }

  @Test("host names and addresses of every usual form are accepted")
  func goodHosts() async throws {
    for host in ["localhost", "broker.lan", "192.168.1.10", "::1", "fe80::1%eth0", "a.b-c_d"] {
      let configuration = try await ConfigurationLoader.load(
        file: nil, environment: [:], arguments: ["--mqtt.host", host])
      #expect(configuration.mqtt.host == host)
    }
  }

  @Test("a password without a user name is an error with MQTT 3.1.1, allowed with MQTT 5")
  func passwordWithoutUsername() async throws {
    let error = try #require(
      await ConfigurationFixture.error(environment: ["GATT2MQTT_MQTT_PASSWORD": "s3cret"]))
    #expect(error.key == "mqtt.password")
    #expect(!error.description.contains("s3cret"))
    let v5 = try await ConfigurationLoader.load(
      file: nil, environment: ["GATT2MQTT_MQTT_PASSWORD": "s3cret"],
      arguments: ["--mqtt.protocol", "5"])
    #expect(v5.mqtt.password == "s3cret")
  }
}
