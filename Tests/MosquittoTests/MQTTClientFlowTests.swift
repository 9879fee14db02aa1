import Foundation
import Glibc
import Synchronization
import TestSupport
import Testing

@testable import Mosquitto

@Suite(
  "MQTT client flow control and subscriptions", .serialized,
  .enabled(if: Broker.isAvailable, "mosquitto is not installed (apt-get install mosquitto)"))
struct MQTTClientFlowTests {
  @Test(
    "a consumer that falls behind: the rest go to the overflow without payload up to its capacity; beyond, losses are counted"
  )
  func incomingBufferIsBounded() async throws {
    let broker = try Broker()
    try await broker.start()
    var config = configuration(broker)
    config.incomingBufferCapacity = 10
    let subscriber = try await connectedClient(config)  // nobody iterates `messages`
    try await subscriber.subscribe("flood/#", qos: .atLeastOnce)
    let publisher = try await connectedClient(configuration(broker))
    let total = 10 + MQTTClient.overflowCapacity + 66
    for i in 0..<total {
      try await publisher.publish(MQTTMessage(topic: "flood/\(i)", text: "x", qos: .atLeastOnce))
    }
    #expect(await eventually(timeout: 20) { subscriber.statistics.received == UInt64(total) })
    #expect(subscriber.statistics.receivedDiscarded == UInt64(MQTTClient.overflowCapacity))
    #expect(subscriber.statistics.receivedDropped == 66)
    var kept: [String] = []
    for await message in subscriber.messages {
      kept.append(message.topic)
      if kept.count == 10 { break }
    }
    #expect(kept == (0..<10).map { "flood/\($0)" })
    await publisher.shutdown()
    await subscriber.shutdown()
  }

  @Test(
    "an answer overtakes a backlog: published while 40 values wait for a frozen broker, it reaches a subscriber right after the one in flight"
  )
  func answerOvertakesBacklog() async throws {
    let broker = try Broker()
    try await broker.start()
    let observer = try await connectedClient(configuration(broker))
    let seen = Collector(observer)
    try await observer.subscribe("backlog/#", qos: .atLeastOnce)
    var settings = configuration(broker)
    settings.maxInflight = 1
    let client = try await connectedClient(settings)
    broker.freeze(true)
    for index in 0..<40 {
      client.enqueue(MQTTMessage(topic: "backlog/v", text: "\(index)", qos: .atLeastOnce))
    }
    client.answer(MQTTMessage(topic: "backlog/response", text: "ok", qos: .atLeastOnce))
    #expect(await eventually { client.statistics.queued == 40 })
    broker.freeze(false)
    #expect(await eventually(timeout: 20) { seen.messages.count == 41 })
    let topics = seen.messages.map(\.topic)
    // The first value was in flight when the answer came; the answer is next.
    #expect(topics.firstIndex(of: "backlog/response") == 1, "\(topics)")
    #expect(
      seen.messages.filter { $0.topic == "backlog/v" }.map {
        String(decoding: $0.payload, as: UTF8.self)
      }
        == (0..<40).map { "\($0)" })
    await client.shutdown()
    await observer.shutdown()
  }

  @Test("after unsubscribe no more messages arrive on that filter")
  func unsubscribe() async throws {
    let broker = try Broker()
    try await broker.start()
    let subscriber = try await connectedClient(configuration(broker))
    let seen = Collector(subscriber)
    try await subscriber.subscribe("a/#")
    try await subscriber.subscribe("b/#")
    let publisher = try await connectedClient(configuration(broker))
    try await publisher.publish(MQTTMessage(topic: "a/1", text: "1", qos: .atLeastOnce))
    #expect(await eventually { seen.messages.count == 1 })
    try await subscriber.unsubscribe("a/#")
    try await publisher.publish(MQTTMessage(topic: "a/2", text: "2", qos: .atLeastOnce))
    try await publisher.publish(MQTTMessage(topic: "b/1", text: "3", qos: .atLeastOnce))
    #expect(await eventually { seen.messages.count == 2 })
    try await Task.sleep(for: .milliseconds(200))
    #expect(seen.messages.map(\.topic) == ["a/1", "b/1"])
    await publisher.shutdown()
    await subscriber.shutdown()
  }

  @Test("a malformed subscription filter is refused with invalid_argument")
  func badFilter() async throws {
    let broker = try Broker()
    try await broker.start()
    let client = try await connectedClient(configuration(broker))
    await #expect(throws: MQTTError.self) { try await client.subscribe("a/#/b") }
    // The client keeps working.
    try await client.subscribe("ok/#")
    await client.shutdown()
  }

  @Test("a publish to an invalid topic fails alone; other traffic continues")
  func badTopicPublish() async throws {
    let broker = try Broker()
    try await broker.start()
    let client = try await connectedClient(configuration(broker))
    let seen = Collector(client)
    try await client.subscribe("fine")
    await #expect {
      try await client.publish(MQTTMessage(topic: "bad/+/topic", text: "x", qos: .atLeastOnce))
    } throws: { error in
      (error as? MQTTError)?.code == .invalidArgument
    }
    try await client.publish(MQTTMessage(topic: "fine", text: "y", qos: .atLeastOnce))
    #expect(await eventually { seen.messages.map(\.text) == ["y"] })
    await client.shutdown()
  }

  @Test("many QoS 1 publishes are paced by the in-flight window and all acknowledged")
  func inflightWindow() async throws {
    let broker = try Broker()
    try await broker.start()
    var config = configuration(broker)
    config.maxInflight = 5
    let client = try await connectedClient(config)
    await withTaskGroup(of: Void.self) { group in
      for i in 0..<200 {
        group.addTask {
          try? await client.publish(MQTTMessage(topic: "w/\(i)", text: "\(i)", qos: .atLeastOnce))
        }
      }
    }
    #expect(client.statistics.published == 200)
    #expect(client.statistics.inflight == 0)
    #expect(client.statistics.dropped == 0)
    await client.shutdown()
  }

  @Test(
    "once connected, libmosquitto formats no log line per packet (two per QoS 1 publication while its log callback is set)"
  )
  func noLibraryLogWhileConnected() async throws {
    let broker = try Broker()
    try await broker.start()
    let client = try await connectedClient(configuration(broker))
    // Lines were formatted while connecting (the callback explains connection failures).
    #expect(client.statistics.libraryLogLines > 0)
    let before = client.statistics.libraryLogLines
    for i in 0..<100 {
      try await client.publish(MQTTMessage(topic: "quiet/\(i)", text: "\(i)", qos: .atLeastOnce))
    }
    #expect(client.statistics.published == 100)
    // With the callback set: "sending PUBLISH" and "received PUBACK" for each, 200 lines.
    #expect(client.statistics.libraryLogLines == before)
    await client.shutdown()
  }

  @Test(
    "batches handed over from other threads are written by those threads: in order, all of them, without waking the loop thread per batch"
  )
  func directHandOff() async throws {
    let broker = try Broker()
    try await broker.start()
    let subscriber = try await connectedClient(configuration(broker))
    let seen = Collector(subscriber)
    try await subscriber.subscribe("direct/#")
    let client = try await connectedClient(configuration(broker))
    try await Task.sleep(for: .milliseconds(100))
    let before = client.statistics.loopWakeUps
    // 200 batches of 5, QoS 0, 2 ms apart (as a bridge's steps at a modest rate: each finds
    // the loop thread waiting in poll).
    for batch in 0..<200 {
      client.send(
        (0..<5).map { i in
          .enqueue(MQTTMessage(topic: "direct/\(batch)", text: "\(batch * 5 + i)"))
        })
      try await Task.sleep(for: .milliseconds(2))
    }
    #expect(await eventually(timeout: 20) { seen.messages.count == 1000 })
    #expect(
      seen.messages.map { String(decoding: $0.payload, as: UTF8.self) }
        == (0..<1000).map { "\($0)" })
    #expect(client.statistics.published == 1000)
    // Before this path, each batch that found the loop thread waiting woke it (about 200).
    #expect(client.statistics.loopWakeUps - before < 20)
    await client.shutdown()
    await subscriber.shutdown()
  }

  @Test(
    "a batch of publications leaves in one TCP segment, a single publication at once in its own"
  )
  func batchInOneSegment() async throws {
    let broker = try Broker()
    try await broker.start()
    let client = try await connectedClient(configuration(broker))
    let fd = client.socketDescriptor
    try #require(fd >= 0)
    try await Task.sleep(for: .milliseconds(100))
    let start = try #require(Self.segmentsSent(fd))
    // 20 QoS 0 publications of 40 bytes in one hand-off: libmosquitto writes each with a
    // `write` of its own, which left as 20 segments before the batch was held together.
    client.send((0..<20).map { .enqueue(MQTTMessage(topic: "segments/\($0)", text: "value")) })
    let batch = try #require(Self.segmentsSent(fd)) - start
    #expect(batch >= 1 && batch <= 2, "20 publications left in \(batch) segments")
    // One publication is not held back: it has left when `send` returns.
    client.send([.enqueue(MQTTMessage(topic: "segments/alone", text: "value"))])
    let alone = try #require(Self.segmentsSent(fd)) - start - batch
    #expect(alone == 1, "one publication left in \(alone) segments")
    #expect(client.statistics.published == 21)
    await client.shutdown()
  }

  @Test(
    "while a thread publishes, it reads the acknowledgements itself: the loop thread does not wake for each, and what the broker sends still arrives"
  )
  func publisherReadsAcknowledgements() async throws {
    let broker = try Broker()
    try await broker.start()
    let client = try await connectedClient(configuration(broker))
    let seen = Collector(client)
    try await client.subscribe("echo/#")
    try await Task.sleep(for: .milliseconds(100))
    let before = client.statistics.loopReads
    // 100 QoS 1 publications 10 ms apart, each alone (as a radio's values at 100/s), half of
    // them to a topic the client itself subscribes to.
    for i in 0..<100 {
      let topic = i.isMultiple(of: 2) ? "echo/\(i)" : "other/\(i)"
      client.send([.enqueue(MQTTMessage(topic: topic, text: "\(i)", qos: .atLeastOnce))])
      try await Task.sleep(for: .milliseconds(10))
    }
    #expect(await eventually { client.statistics.published == 100 })
    #expect(await eventually { seen.messages.count == 50 })
    #expect(
      seen.messages.map { String(decoding: $0.payload, as: UTF8.self) }
        == stride(from: 0, to: 100, by: 2).map { "\($0)" })
    #expect(client.statistics.inflight == 0)
    // One read per acknowledgement before (about 100, and 50 messages more): now about one per
    // 50-ms read window, and the last ones after the publications end.
    let reads = client.statistics.loopReads - before
    #expect(reads < 50, "the loop thread read the socket \(reads) times")
    await client.shutdown()
  }

  @Test(
    "batches a batch window apart: with a read window longer than it, the acknowledgements of one are read with the next, and a message from the broker still arrives within the window"
  )
  func publisherReadWindowFollowsBatches() async throws {
    let broker = try Broker()
    try await broker.start()
    // Batches of 5 QoS 1 values 100 ms apart, as the BlueZ reader hands them over at the
    // default batch window; with the default 50-ms read window each batch wakes the loop
    // thread for its acknowledgements.
    func loopReads(readWindow: Double) async throws -> (
      reads: UInt64, turns: UInt64, delays: [Double], after: Double
    ) {
      var config = configuration(broker)
      config.publisherReadWindow = readWindow
      let client = try await connectedClient(config)
      let seen = Collector(client)
      try await client.subscribe("in/#")
      let sender = try await connectedClient(configuration(broker))
      try await Task.sleep(for: .milliseconds(100))
      let before = client.statistics.loopReads
      let turnsBefore = client.statistics.loopTurns
      var sentAt: [Double] = []
      for batch in 0..<20 {
        client.send(
          (0..<5).map {
            .enqueue(MQTTMessage(topic: "out/\(batch)/\($0)", text: "v", qos: .atLeastOnce))
          })
        if batch.isMultiple(of: 4) {
          // A message for the client mid-stream (as a `/set`), 30 ms after the batch.
          try await Task.sleep(for: .milliseconds(30))
          sentAt.append(monotonicSeconds())
          sender.send([.enqueue(MQTTMessage(topic: "in/\(batch)", text: "\(batch)"))])
          try await Task.sleep(for: .milliseconds(70))
        } else {
          try await Task.sleep(for: .milliseconds(100))
        }
      }
      let reads = client.statistics.loopReads - before
      let turns = client.statistics.loopTurns - turnsBefore
      #expect(await eventually { client.statistics.published == 100 })
      #expect(await eventually { seen.messages.count == 5 })
      #expect(client.statistics.inflight == 0)
      let delays = zip(seen.arrivals, sentAt).map { $0 - $1 }
      // After the last batch, no publisher reads: the window's end hands input back to the
      // loop thread, and a message from the broker arrives within about the window.
      let lastSent = monotonicSeconds()
      sender.send([.enqueue(MQTTMessage(topic: "in/after", text: "after"))])
      #expect(await eventually { seen.messages.count == 6 })
      let after = (seen.arrivals.last ?? .infinity) - lastSent
      await sender.shutdown()
      await client.shutdown()
      return (reads, turns, delays, after)
    }
    let narrow = try await loopReads(readWindow: 0.05)
    // 0.3 s, not the gateway's 0.15: a sleep of 100 ms that overshoots on a loaded host must
    // not end the flow.
    let wide = try await loopReads(readWindow: 0.3)
    // About one loop read per batch (20) with the narrow window; with the wide one only for the
    // messages from the broker and after the last batch.
    #expect(narrow.reads >= 15, "narrow window: \(narrow.reads) loop reads")
    #expect(wide.reads * 2 <= narrow.reads, "wide \(wide.reads), narrow \(narrow.reads) loop reads")
    // A message from the broker still arrives: read with the next batch, about one batch
    // interval (100 ms) late, never later than the window (0.3 s); 0.5 s leaves room for a
    // loaded host.
    #expect(wide.delays.count == 5)
    #expect(wide.delays.allSatisfy { $0 < 0.5 }, "delays \(wide.delays)")
    #expect(
      wide.after < 0.6 && narrow.after < 0.6, "after the stream: \(wide.after), \(narrow.after) s")
  }

  @Test(
    "while batches flow within the read window the loop thread sleeps (its end is a timer each batch pushes back), and wakes once they stop"
  )
  func loopSleepsWhileBatchesFlow() async throws {
    let broker = try Broker()
    try await broker.start()
    var config = configuration(broker)
    config.publisherReadWindow = 0.3
    let client = try await connectedClient(config)
    let seen = Collector(client)
    try await client.subscribe("in/#")
    let sender = try await connectedClient(configuration(broker))
    try await Task.sleep(for: .milliseconds(200))
    let turnsBefore = Mutex<UInt64>(0)
    // 20 batches of 5 QoS 1 values 100 ms apart, paced by a thread of its own (the test
    // pool's tasks can be late by more than the window when tests run in parallel).
    let finished = Mutex(false)
    let paced = Thread {
      for batch in 0..<20 {
        client.send(
          (0..<5).map {
            .enqueue(MQTTMessage(topic: "out/\(batch)/\($0)", text: "v", qos: .atLeastOnce))
          })
        usleep(100_000)
        // From the third batch on (the first's acknowledgements are the loop thread's: no
        // publisher read before it; the second's may reach it before it plans anew).
        if batch == 1 { turnsBefore.withLock { $0 = client.statistics.loopTurns } }
      }
      finished.withLock { $0 = true }
    }
    paced.start()
    #expect(await eventually { finished.withLock { $0 } })
    let turns = client.statistics.loopTurns - turnsBefore.withLock { $0 }
    // Over the last 18 batches (1.8 s): the keepalive's look once a second (a tenth of the
    // test's 10 s), no window end. With the loop thread woken at the end of the window each
    // batch opened, it turned every 0.2 s besides: about 11 times.
    #expect(turns <= 4, "\(turns) loop turns while 18 batches flowed")
    #expect(await eventually { client.statistics.inflight == 0 })
    // After the stream the loop thread reads again: a message arrives within about the window.
    try await Task.sleep(for: .milliseconds(50))
    let sentAt = monotonicSeconds()
    sender.send([.enqueue(MQTTMessage(topic: "in/after", text: "after"))])
    #expect(await eventually { seen.messages.count == 1 })
    let delay = (seen.arrivals.last ?? .infinity) - sentAt
    #expect(delay < 0.8, "arrived \(delay) s after it was sent")
    await sender.shutdown()
    await client.shutdown()
  }

  @Test(
    "a burst of incoming messages while the client publishes QoS 0 batches is read at once, not one packet per batch"
  )
  func incomingBurstWhilePublishing() async throws {
    let broker = try Broker()
    try await broker.start()
    let client = try await connectedClient(configuration(broker))
    let seen = Collector(client)
    try await client.subscribe("burst/#")
    let sender = try await connectedClient(configuration(broker))
    try await Task.sleep(for: .milliseconds(100))
    for i in 0..<200 { sender.send([.enqueue(MQTTMessage(topic: "burst/\(i)", text: "\(i)"))]) }
    // Fire-and-forget QoS 0 batches 10 ms apart for half a second: before each, the client
    // reads what came; libmosquitto reads one packet per call when nothing is in flight.
    for i in 0..<50 {
      client.send([.enqueue(MQTTMessage(topic: "out/\(i)", text: "\(i)"))])
      try await Task.sleep(for: .milliseconds(10))
    }
    let received = seen.messages.count
    #expect(received == 200, "\(received) of 200 received while publishing")
    await sender.shutdown()
    await client.shutdown()
  }

  @Test("a publication awaited right after a fire-and-forget batch is acknowledged at once")
  func awaitedAfterBatch() async throws {
    let broker = try Broker()
    try await broker.start()
    // A read window of 2 s: left to the window's end, an awaited publication would take up to
    // that, far from the bound below even on a loaded machine.
    var config = configuration(broker)
    config.publisherReadWindow = 2
    let client = try await connectedClient(config)
    try await Task.sleep(for: .milliseconds(100))
    var took: [Duration] = []
    for i in 0..<10 {
      client.send([.enqueue(MQTTMessage(topic: "mixed/\(i)", text: "batch", qos: .atLeastOnce))])
      try await Task.sleep(for: .milliseconds(2))
      let start = ContinuousClock.now
      try await client.publish(MQTTMessage(topic: "mixed/\(i)", text: "awaited", qos: .atLeastOnce))
      took.append(ContinuousClock.now - start)
    }
    // Left to the end of the publishers' read window, each awaited one took up to the window
    // (50 ms by default, 2 s here). The median, so that one delayed by a busy machine does not
    // decide.
    #expect(took.sorted()[5] < .milliseconds(500), "10 awaited publications took \(took)")
    await client.shutdown()
  }

  @Test(
    "batches larger than the in-flight window keep flowing: the loop thread reads the acknowledgements they wait for, not only the publisher before its next batch"
  )
  func largeBatchesNeedTheLoop() async throws {
    let broker = try Broker()
    try await broker.start()
    var settings = configuration(broker)
    settings.maxInflight = 20
    let client = try await connectedClient(settings)
    // 100 batches of 40 QoS 1 publications, 10 ms apart: 20 in flight, the rest of each batch
    // waiting for room.
    for batch in 0..<100 {
      client.send(
        (0..<40).map { i in
          .enqueue(MQTTMessage(topic: "window/\(batch)", text: "\(i)", qos: .atLeastOnce))
        })
      try await Task.sleep(for: .milliseconds(10))
    }
    // Left to the publisher's reads, one window's worth (20) went out per batch: half.
    let published = client.statistics.published
    #expect(published >= 3200, "\(published) of 4,000 acknowledged when the last batch was sent")
    #expect(await eventually(timeout: 10) { client.statistics.published == 4000 })
    #expect(client.statistics.dropped == 0)
    await client.shutdown()
  }

  /// The segments a TCP socket has sent (`tcpi_segs_out` of Linux's `struct tcp_info`, which
  /// glibc's older copy of the struct lacks: read at its offset in the kernel's).
  static func segmentsSent(_ fd: Int32) -> UInt32? {
    var buffer = [UInt8](repeating: 0, count: 256)
    var length = socklen_t(buffer.count)
    guard getsockopt(fd, Int32(IPPROTO_TCP), TCP_INFO, &buffer, &length) == 0, length >= 144
    else { return nil }
    return buffer[136..<140].enumerated().reduce(0) { $0 | UInt32($1.element) << (8 * $1.offset) }
  }
}
