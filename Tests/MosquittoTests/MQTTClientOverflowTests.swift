import Foundation
import Mosquitto
import TestSupport
import Testing

@Suite(
  "MQTT client: messages past the inbound count are handed over without payload, not lost",
  .enabled(if: Broker.isAvailable, "mosquitto is not installed"))
struct MQTTClientOverflowTests {
  @Test("a consumer that falls behind: the first messages in full, the rest in overflow, counted")
  func overflowCarriesTheRest() async throws {
    let broker = try Broker()
    try await broker.start()
    defer { broker.stop() }
    var settings = configuration(broker)
    settings.incomingBufferCapacity = 5
    let client = try await connectedClient(settings)
    try await client.subscribe("flood/#", qos: .atLeastOnce)
    let sender = try await connectedClient(configuration(broker))
    for index in 0..<20 {
      try await sender.publish(
        MQTTMessage(topic: "flood/\(index)", text: "payload \(index)", qos: .atLeastOnce))
    }
    #expect(await eventually { client.statistics.received == 20 })
    #expect(client.statistics.receivedDiscarded == 15)
    #expect(client.statistics.receivedDropped == 0)

    var full: [MQTTMessage] = []
    for await message in client.messages {
      full.append(message)
      if full.count == 5 { break }
    }
    #expect(full.map(\.topic) == (0..<5).map { "flood/\($0)" })
    #expect(full.allSatisfy { $0.discarded == nil && !$0.payload.isEmpty })
    var rest: [MQTTMessage] = []
    for await message in client.overflow {
      rest.append(message)
      if rest.count == 15 { break }
    }
    #expect(rest.map(\.topic) == (5..<20).map { "flood/\($0)" })
    #expect(rest.allSatisfy { $0.payload.isEmpty && $0.discarded != nil })
    if case .bufferFull(let bytes) = rest.first?.discarded {
      #expect(bytes == "payload 5".utf8.count)
    } else {
      Issue.record("expected bufferFull, got \(String(describing: rest.first?.discarded))")
    }
    await sender.shutdown()
    await client.shutdown()
  }
}
