import BridgeCore
import Hummingbird
import Testing

@testable import Web

@Suite("Web hub")
struct WebHubTests {
  @Test("retained topics are kept and cleared by an empty payload; bridge events are kept, capped")
  func retainedAndRecent() {
    let hub = WebHub()
    hub.record(
      topic: "g/bridge/pi/state", payload: Array(#"{"state":"online"}"#.utf8), retain: true)
    hub.record(topic: "g/DEV/presence", payload: Array("x".utf8), retain: true)
    hub.record(topic: "g/DEV/presence", payload: [], retain: true)
    hub.record(topic: "g/DEV/advertisement", payload: Array("{}".utf8), retain: false)
    for index in 0..<(WebHub.recentCapacity + 5) {
      hub.record(topic: "g/bridge/pi/event", payload: Array("{\"n\":\(index)}".utf8), retain: false)
    }
    let (retained, recent) = hub.snapshot()
    #expect(retained.map(\.topic) == ["g/bridge/pi/state"])
    #expect(recent.count == WebHub.recentCapacity)
    #expect(recent.first?.payload == Array("{\"n\":5}".utf8))
    #expect(hub.retained("g/DEV/presence") == nil)
  }

  @Test("a stream gets every publication in order; finish ends it, and later ones at once")
  func streams() async {
    let hub = WebHub()
    guard let (id, messages) = hub.open() else {
      Issue.record("no stream")
      return
    }
    hub.record(topic: "a", payload: [1], retain: false)
    hub.record(topic: "b", payload: [2], retain: true)
    hub.finish()
    var topics: [String] = []
    for await message in messages { topics.append(message.topic) }
    #expect(topics == ["a", "b"])
    hub.close(id)
    guard let (_, late) = hub.open() else {
      Issue.record("no stream after finish")
      return
    }
    var count = 0
    for await _ in late { count += 1 }
    #expect(count == 0)
  }

  @Test("a reader that falls behind is ended, the others go on")
  func slowReader() async {
    let hub = WebHub()
    guard let (_, slow) = hub.open() else {
      Issue.record("no stream")
      return
    }
    for index in 0...WebHub.streamCapacity {
      hub.record(topic: "t", payload: [UInt8(truncatingIfNeeded: index)], retain: false)
    }
    #expect(hub.streamCounts.open == 0)
    #expect(hub.streamCounts.endedSlow == 1)
    var received = 0
    for await _ in slow { received += 1 }
    #expect(received == WebHub.streamCapacity)
  }

  @Test("at most maxStreams streams; finish ends the waits for answers too")
  func limitsAndFinish() async {
    let hub = WebHub()
    let streams = (0..<WebHub.maxStreams).compactMap { _ in hub.open() }
    #expect(streams.count == WebHub.maxStreams)
    #expect(hub.open() == nil)
    hub.close(streams[0].id)
    #expect(hub.open() != nil)
    let waiter = hub.expect(topic: "r") { _ in true }
    hub.finish()
    #expect(await waiter.answer.first(within: .seconds(5)) == nil)
    let late = hub.expect(topic: "r") { _ in true }
    #expect(await late.answer.first(within: .seconds(5)) == nil)
  }

  @Test("an answer is recognised by its transaction; others on the topic are not")
  func answers() async {
    let hub = WebHub()
    let waiter = hub.expect(topic: "r") { $0["transaction"] == "web-1" }
    hub.record(topic: "r", payload: Array(#"{"transaction":"other"}"#.utf8), retain: false)
    hub.record(topic: "elsewhere", payload: Array(#"{"transaction":"web-1"}"#.utf8), retain: false)
    hub.record(
      topic: "r", payload: Array(#"{"status":"ok","transaction":"web-1"}"#.utf8), retain: false)
    let answer = await waiter.answer.first(within: .seconds(2))
    #expect(answer?.payload == Array(#"{"status":"ok","transaction":"web-1"}"#.utf8))
    let none = hub.expect(topic: "r") { _ in false }
    #expect(await none.answer.first(within: .milliseconds(50)) == nil)
    hub.cancel(none.id)
  }
}

@Suite("Web requests and payloads")
struct WebRequestTests {
  static let topics = try! Topics(base: "g", gateway: GatewayID("pi"))

  @Test("each request topic's answer topic")
  func answerTopics() throws {
    func answer(_ topic: String) throws -> String? {
      let request = try #require(Self.topics.parseRequest(try TopicName(topic)))
      return WebRequests.answerTopic(request, topics: Self.topics)?.rawValue
    }
    #expect(try answer("g/bridge/pi/request/health_check") == "g/bridge/pi/response/health_check")
    #expect(try answer("g/bridge/request/devices") == "g/bridge/pi/response/devices")
    #expect(try answer("g/A4C1381E29DF/connection/set") == "g/A4C1381E29DF/connection/result")
    #expect(
      try answer("g/A4C1381E29DF/gatt/180f/2a19/get") == "g/A4C1381E29DF/gatt/180f/2a19/result")
    #expect(
      try answer("g/A4C1381E29DF/gatt/180f/2a19/notify") == "g/A4C1381E29DF/gatt/180f/2a19/result")
    #expect(try answer("g/bridge/pi/peripheral/text/set") == nil)
  }

  @Test("tokens compare whole, whatever their lengths")
  func tokens() {
    typealias Token = TokenMiddleware<BasicRequestContext>
    #expect(Token.same("s3cret", "s3cret"))
    #expect(!Token.same("s3cret", "s3cre"))
    #expect(!Token.same("s3cre", "s3cret"))
    #expect(!Token.same("s3cret", "s3crex"))
    #expect(!Token.same("", "x") && Token.same("", ""))
  }

  @Test("payloads: JSON as JSON, UTF-8 as text, anything else as hex")
  func payloads() {
    #expect(WebServer.payloadJSON(Array(#"{"a":1}"#.utf8)) == ["a": 1])
    #expect(WebServer.payloadJSON(Array("0a1b".utf8)) == .string("0a1b"))
    #expect(WebServer.payloadJSON([0xFF, 0x01]) == ["hex": "ff01"])
    #expect(WebServer.payloadJSON([]) == .string(""))
  }
}

@Suite("Gateway metrics")
struct GatewayMetricsTests {
  private func health(published: Int, adverts: Int) -> JSONValue {
    [
      "healthy": true, "uptime": 12.5, "rss_bytes": 1000,
      "mqtt": ["published": .integer(Int64(published)), "received": 2, "queued": 3],
      "discovery": ["adverts_received": .integer(Int64(adverts)), "devices": 4],
      "connections": ["connections": 1, "gatt_operations": 5],
    ]
  }

  private func samples(_ text: [UInt8]) -> [String: String] {
    var values: [String: String] = [:]
    for line in String(decoding: text, as: UTF8.self).split(separator: "\n")
    where !line.hasPrefix("#") {
      guard let space = line.lastIndex(of: " ") else { continue }
      values[String(line[..<space])] = String(line[line.index(after: space)...])
    }
    return values
  }

  @Test("counters grow by what the health figures grew; gauges take their value")
  func counters() {
    let metrics = GatewayMetrics()
    _ = metrics.render(health: health(published: 10, adverts: 100), devices: nil)
    let second = samples(metrics.render(health: health(published: 25, adverts: 160), devices: nil))
    #expect(second["gatt2mqtt_mqtt_messages_published_total"] == "25")
    #expect(second["gatt2mqtt_advertisements_received_total"] == "160")
    #expect(second["gatt2mqtt_mqtt_messages_queued"] == "3.0")
    #expect(second["gatt2mqtt_devices"] == "4.0")
    #expect(second["gatt2mqtt_healthy"] == "1.0")
    // A figure that goes back (a restart of its source) does not make a counter go back.
    let third = samples(metrics.render(health: health(published: 5, adverts: 160), devices: nil))
    #expect(third["gatt2mqtt_mqtt_messages_published_total"] == "25")
  }

  @Test("devices by connection state; GATT operations in a latency histogram")
  func statesAndHistogram() {
    let metrics = GatewayMetrics()
    metrics.recordOperation("read", ok: true, seconds: 0.02)
    metrics.recordOperation("write", ok: false, seconds: 0.5)
    metrics.recordDBusCall("Connect", ok: true, seconds: 0.3)
    let devices: JSONValue = [
      ["connection": "ready"], ["connection": "ready"], ["connection": "disconnected"],
    ]
    let values = samples(metrics.render(health: health(published: 1, adverts: 1), devices: devices))
    #expect(values[#"gatt2mqtt_devices_by_connection_state{state="ready"}"#] == "2.0")
    #expect(values[#"gatt2mqtt_devices_by_connection_state{state="failed"}"#] == "0.0")
    #expect(
      values.keys.contains {
        $0.hasPrefix("gatt2mqtt_gatt_operation_duration_seconds_count")
          && $0.contains(#"op="read""#)
          && $0.contains(#"result="ok""#)
      })
    #expect(
      values.keys.contains {
        $0.hasPrefix("gatt2mqtt_gatt_operation_duration_seconds_count")
          && $0.contains(#"result="error""#)
      })
  }
}
