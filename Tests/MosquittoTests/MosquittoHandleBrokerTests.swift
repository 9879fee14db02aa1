import Foundation
import Glibc
import TestSupport
import Testing

@testable import Mosquitto

/// A ``MosquittoHandle`` driven by hand against a real broker: what one call of libmosquitto
/// does, without the loop thread's timing in the way.
@Suite(
  "MosquittoHandle against a real broker: one read takes what waits; the send window is maxInflight",
  .serialized,
  .enabled(if: Broker.isAvailable, "mosquitto is not installed (apt-get install mosquitto)"))
struct MosquittoHandleBrokerTests {
  /// A handle connected to `broker`, its CONNACK read (no ``ClientCore``: its callbacks find
  /// no client and record nothing).
  func connectedHandle(_ broker: Broker, maxInflight: Int) throws -> MosquittoHandle {
    var settings = configuration(broker)
    settings.maxInflight = maxInflight
    let handle = try MosquittoHandle(configuration: settings)
    guard case .started = handle.connect() else { throw TestFailure("connect did not start") }
    try flush(handle)
    try waitForInput(handle, seconds: 5)
    if let failure = handle.read() { throw TestFailure("reading the CONNACK: \(failure)") }
    return handle
  }

  /// Writes what libmosquitto holds until nothing is left.
  func flush(_ handle: MosquittoHandle) throws {
    for _ in 0..<1000 where handle.wantsWrite {
      if let failure = handle.write() { throw TestFailure("write: \(failure)") }
    }
    if handle.wantsWrite { throw TestFailure("libmosquitto still has bytes to write") }
  }

  func waitForInput(_ handle: MosquittoHandle, seconds: Double) throws {
    var fd = pollfd(fd: handle.socket, events: Int16(POLLIN), revents: 0)
    guard poll(&fd, 1, Int32(seconds * 1000)) == 1 else {
      throw TestFailure("nothing from the broker within \(seconds) s")
    }
  }

  /// Publishes `count` QoS 1 messages below `prefix` and writes them out.
  func publish(_ count: Int, to prefix: String, on handle: MosquittoHandle) throws {
    for i in 0..<count {
      let result = handle.publish(
        MQTTMessage(topic: "\(prefix)/\(i)", text: "\(i)", qos: .atLeastOnce))
      guard case .sent = result else { throw TestFailure("publish \(i): \(result)") }
    }
    try flush(handle)
  }

  @Test(
    "one read takes every acknowledgement that waits (libmosquitto reads up to one packet per message it holds), whatever errno said before"
  )
  func oneReadTakesAll() async throws {
    let broker = try Broker()
    try await broker.start()
    let handle = try connectedHandle(broker, maxInflight: 100)
    try publish(50, to: "acks", on: handle)
    // The broker's 50 PUBACKs reach the socket; nothing reads them meanwhile.
    try waitForInput(handle, seconds: 5)
    try await Task.sleep(for: .milliseconds(500))
    #expect(handle.inputWaiting)
    // What the loop thread's previous read (or its wake-up pipe) leaves in errno: its read
    // loop stops at EAGAIN (each of its socket reads clears errno first).
    errno = EAGAIN
    #expect(handle.read() == nil)
    #expect(!handle.inputWaiting, "acknowledgements left unread after one read")
    handle.disconnect()
  }

  @Test(
    "libmosquitto sends as many unacknowledged QoS 1 messages as maxInflight (its own default is 20)"
  )
  func sendWindowIsMaxInflight() async throws {
    let broker = try Broker()
    try await broker.start()
    let observer = try await connectedClient(configuration(broker))
    let seen = Collector(observer)
    try await observer.subscribe("window/#", qos: .atMostOnce)
    for (maxInflight, published) in [(60, 60), (10, 30)] {
      let handle = try connectedHandle(broker, maxInflight: maxInflight)
      let before = seen.messages.count
      // Never read: no acknowledgement frees the window, so what reaches the broker is what
      // libmosquitto sent at once.
      try publish(published, to: "window/\(maxInflight)", on: handle)
      let expected = min(published, maxInflight)
      #expect(await eventually(timeout: 10) { seen.messages.count - before >= expected })
      try await Task.sleep(for: .milliseconds(500))
      #expect(seen.messages.count - before == expected, "maxInflight \(maxInflight)")
      handle.disconnect()
    }
    await observer.shutdown()
  }
}
