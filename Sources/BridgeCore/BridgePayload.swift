/// Payloads of the gateway ("bridge") plane of TOPICS.md.
public enum BridgePayload {
  /// `{"state":"online"}` or `{"state":"offline"}` for `<base>/bridge/<gw>/state`.
  public static func state(online: Bool) -> [UInt8] {
    let value: JSONValue = ["state": .string(online ? "online" : "offline")]
    return value.serializedBytes()
  }

  /// A `<base>/bridge/<gw>/event` payload: `{"type":…,"data":{…}}`.
  public static func event(type: String, data: JSONObject = JSONObject()) -> [UInt8] {
    let value: JSONValue = ["type": .string(type), "data": .object(data)]
    return value.serializedBytes()
  }
}
