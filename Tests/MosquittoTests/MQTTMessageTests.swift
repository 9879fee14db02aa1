import Mosquitto
import Testing

@Suite("MQTT messages: properties kept behind one reference compare and hash by value")
struct MQTTMessageTests {
  @Test("equal properties in separately built messages are equal and hash alike")
  func equalProperties() {
    let properties = MQTTPublishProperties(
      messageExpiryInterval: 30, responseTopic: "a/b", correlationData: [1, 2],
      userProperties: [MQTTUserProperty("k", "v")], contentType: "text/plain")
    let one = MQTTMessage(topic: "t", payload: [1], qos: .atLeastOnce, properties: properties)
    let two = MQTTMessage(
      topic: "t", payload: [1], qos: .atLeastOnce,
      properties: MQTTPublishProperties(
        messageExpiryInterval: 30, responseTopic: "a/b", correlationData: [1, 2],
        userProperties: [MQTTUserProperty("k", "v")], contentType: "text/plain"))
    #expect(one == two)
    #expect(one.hashValue == two.hashValue)
    #expect(one.properties == properties)
    var other = two
    other.properties.responseTopic = "a/c"
    #expect(other != one)
    #expect(other.properties.responseTopic == "a/c")
    #expect(two.properties.responseTopic == "a/b")
  }

  @Test("a message without properties equals one whose properties were set and emptied")
  func emptyProperties() {
    let plain = MQTTMessage(topic: "t", payload: [])
    #expect(plain.properties.isEmpty)
    var emptied = MQTTMessage(
      topic: "t", payload: [], properties: MQTTPublishProperties(contentType: "x"))
    #expect(emptied != plain)
    emptied.properties.contentType = nil
    #expect(emptied.properties.isEmpty)
    #expect(emptied == plain)
    #expect(emptied.hashValue == plain.hashValue)
  }
}
