import Foundation
import Mosquitto
import TestSupport
import Testing

@Suite(
  "MQTT client: received memory bounded in bytes, cancellation honoured", .serialized,
  .enabled(if: Broker.isAvailable, "mosquitto is not installed (apt-get install mosquitto)"))
struct MQTTClientBoundsTests {
  @Test("a payload over maxIncomingMessageBytes arrives without it, with the reason and the topic")
  func tooLargeIsDiscarded() async throws {
    let broker = try Broker()
    try await broker.start()
    var config = configuration(broker)
    config.maxIncomingMessageBytes = 1000
    let subscriber = try await connectedClient(config)
    let seen = Collector(subscriber)
    try await subscriber.subscribe("big/#", qos: .atLeastOnce)
    let publisher = try await connectedClient(configuration(broker))
    let properties = MQTTPublishProperties(responseTopic: "r/1")
    try await publisher.publish(
      MQTTMessage(
        topic: "big/1", payload: [UInt8](repeating: 7, count: 1001), qos: .atLeastOnce,
        properties: properties))
    try await publisher.publish(
      MQTTMessage(topic: "big/2", payload: [UInt8](repeating: 7, count: 1000), qos: .atLeastOnce))
    #expect(await eventually { seen.messages.count == 2 })
    let first = try #require(seen.messages.first)
    #expect(first.topic == "big/1")
    #expect(first.payload.isEmpty)
    #expect(first.discarded == .tooLarge(bytes: 1001))
    #expect(seen.messages.last?.payload.count == 1000)
    #expect(seen.messages.last?.discarded == nil)
    #expect(subscriber.statistics.receivedDiscarded == 1)
    await publisher.shutdown()
    await subscriber.shutdown()
  }

  @Test("the buffer of received messages holds at most incomingBufferBytes of payload")
  func bufferIsBoundedInBytes() async throws {
    let broker = try Broker()
    try await broker.start()
    var config = configuration(broker)
    config.incomingBufferBytes = 1000
    let subscriber = try await connectedClient(config)  // nobody iterates `messages` yet
    try await subscriber.subscribe("flood/#", qos: .atLeastOnce)
    let publisher = try await connectedClient(configuration(broker))
    for i in 0..<5 {
      try await publisher.publish(
        MQTTMessage(
          topic: "flood/\(i)", payload: [UInt8](repeating: 1, count: 400), qos: .atLeastOnce))
    }
    #expect(await eventually { subscriber.statistics.received == 5 })
    #expect(subscriber.statistics.incomingBytes == 800)
    #expect(subscriber.statistics.receivedDiscarded == 3)
    var kept: [MQTTMessage] = []
    for await message in subscriber.messages {
      kept.append(message)
      if kept.count == 5 { break }
    }
    #expect(kept.map(\.payload.count) == [400, 400, 0, 0, 0])
    #expect(
      kept.map(\.discarded) == [nil, nil] + Array(repeating: .bufferFull(bytes: 400), count: 3))
    // Consumed messages give their bytes back: the next one fits again.
    #expect(subscriber.statistics.incomingBytes == 0)
    try await publisher.publish(
      MQTTMessage(topic: "flood/5", payload: [UInt8](repeating: 1, count: 900), qos: .atLeastOnce))
    var iterator = subscriber.messages.makeAsyncIterator()
    let next = await iterator.next()
    #expect(next?.payload.count == 900)
    await publisher.shutdown()
    await subscriber.shutdown()
  }

  @Test("subscribe while the broker is unreachable: a cancelled caller returns at once")
  func cancelledSubscribeReturns() async throws {
    let port = try freeLoopbackPort()
    let client = try MQTTClient(
      configuration: MQTTClientConfiguration(
        host: "127.0.0.1", port: port, clientID: "cancel-\(port)", minReconnectDelay: 0.1,
        maxReconnectDelay: 0.2),
      logger: quietLogger("cancel"))
    client.start()
    let task = Task { () -> MQTTError? in
      do {
        try await client.subscribe("a/#")
        return nil
      } catch {
        return error as? MQTTError
      }
    }
    try await Task.sleep(for: .milliseconds(300))
    let started = ContinuousClock.now
    task.cancel()
    let error = await task.value
    // Without cancellation the call waits for a broker that never comes; the bound leaves room
    // for a loaded test machine (576 ms was seen in CI with every suite running at once).
    #expect(ContinuousClock.now - started < .seconds(15))
    #expect(error?.code == .cancelled)
    // A publish that waits for the broker is cancelled the same way.
    let publish = Task { () -> MQTTError? in
      do {
        try await client.publish(MQTTMessage(topic: "a/1", text: "x", qos: .atLeastOnce))
        return nil
      } catch {
        return error as? MQTTError
      }
    }
    try await Task.sleep(for: .milliseconds(100))
    publish.cancel()
    #expect(await publish.value?.code == .cancelled)
    // Shutting down while disconnected does not wait for the broker either (its 30 s; the
    // bound leaves room for a loaded test machine).
    let shutdownStarted = ContinuousClock.now
    await client.shutdown(timeout: 30)
    #expect(ContinuousClock.now - shutdownStarted < .seconds(10))
  }

  @Test(
    "shutdown while the broker acknowledges nothing: a cancelled caller returns at once, the shutdown goes on within its bound"
  )
  func cancelledShutdownReturns() async throws {
    let broker = try Broker()
    try await broker.start()
    defer { broker.stop() }
    // Stopped: a later publication is refused.
    func stopped(_ client: MQTTClient) async -> Bool {
      await eventually(timeout: 25) {
        (try? await client.publish(MQTTMessage(topic: "s/late", text: "z"))) == nil
      }
    }
    let client = try await connectedClient(configuration(broker))
    try await client.publish(MQTTMessage(topic: "s/0", text: "x", qos: .atLeastOnce))
    broker.freeze(true)
    defer { broker.freeze(false) }
    client.enqueue(MQTTMessage(topic: "s/1", text: "y", qos: .atLeastOnce))
    let task = Task { await client.shutdown(timeout: 20) }
    try await Task.sleep(for: .milliseconds(200))
    let started = ContinuousClock.now
    task.cancel()
    await task.value
    // Uncancelled, it would wait the 20 s for the acknowledgement.
    #expect(ContinuousClock.now - started < .seconds(15))
    broker.freeze(false)
    // The shutdown itself finished.
    #expect(await stopped(client))

    // A caller cancelled before it asks still shuts the client down (it just does not wait).
    let other = try await connectedClient(configuration(broker))
    try await other.publish(MQTTMessage(topic: "s/3", text: "x", qos: .atLeastOnce))
    let early = Task {
      withUnsafeCurrentTask { $0?.cancel() }
      await other.shutdown(timeout: 5)
    }
    await early.value
    #expect(await stopped(other))
  }

  @Test("retained publishes come back after a broker restart; a cleared topic does not")
  func retainedRestored() async throws {
    let broker = try Broker()
    try await broker.start()
    let client = try await connectedClient(configuration(broker))
    try await client.publish(
      MQTTMessage(topic: "r/kept", text: "1", qos: .atLeastOnce, retain: true))
    try await client.publish(
      MQTTMessage(topic: "r/kept", text: "2", qos: .atLeastOnce, retain: true))
    try await client.publish(
      MQTTMessage(topic: "r/gone", text: "x", qos: .atLeastOnce, retain: true))
    try await client.publish(
      MQTTMessage(topic: "r/gone", payload: [], qos: .atLeastOnce, retain: true))
    try await client.publish(MQTTMessage(topic: "r/plain", text: "p", qos: .atLeastOnce))
    broker.stop(signal: SIGKILL)
    try await broker.start()
    #expect(await eventually(timeout: 10) { client.statistics.reconnects == 1 })
    let observer = try await connectedClient(configuration(broker))
    let seen = Collector(observer)
    try await observer.subscribe("r/#")
    #expect(await eventually { seen.messages.count == 1 })
    try await Task.sleep(for: .milliseconds(300))
    #expect(seen.messages.map(\.topic) == ["r/kept"])
    #expect(seen.messages.map(\.text) == ["2"])
    #expect(seen.messages.first?.retain == true)
    await observer.shutdown()
    await client.shutdown()
  }
}
