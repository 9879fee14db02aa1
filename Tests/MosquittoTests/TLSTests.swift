import Foundation
import Mosquitto
import Synchronization
import TestSupport
import Testing

@Suite(
  "MQTT over TLS against a real mosquitto", .serialized,
  .enabled(if: Broker.isAvailable, "mosquitto is not installed (apt-get install mosquitto)"),
  .enabled(if: Certificates.isAvailable, "openssl is not installed (apt-get install openssl)"))
struct TLSTests {
  @Test("connects with the CA and a client certificate, and messages flow")
  func mutualTLS() async throws {
    let pki = try await Certificates()
    let broker = try Broker(configuration: pki.brokerConfiguration)
    try await broker.start()
    var config = configuration(broker)
    config.tls = MQTTClientConfiguration.TLS(
      caFile: pki.caFile, certFile: pki.clientCertFile, keyFile: pki.clientKeyFile)
    let client = try await connectedClient(config)
    let collector = Collector(client)
    try await client.subscribe("secure/#")
    try await client.publish(MQTTMessage(topic: "secure/x", text: "hi", qos: .atLeastOnce))
    #expect(await eventually { collector.messages.map(\.text) == ["hi"] })
    await client.shutdown()
  }

  @Test("refuses a broker whose certificate another CA signed, with a TLS error, and retries")
  func wrongCA() async throws {
    let pki = try await Certificates()
    let other = try await Certificates()
    let broker = try Broker(configuration: pki.brokerConfiguration)
    try await broker.start()
    var config = configuration(broker)
    config.tls = MQTTClientConfiguration.TLS(
      caFile: other.caFile, certFile: pki.clientCertFile, keyFile: pki.clientKeyFile)
    let client = try MQTTClient(configuration: config, logger: quietLogger("tls"))
    let failures = Mutex<[MQTTError]>([])
    let watcher = Task {
      for await event in client.events {
        if case .connectionFailed(let error, _) = event { failures.withLock { $0.append(error) } }
      }
    }
    client.start()
    #expect(await eventually { failures.withLock { $0.count } >= 2 })
    let first = try #require(failures.withLock { $0.first })
    #expect(first.code == .tls, "got \(first)")
    #expect(!client.statistics.connected)
    await client.shutdown()
    watcher.cancel()
  }

  @Test("a broker requiring client certificates refuses a client without one")
  func missingClientCertificate() async throws {
    let pki = try await Certificates()
    let broker = try Broker(configuration: pki.brokerConfiguration)
    try await broker.start()
    var config = configuration(broker)
    config.tls = MQTTClientConfiguration.TLS(caFile: pki.caFile)
    let client = try MQTTClient(configuration: config, logger: quietLogger("tls"))
    client.start()
    #expect(await eventually(timeout: 15) { client.statistics.connectionFailures >= 2 })
    #expect(!client.statistics.connected)
    await client.shutdown()
  }
}
