import BridgeCore
import Foundation
import Testing

@Suite("Peripheral bridge")
struct PeripheralBridgeTests {
  let central = Fixture.address("11:22:33:44:55:66")
  let other = Fixture.address("11:22:33:44:55:77")

  func advertising(maxTextBytes: Int = 1 << 20) -> PeripheralBridge {
    var bridge = PeripheralBridge(
      topics: Fixture.topics, service: PeripheralService(), maxTextBytes: maxTextBytes)
    _ = bridge.handle(.stateChanged(.advertising), now: 0)
    return bridge
  }

  /// Sends everything the bridge hands out, confirming each; returns the notifications and
  /// the event types.
  func drain(_ bridge: inout PeripheralBridge, limit: Int = 100_000) -> ([[UInt8]], [String]) {
    var sent: [[UInt8]] = []
    var events: [String] = []
    while sent.count < limit, let next = bridge.nextNotification() {
      sent.append(next)
      events += bridge.notificationSent(now: 0).compactMap(\.eventType)
    }
    return (sent, events)
  }

  @Test(
    "an anonymous subscriber counts at the default MTU unless a central that is not a named subscriber told its MTU"
  )
  func anonymousSubscribersLimitTheChunks() throws {
    let other = try BluetoothAddress("66:55:44:33:22:11")
    var bridge = advertising()
    _ = bridge.handle(.subscribed(central: central, mtu: 247), now: 0)
    #expect(bridge.mtu == 247)
    // The socket was let go of; a second central subscribed through StartNotify.
    _ = bridge.handle(.subscribed(central: nil, mtu: nil), now: 0)
    #expect(bridge.mtu == 23)
    // The second central read the characteristic, which told its MTU.
    _ = bridge.handle(.mtu(central: other, mtu: 100), now: 0)
    #expect(bridge.mtu == 100)
    _ = bridge.handle(.mtu(central: other, mtu: 517), now: 0)
    #expect(bridge.mtu == 247)
  }

  @Test(
    "a named subscriber without an MTU counts at the default unless its read told one; an MTU is forgotten when its central unsubscribes"
  )
  func namedSubscriberWithoutMTU() throws {
    let other = try BluetoothAddress("66:55:44:33:22:11")
    var bridge = advertising()
    _ = bridge.handle(.subscribed(central: central, mtu: 247), now: 0)
    // A device counted as a subscriber of a shared socket: the stack told no MTU.
    _ = bridge.handle(.subscribed(central: other, mtu: nil), now: 0)
    #expect(bridge.mtu == 23)
    _ = bridge.handle(.mtu(central: other, mtu: 185), now: 0)
    #expect(bridge.mtu == 185)
    _ = bridge.handle(.unsubscribed(central: other), now: 0)
    #expect(bridge.mtu == 247)
    // The socket's central leaves while an anonymous subscriber stays: its 247 must not
    // stand for the anonymous one's.
    _ = bridge.handle(.subscribed(central: nil, mtu: nil), now: 0)
    _ = bridge.handle(.unsubscribed(central: central), now: 0)
    #expect(bridge.mtu == 23)
  }

  @Test("the sent event says which path the transfer took: socket, signals, or both")
  func sentEventNamesThePath() throws {
    let cases: [([NotificationPath], String)] = [
      ([.flowControlled], "socket"), ([.unpaced], "signals"),
      ([.flowControlled, .unpaced], "socket+signals"),
    ]
    for (paths, name) in cases {
      var bridge = advertising()
      _ = bridge.setText(Array(String(repeating: "0123456789", count: 5).utf8), now: 0)
      _ = bridge.handle(.subscribed(central: central, mtu: 23), now: 0)
      var outputs: [PeripheralBridge.Output] = []
      var index = 0
      while bridge.nextNotification() != nil {
        outputs += bridge.notificationSent(path: paths[min(index, paths.count - 1)], now: 0)
        index += 1
      }
      #expect(index == 4)
      let sent = try #require(outputs.first { $0.eventType == "sent" })
      guard case .publish(_, let payload, _) = sent else {
        Issue.record("not a publish: \(sent)")
        continue
      }
      #expect(try JSONValue.parse(payload)["path"]?.stringValue == name)
      #expect(bridge.transfersSent == 1 && bridge.bytesSent == 50)
    }
  }

  @Test("a central's write is published as hex, with the text when it is UTF-8")
  func writtenEvent() throws {
    var bridge = advertising()
    for (value, text) in [(Array("grüße".utf8), "grüße"), ([0xFF, 0x00], nil)] {
      let outputs = bridge.handle(.written(central: central, value: value), now: 0)
      guard case .publish(let topic, let payload, _) = try #require(outputs.first) else {
        Issue.record("not a publish: \(outputs)")
        continue
      }
      #expect(topic.rawValue.hasSuffix("/peripheral/event"))
      let json = try JSONValue.parse(payload)
      #expect(json["type"]?.stringValue == "written")
      #expect(json["hex"]?.stringValue == value.map { String(format: "%02x", $0) }.joined())
      #expect(json["text"]?.stringValue == text)
    }
  }

  @Test("a subscriber gets the current text in MTU − 3 chunks, then EOM; a `sent` event follows")
  func subscribeSends() {
    var bridge = advertising()
    let text = Array(String(repeating: "é", count: 30).utf8)  // 60 bytes
    _ = bridge.setText(text, now: 0)
    #expect(bridge.nextNotification() == nil)  // nobody subscribed
    let subscribed = bridge.handle(.subscribed(central: central, mtu: 23), now: 0)
    #expect(subscribed.compactMap(\.eventType) == ["subscribed"])
    let (sent, events) = drain(&bridge)
    #expect(sent.map(\.count) == [20, 20, 20, 3])
    #expect(Array(sent.dropLast().joined()) == text)
    #expect(sent.last == Array("EOM".utf8))
    #expect(events == ["sent"])
  }

  @Test("the chunk size follows the smallest known MTU")
  func smallestMTU() {
    var bridge = advertising()
    _ = bridge.setText(Array(repeating: 0x61, count: 1000), now: 0)
    _ = bridge.handle(.subscribed(central: central, mtu: 247), now: 0)
    #expect(bridge.nextNotification()?.count == 244)
    _ = bridge.notificationSent(now: 0)
    _ = drain(&bridge)
    _ = bridge.handle(.subscribed(central: other, mtu: 185), now: 0)
    #expect(bridge.nextNotification()?.count == 182)
  }

  @Test("a text arriving mid-transfer starts afresh after the current one, never mixed")
  func replacementMidTransfer() {
    var bridge = advertising()
    let first = Array(repeating: UInt8(ascii: "a"), count: 100)
    let second = Array(repeating: UInt8(ascii: "b"), count: 50)
    _ = bridge.setText(first, now: 0)
    _ = bridge.handle(.subscribed(central: central, mtu: 23), now: 0)
    var sent: [[UInt8]] = []
    for _ in 0..<2 {
      sent.append(bridge.nextNotification()!)
      _ = bridge.notificationSent(now: 0)
    }
    _ = bridge.setText(second, now: 0)
    let (rest, events) = drain(&bridge)
    sent += rest
    // Split into messages at EOM and check each is one whole text.
    var messages: [[UInt8]] = []
    var current: [UInt8] = []
    for value in sent {
      if value == Array("EOM".utf8) {
        messages.append(current)
        current = []
      } else {
        current += value
      }
    }
    #expect(messages == [first, second])
    #expect(events == ["sent", "sent"])
  }

  @Test("no second notification is handed out before the first is confirmed")
  func oneAtATime() {
    var bridge = advertising()
    _ = bridge.setText(Array(repeating: 0x61, count: 100), now: 0)
    _ = bridge.handle(.subscribed(central: nil, mtu: nil), now: 0)
    #expect(bridge.nextNotification() != nil)
    #expect(bridge.nextNotification() == nil)
    _ = bridge.notificationSent(now: 0)
    #expect(bridge.nextNotification() != nil)
  }

  @Test("the last subscriber leaving, or a failed send, aborts the transfer")
  func aborted() {
    var bridge = advertising()
    _ = bridge.setText(Array(repeating: 0x61, count: 100), now: 0)
    _ = bridge.handle(.subscribed(central: central, mtu: nil), now: 0)
    _ = bridge.nextNotification()
    let left = bridge.handle(.unsubscribed(central: central), now: 0)
    #expect(left.compactMap(\.eventType) == ["unsubscribed", "aborted"])
    _ = bridge.handle(.subscribed(central: central, mtu: nil), now: 0)
    _ = bridge.nextNotification()
    let failed = bridge.notificationFailed(CentralError(.bluezError, message: "gone"), now: 0)
    #expect(failed.compactMap(\.eventType) == ["aborted"])
    #expect(bridge.transfersAborted == 2)
  }

  @Test("texts over the limit or not UTF-8 are refused with an event and keep the old text")
  func refused() {
    var bridge = advertising(maxTextBytes: 10)
    _ = bridge.setText(Array("hello".utf8), now: 0)
    #expect(
      bridge.setText(Array(repeating: 0x61, count: 11), now: 0).compactMap(\.eventType) == [
        "text_refused"
      ])
    #expect(bridge.setText([0xFF, 0xFE], now: 0).compactMap(\.eventType) == ["text_refused"])
    #expect(bridge.text == Array("hello".utf8))
    #expect(
      bridge.setText(Array(repeating: 0x61, count: 10), now: 0).contains(
        .setReadValue(Array(repeating: 0x61, count: 10))))
  }

  @Test("the retained state names service, characteristic, subscribers and text size")
  func stateJSON() {
    var bridge = advertising()
    _ = bridge.setText(Array("hi".utf8), now: 0)
    _ = bridge.handle(.subscribed(central: central, mtu: 185), now: 0)
    let object = bridge.stateJSON.objectValue
    #expect(object?["state"] == "advertising")
    #expect(object?["service"] == "e20a39f4-73f5-4bc4-a12f-17d1ad07a961")
    #expect(object?["text_bytes"] == 2)
    #expect(object?["subscribers"] == [["address": "11:22:33:44:55:66", "mtu": 185]])
  }

  @Test(
    "the fleet's text is served until the gateway's own topic holds one; clearing it brings the fleet's back"
  )
  func fleetText() {
    var bridge = advertising()
    let fleet = Array("for every gateway".utf8)
    let own = Array("for this one".utf8)
    #expect(bridge.setText(fleet, source: .fleet, now: 0).contains(.setReadValue(fleet)))
    #expect(bridge.text == fleet)
    _ = bridge.setText(own, now: 0)
    #expect(bridge.text == own)
    // A new fleet text while the own topic holds one changes nothing.
    #expect(bridge.setText(Array("newer fleet text".utf8), source: .fleet, now: 0).isEmpty)
    #expect(bridge.text == own)
    // The own text cleared: the fleet's latest text is served.
    #expect(
      bridge.setText([], now: 0).contains(.setReadValue(Array("newer fleet text".utf8))))
    #expect(bridge.text == Array("newer fleet text".utf8))
    // Bad fleet input is refused like bad own input.
    #expect(
      bridge.setText([0xFF], source: .fleet, now: 0).compactMap(\.eventType) == ["text_refused"])
    #expect(bridge.text == Array("newer fleet text".utf8))
  }
}

extension PeripheralBridge.Output {
  var eventType: String? {
    guard case .publish(let topic, let payload, _) = self, topic.rawValue.hasSuffix("/event"),
      case .string(let type) = (try? JSONValue.parse(payload))?.objectValue?["type"]
    else { return nil }
    return type
  }
}
