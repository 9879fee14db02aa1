/// A `scan` request on `<base>/bridge/<gw>/request/scan`:
/// `{"action":"start","filter":{…},"transaction":…}` or `{"action":"stop"}`.
///
/// `"filter"` (only with `start`) is an ``AdvertisementFilter`` in its JSON form; a start
/// without one keeps the configured filter.
public struct ScanCommand: Sendable, Hashable {
  /// Why a request is not a scan command. Every case has the code `invalid_payload`.
  public enum Error: Swift.Error, Sendable, Hashable, CustomStringConvertible {
    /// The request's structure is wrong: a missing or unknown key, a wrong type, an unknown action.
    case payload(PayloadError)
    /// The filter is not valid.
    case filter(AdvertisementFilter.Error)

    /// The stable machine-readable code, `invalid_payload`.
    public var code: String { "invalid_payload" }

    /// A sentence for people.
    public var description: String {
      switch self {
      case .payload(let error): error.description
      case .filter(let error): error.description
      }
    }
  }

  /// What to do.
  public enum Action: Sendable, Hashable {
    /// Scan; with a filter, replace the current one.
    case start(AdvertisementFilter?)
    /// Stop scanning.
    case stop
  }

  /// What to do.
  public var action: Action

  /// Makes a command.
  ///
  /// - Parameter action: What to do.
  public init(_ action: Action) {
    self.action = action
  }

  /// Parses a request body (see ``BridgeRequest/body``): `"action"` is required, `"filter"` only
  /// allowed with `start`, `"transaction"` any scalar; other keys are refused.
  ///
  /// - Parameter body: The request's JSON object.
  /// - Throws: ``Error`` naming the first problem.
  public init(parsing body: JSONObject) throws(Error) {
    for key in body.keys where !["action", "filter", "transaction"].contains(key) {
      throw .payload(.unknownKey(key))
    }
    if let transaction = body["transaction"], !transaction.isScalar {
      throw .payload(
        .wrongType(
          key: "transaction", expected: "a string, number, boolean or null",
          found: transaction.typeName))
    }
    guard let actionValue = body["action"] else { throw .payload(.missingKey("action")) }
    guard case .string(let action) = actionValue else {
      throw .payload(.wrongType(key: "action", expected: "a string", found: actionValue.typeName))
    }
    switch action {
    case "start":
      guard let filterValue = body["filter"] else {
        self.init(.start(nil))
        return
      }
      guard case .object(let object) = filterValue else {
        throw .payload(
          .wrongType(key: "filter", expected: "an object", found: filterValue.typeName))
      }
      do {
        self.init(.start(try AdvertisementFilter(parsing: object)))
      } catch {
        throw .filter(error)
      }
    case "stop":
      if body["filter"] != nil { throw .payload(.unknownKey("filter")) }
      self.init(.stop)
    default:
      throw .payload(.unsupportedValue(key: "action", allowed: ["start", "stop"]))
    }
  }
}
