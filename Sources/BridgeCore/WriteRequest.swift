/// A write request received on `<base>/<dev>/gatt/<svc>/<chr>/set`.
public struct WriteRequest: Sendable, Hashable {
  /// Why a `/set` payload is not a write request.
  public typealias Error = PayloadError

  /// The bytes to write.
  public var value: [UInt8]
  /// `true` for a write with response, `false` for write without response, `nil` to choose by
  /// the characteristic's flags.
  public var withResponse: Bool?
  /// The `"transaction"` to echo in the result, if the request had one.
  public var transaction: JSONValue?

  /// Makes a write request.
  ///
  /// - Parameters:
  ///   - value: The bytes to write.
  ///   - withResponse: The write type, `nil` to choose by the characteristic's flags.
  ///   - transaction: The transaction to echo.
  public init(value: [UInt8], withResponse: Bool? = nil, transaction: JSONValue? = nil) {
    self.value = value
    self.withResponse = withResponse
    self.transaction = transaction
  }

  /// Parses a `/set` payload.
  ///
  /// A payload whose first non-whitespace byte is `{` is the JSON form: an object with exactly
  /// one of `"hex"`, `"base64"`, `"utf8"` (a string), optionally `"response"` (a boolean) and
  /// `"transaction"` (any scalar), and tolerating `"ts"` and `"gw"` of the `json` value format;
  /// other keys are refused. Any other payload is the bare value, decoded with `format`
  /// (see ``ValueFormat/decode(_:)``). So a `utf8` or `raw` value starting with `{` must be sent
  /// in the JSON form, and malformed JSON is reported instead of being written as text.
  ///
  /// - Parameters:
  ///   - payload: The payload bytes.
  ///   - format: The characteristic's value format, for bare values.
  /// - Throws: ``PayloadError`` naming the problem.
  public init(parsing payload: [UInt8], format: ValueFormat) throws(PayloadError) {
    guard PayloadFields.looksLikeJSONObject(payload) else {
      self.init(value: try format.decode(payload))
      return
    }
    let object = try ValueFormat.parseObject(payload)
    try PayloadFields.refuseUnknownKeys(object, allowed: Self.allowedKeys)
    self.init(
      value: try ValueFormat.value(in: object),
      withResponse: try PayloadFields.bool("response", in: object),
      transaction: try PayloadFields.transaction(in: object))
  }

  private static let allowedKeys: Set<String> = [
    "hex", "base64", "utf8", "response", "transaction", "ts", "gw",
  ]
}
