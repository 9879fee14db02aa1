import BridgeCore
import Synchronization
import Testing

/// What a sink received.
private final class SinkLog: Sendable {
  let batches = Mutex<[[Int]]>([])
  let finished = Mutex(0)

  var sink: EventSink<Int> {
    EventSink(
      receive: { batch in self.batches.withLock { $0.append(batch) } },
      finish: { self.finished.withLock { $0 += 1 } })
  }
}

@Suite(
  "Event hub: sinks get each batch in one call on the producer's thread; streams event by event")
struct EventHubTests {
  @Test("a batch reaches a sink in one call, before yield returns, in order")
  func sinkBatches() {
    let hub = EventHub<Int>(bufferSize: 4)
    let log = SinkLog()
    let subscription = hub.attach(log.sink)
    hub.yield(contentsOf: [1, 2, 3])
    hub.yield(4)
    hub.yield(contentsOf: [])
    #expect(log.batches.withLock { $0 } == [[1, 2, 3], [4]])
    subscription.cancel()
    hub.yield(5)
    #expect(log.batches.withLock { $0 } == [[1, 2, 3], [4]])
    #expect(log.finished.withLock { $0 } == 0)
  }

  @Test("detaching one sink leaves the others attached; each gets every batch once")
  func detachOne() {
    let hub = EventHub<Int>(bufferSize: 4)
    let first = SinkLog()
    let second = SinkLog()
    let third = SinkLog()
    let one = hub.attach(first.sink)
    let two = hub.attach(second.sink)
    _ = hub.attach(third.sink)
    hub.yield(contentsOf: [1, 2])
    two.cancel()
    hub.yield(3)
    one.cancel()
    one.cancel()
    hub.yield(4)
    #expect(first.batches.withLock { $0 } == [[1, 2], [3]])
    #expect(second.batches.withLock { $0 } == [[1, 2]])
    #expect(third.batches.withLock { $0 } == [[1, 2], [3], [4]])
    hub.finish()
    #expect(third.finished.withLock { $0 } == 1)
    #expect(first.finished.withLock { $0 } == 0)
  }

  @Test("finish ends sinks once; a sink attached after the end is finished at once")
  func finish() {
    let hub = EventHub<Int>(bufferSize: 4)
    let early = SinkLog()
    _ = hub.attach(early.sink)
    hub.finish()
    hub.yield(1)
    #expect(early.finished.withLock { $0 } == 1)
    #expect(early.batches.withLock { $0 }.isEmpty)
    let late = SinkLog()
    _ = hub.attach(late.sink)
    #expect(late.finished.withLock { $0 } == 1)
  }

  @Test("a stream subscriber keeps the newest events of a batch and counts the dropped")
  func streamsDropOldest() async {
    let hub = EventHub<Int>(bufferSize: 2)
    let stream = hub.subscribe()
    hub.yield(contentsOf: [1, 2, 3, 4])
    hub.finish()
    var received: [Int] = []
    for await value in stream { received.append(value) }
    #expect(received == [3, 4])
    #expect(hub.dropped == 2)
  }
}
