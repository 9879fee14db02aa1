import Testing

@testable import GatewaySettings

@Suite("Configuration sources")
struct ConfigurationSourcesTests {
  @Test func everyKeyCanBeSetFromTheEnvironment() async throws {
    var environment: [String: String] = ["PATH": "/usr/bin", "HOME": "/root"]
    for (path, text) in ConfigurationFixture.everyKeyText {
      environment[try #require(ConfigurationKey.byPath[path]).environmentName] = text
    }
    let configuration = try await ConfigurationLoader.load(
      file: nil, environment: environment, arguments: [])
    #expect(configuration == ConfigurationFixture.everyKey)
  }

  @Test func everyKeyCanBeSetFromTheCommandLine() async throws {
    var arguments: [String] = []
    for (path, text) in ConfigurationFixture.everyKeyText.sorted(by: { $0.key < $1.key }) {
      arguments += [try #require(ConfigurationKey.byPath[path]).optionName, text]
    }
    let configuration = try await ConfigurationLoader.load(
      file: nil, environment: [:], arguments: arguments)
    #expect(configuration == ConfigurationFixture.everyKey)
  }

  @Test func textTableCoversEveryKey() {
    #expect(Set(ConfigurationFixture.everyKeyText.keys) == Set(ConfigurationLoader.keyPaths))
  }
}
