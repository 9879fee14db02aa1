/// A connection request received on `<base>/<dev>/connection/set`.
public struct ConnectionRequest: Sendable, Hashable {
  /// Why a `connection/set` payload is not a connection request.
  public typealias Error = PayloadError

  /// The connection state asked for.
  public enum State: String, Sendable, Hashable, CaseIterable {
    /// Connect and keep the connection.
    case connected
    /// Disconnect and stay disconnected.
    case disconnected
  }

  /// The connection state asked for.
  public var state: State
  /// The `"transaction"` to echo, if the request had one.
  public var transaction: JSONValue?

  /// Makes a connection request.
  ///
  /// - Parameters:
  ///   - state: The connection state asked for.
  ///   - transaction: The transaction to echo.
  public init(state: State, transaction: JSONValue? = nil) {
    self.state = state
    self.transaction = transaction
  }

  /// Parses `{"state":"connected"}` or `{"state":"disconnected"}`, optionally with a
  /// `"transaction"` (any scalar); other keys are refused.
  ///
  /// - Parameter payload: The payload bytes.
  /// - Throws: ``PayloadError`` naming the problem.
  public init(parsing payload: [UInt8]) throws(PayloadError) {
    let object = try ValueFormat.parseObject(payload)
    try PayloadFields.refuseUnknownKeys(object, allowed: ["state", "transaction"])
    guard let value = object["state"] else { throw .missingKey("state") }
    guard case .string(let text) = value else {
      throw .wrongType(key: "state", expected: "a string", found: value.typeName)
    }
    guard let state = State(rawValue: text) else {
      throw .unsupportedValue(key: "state", allowed: State.allCases.map(\.rawValue))
    }
    self.init(state: state, transaction: try PayloadFields.transaction(in: object))
  }
}
