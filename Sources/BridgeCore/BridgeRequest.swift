/// A request received on `<base>/bridge/<gw>/request/<verb>`.
public struct BridgeRequest: Sendable, Hashable {
  /// The verb, e.g. `health_check` or `device/connect`.
  public var verb: String
  /// The request's JSON object (empty for an empty payload).
  public var body: JSONObject
  /// The caller's `"transaction"`, echoed in the response.
  public var transaction: JSONValue?

  /// Parses a request payload: empty, or a JSON object with an optional `"transaction"`.
  /// - Throws: ``BridgeResponse`` ready to publish when the payload is not a JSON object (the
  ///   caller answers with it as is).
  public init(verb: String, payload: [UInt8]) throws(BridgeResponse) {
    self.verb = verb
    let trimmed = payload.drop { $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }
    if trimmed.isEmpty {
      body = JSONObject()
      return
    }
    let value: JSONValue
    do {
      value = try JSONValue.parse(Array(trimmed))
    } catch {
      throw BridgeResponse.failure(
        code: "invalid_payload", message: "request is not valid JSON: \(error)", transaction: nil)
    }
    guard let object = value.objectValue else {
      throw BridgeResponse.failure(
        code: "invalid_payload", message: "request must be a JSON object, got \(value.typeName)",
        transaction: nil)
    }
    body = object
    if let given = object["transaction"] {
      let size = given.serializedBytes().count
      guard size <= Self.maximumTransactionBytes else {
        throw BridgeResponse.failure(
          code: "invalid_payload",
          message:
            "\"transaction\" is \(size) bytes of JSON; at most \(Self.maximumTransactionBytes) are echoed",
          transaction: nil)
      }
      transaction = given
    }
  }

  /// The largest `"transaction"` echoed, in bytes of JSON: a request cannot make an answer
  /// larger than this plus the answer itself.
  public static let maximumTransactionBytes = 256
}

/// The answer published on `<base>/bridge/<gw>/response/<verb>`.
public struct BridgeResponse: Error, Sendable, Hashable {
  /// `true` for `"status":"ok"`.
  public var ok: Bool
  /// `"data"`, when ok.
  public var data: JSONObject
  /// Stable error code (`invalid_payload`, `unknown_request`, `not_supported`, …).
  public var errorCode: String?
  /// Human explanation of the error.
  public var message: String?
  /// The request's transaction, echoed.
  public var transaction: JSONValue?

  /// A successful response.
  public static func success(_ data: JSONObject = JSONObject(), transaction: JSONValue?)
    -> BridgeResponse
  {
    BridgeResponse(ok: true, data: data, errorCode: nil, message: nil, transaction: transaction)
  }

  /// An error response.
  public static func failure(code: String, message: String, transaction: JSONValue?)
    -> BridgeResponse
  {
    BridgeResponse(
      ok: false, data: JSONObject(), errorCode: code, message: message, transaction: transaction)
  }

  /// The JSON payload: `{"status":…,"data":…,"error":…,"message":…,"transaction":…}`.
  public var json: JSONValue {
    var object: JSONObject = ["status": .string(ok ? "ok" : "error"), "data": .object(data)]
    if let errorCode { object["error"] = .string(errorCode) }
    if let message { object["message"] = .string(message) }
    if let transaction { object["transaction"] = transaction }
    return .object(object)
  }
}
