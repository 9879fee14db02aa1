import BridgeCore
import Synchronization

/// Hands a request from the page to the gateway as if it had come over MQTT, and waits for the
/// gateway's answer on the topic an MQTT client would read it from.
///
/// The page posts `{"topic":"<a request topic>","payload":…}`: any topic the gateway
/// subscribes to for requests (`bridge/<gw>/request/<verb>`, `<dev>/connection/set`,
/// `<dev>/gatt/<svc>/<chr>/get|set|notify`, `bridge/<gw>/peripheral/text/set`). A JSON object
/// payload gets a `"transaction"` of the web's own (unless it has one) so that its answer is
/// recognised; `/notify` takes the text `on` or `off`, and its answer is the next `notify`
/// result; a text for the peripheral role has no answer.
final class WebRequests: Sendable {
  /// Why a page's request is refused before it reaches the gateway.
  struct Refusal: Error, Sendable {
    let code: String
    let message: String
  }

  let backend: any WebBackend
  let hub: WebHub
  private let counter = Atomic<Int>(0)

  init(backend: any WebBackend, hub: WebHub) {
    self.backend = backend
    self.hub = hub
  }

  /// Serves one request: the gateway's answer as `{"topic":…,"payload":…}`, or an error.
  ///
  /// - Parameters:
  ///   - body: The page's request body.
  ///   - timeout: How long to wait for the answer.
  /// - Returns: The answer's JSON, or `nil` payload when the request has none.
  /// - Throws: ``Refusal`` for a body that is not such an object, a topic that is not one of
  ///   the gateway's request topics, or no answer within `timeout`.
  func serve(_ body: [UInt8], timeout: Duration) async throws(Refusal) -> JSONValue {
    guard let request = try? JSONValue.parse(body), let topicText = request["topic"]?.stringValue
    else {
      throw Refusal(
        code: "invalid_payload",
        message: #"expected a JSON object {"topic":"<request topic>","payload":…}"#)
    }
    guard let topic = try? TopicName(topicText), let kind = backend.topics.parseRequest(topic)
    else {
      throw Refusal(
        code: "unknown_request", message: "'\(topicText)' is not a request topic of this gateway")
    }
    let transaction = "web-\(counter.add(1, ordering: .relaxed).newValue)"
    var payload: [UInt8]
    switch request["payload"] {
    case .object(var object)?:
      if object["transaction"] == nil { object["transaction"] = .string(transaction) }
      payload = JSONValue.object(object).serializedBytes()
    case .string(let text)?: payload = Array(text.utf8)
    case nil, .null?: payload = []
    case let value?: payload = value.serializedBytes()
    }
    let expected = Self.answerTopic(kind, topics: backend.topics)
    guard let expected else {
      backend.webInject(topic: topic, payload: payload)
      return ["topic": .string(topicText), "payload": .null]
    }
    let sent = (try? JSONValue.parse(payload))?["transaction"]
    let isNotify: Bool = if case .notify = kind { true } else { false }
    let waiter = hub.expect(topic: expected.rawValue) { answer in
      isNotify ? answer["op"]?.stringValue == "notify" : answer["transaction"] == sent
    }
    backend.webInject(topic: topic, payload: payload)
    let answer = await waiter.answer.first(within: timeout)
    hub.cancel(waiter.id)
    guard let answer else {
      throw Refusal(
        code: "timeout", message: "no answer on \(expected.rawValue) within \(timeout)")
    }
    return [
      "topic": .string(answer.topic),
      "payload": (try? JSONValue.parse(answer.payload))
        ?? .string(String(decoding: answer.payload, as: UTF8.self)),
    ]
  }

  /// Where the gateway answers a request; `nil` for a peripheral text.
  static func answerTopic(_ kind: Topics.Request, topics: Topics) -> TopicName? {
    switch kind {
    case .bridge(let verb), .fleet(let verb): topics.bridgeResponse(answering: verb)
    case .connectionSet(let device): topics.connectionResult(device)
    case .get(let path), .set(let path), .notify(let path): topics.result(path)
    case .peripheralText, .fleetPeripheralText: nil
    }
  }
}
