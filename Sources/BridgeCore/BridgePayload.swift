/// Payloads of the gateway ("bridge") plane of TOPICS.md.
public enum BridgePayload {
  // `<base>/bridge/<gw>/state`: ``GatewayInstance/statePayload(online:)``.

  /// A `<base>/bridge/<gw>/event` payload: `{"type":…,"data":{…}}`.
  public static func event(type: String, data: JSONObject = JSONObject()) -> [UInt8] {
    let value: JSONValue = ["type": .string(type), "data": .object(data)]
    return value.serializedBytes()
  }
}
