/// The body of a device verb (`device/connect`, `device/disconnect`, `device/remove`,
/// `device/rename`, `device/rssi`): `{"device":"<dev>"|"AA:BB:…"}`, an optional `transaction`,
/// and the verb's own keys.
public enum DeviceRequestBody {
  /// The device the body names, resolved by `resolve`.
  ///
  /// - Parameters:
  ///   - body: The request's JSON object.
  ///   - keys: The verb's keys besides `device` and `transaction`.
  ///   - resolve: The device a text names (an address in any spelling, an id, a friendly name),
  ///     `nil` when the gateway knows none.
  /// - Returns: The device's address.
  /// - Throws: The response that refuses the body: `invalid_payload` for an unknown key or a
  ///   missing `device`, `unknown_device` (the text cut at 64 characters) when `resolve` finds
  ///   nothing.
  public static func address(
    in body: JSONObject, keys: Set<String> = [], resolve: (String) -> BluetoothAddress?
  ) throws(BridgeResponse) -> BluetoothAddress {
    for key in body.keys.sorted() where key != "device" && key != "transaction" {
      guard keys.contains(key) else {
        throw .failure(code: "invalid_payload", message: "unknown key '\(key)'", transaction: nil)
      }
    }
    guard case .string(let text) = body["device"] else {
      throw .failure(
        code: "invalid_payload", message: "\"device\" (a device id or an address) is required",
        transaction: nil)
    }
    guard let address = resolve(text) else {
      let quoted = text.count > 64 ? String(text.prefix(64)) + "…" : text
      throw .failure(
        code: "unknown_device", message: "'\(quoted)' is not a known device id or address",
        transaction: nil)
    }
    return address
  }
}
