import BridgeCore
import Testing

@Suite("ReplyTopicPolicy: MQTT 5 Response Topics honoured only in the requester's response space")
struct ReplyTopicPolicyTests {
  let policy = ReplyTopicPolicy(prefix: "gatt2mqtt")

  @Test(
    "honoured",
    arguments: [
      "gatt2mqtt/clients/me/response", "gatt2mqtt/response", "gatt2mqtt/app/response/42",
      "gatt2mqtt/bridge/gw1/response/health_check",
    ])
  func honoured(topic: String) {
    #expect(policy.refusal(topic) == nil)
  }

  @Test(
    "refused, with the reason",
    arguments: [
      ("homeassistant/switch/door/set", "not under gatt2mqtt/"),
      ("gatt2mqtt2/x/response", "not under gatt2mqtt/"),
      ("gatt2mqtt", "not under gatt2mqtt/"),
      ("gatt2mqtt/bridge/other/request/scan", "'request' level"),
      ("gatt2mqtt/bridge/other/request/response", "'request' level"),
      ("gatt2mqtt/bridge/gw1/state", "no 'response' level"),
      ("gatt2mqtt/bridge/gw1/peripheral/text/set", "'set' level"),
      ("gatt2mqtt/dev/gatt/180d/2a37/set/response", "'set' level"),
      ("gatt2mqtt/dev/gatt/180d/2a37/get", "'get' level"),
      ("gatt2mqtt/dev/gatt/180d/2a37/notify/response", "'notify' level"),
      ("gatt2mqtt/+/response", "not a valid topic name"),
      ("gatt2mqtt/#", "not a valid topic name"),
      ("", "not a valid topic name"),
    ])
  func refused(topic: String, reason: String) {
    let refusal = policy.refusal(topic)
    #expect(refusal?.contains(reason) == true, "\(topic): \(refusal ?? "honoured")")
  }

  @Test("longer than 512 bytes is refused")
  func tooLong() {
    let topic = "gatt2mqtt/response/" + String(repeating: "x", count: 494)
    #expect(topic.utf8.count == 513)
    #expect(policy.refusal(topic)?.contains("512 bytes") == true)
    #expect(policy.refusal(String(topic.dropLast())) == nil)
  }

  @Test("a prefix of several levels")
  func deeperPrefix() {
    let policy = ReplyTopicPolicy(prefix: "site/a/replies")
    #expect(policy.refusal("site/a/replies/me/response") == nil)
    #expect(policy.refusal("site/a/me/response") != nil)
  }
}

@Suite("BridgeRequest: the transaction echoed is bounded")
struct BridgeRequestTransactionTests {
  @Test("a transaction up to 256 bytes of JSON is echoed; a longer one is refused")
  func transactionBound() throws {
    let fits = "\"" + String(repeating: "t", count: 254) + "\""
    let request = try BridgeRequest(
      verb: "health_check", payload: Array(#"{"transaction":\#(fits)}"#.utf8))
    #expect(request.transaction?.stringValue?.utf8.count == 254)
    let long = "\"" + String(repeating: "t", count: 255) + "\""
    #expect {
      try BridgeRequest(verb: "health_check", payload: Array(#"{"transaction":\#(long)}"#.utf8))
    } throws: { error in
      let response = error as? BridgeResponse
      return response?.errorCode == "invalid_payload" && response?.transaction == nil
        && response?.message?.contains("257 bytes") == true
    }
  }
}
