/// A read request received on `<base>/<dev>/gatt/<svc>/<chr>/get`.
public struct ReadRequest: Sendable, Hashable {
  /// Why a `/get` payload is not a read request.
  public typealias Error = PayloadError

  /// The `"transaction"` to echo in the result, if the request had one.
  public var transaction: JSONValue?

  /// Makes a read request.
  ///
  /// - Parameter transaction: The transaction to echo.
  public init(transaction: JSONValue? = nil) {
    self.transaction = transaction
  }

  /// Parses a `/get` payload: empty (or whitespace), or a JSON object with at most a
  /// `"transaction"` (any scalar).
  ///
  /// - Parameter payload: The payload bytes.
  /// - Throws: ``PayloadError`` naming the problem.
  public init(parsing payload: [UInt8]) throws(PayloadError) {
    if UTF8Rules.trimmedRange(payload).isEmpty {
      self.init()
      return
    }
    let object = try ValueFormat.parseObject(payload)
    try PayloadFields.refuseUnknownKeys(object, allowed: ["transaction"])
    self.init(transaction: try PayloadFields.transaction(in: object))
  }
}
