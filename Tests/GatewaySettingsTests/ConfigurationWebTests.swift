import Testing

@testable import GatewaySettings

/// `web.*` and `homeassistant.*`: what the loader accepts and the errors it gives.
@Suite("Configuration of the web page and Home Assistant")
struct ConfigurationWebTests {
  @Test(
    "web.listen takes <host>:<port>, IPv6 in brackets",
    arguments: [
      ("127.0.0.1:8080", "127.0.0.1", 8080), ("0.0.0.0:0", "0.0.0.0", 0),
      ("[::1]:9090", "::1", 9090), ("gateway.local:65535", "gateway.local", 65535),
    ])
  func listenAddresses(_ text: String, _ host: String, _ port: Int) {
    let parsed = GatewayConfiguration.Web(listen: text).listenAddress
    #expect(parsed?.host == host && parsed?.port == port)
  }

  @Test(
    "web.listen refuses what is not <host>:<port>",
    arguments: ["8080", "localhost", ":8080", "host:65536", "host:-1", "host:http", "a b:80", ""])
  func badListenAddresses(_ text: String) async throws {
    #expect(GatewayConfiguration.Web(listen: text).listenAddress == nil)
    let error = try #require(
      await ConfigurationFixture.error(arguments: ["--web.listen", text]))
    #expect(error.key == "web.listen")
    #expect(error.message.contains("<host>:<port>"))
  }

  @Test("a bad Home Assistant control rule names the key and the allowed controls")
  func badControl() async throws {
    let error = try #require(
      await ConfigurationFixture.error(arguments: [
        "--homeassistant.controls", "*/fff0/fff1=dimmer",
      ]))
    #expect(error.key == "homeassistant.controls")
    #expect(error.message.contains("button, switch, text"))
  }

  @Test("a discovery prefix with a wildcard is refused")
  func badPrefix() async throws {
    let error = try #require(
      await ConfigurationFixture.error(arguments: ["--homeassistant.prefix", "home/+"]))
    #expect(error.key == "homeassistant.prefix")
  }

  @Test("the token is a secret: never in the summary or the description")
  func tokenIsSecret() async throws {
    let configuration = try await ConfigurationLoader.load(
      file: nil, environment: [:], arguments: ["--web.token", "s3cret-value"])
    #expect(configuration.web.token == "s3cret-value")
    #expect(!configuration.description.contains("s3cret-value"))
    #expect(!"\(configuration.web)".contains("s3cret-value"))
    var dumped = ""
    dump(configuration, to: &dumped)
    #expect(!dumped.contains("s3cret-value"))
  }
}
