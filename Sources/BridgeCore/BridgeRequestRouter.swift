/// Decides the answer to each bridge request. Pure: the gateway supplies the live figures.
public struct BridgeRequestRouter: Sendable {
  /// Verbs of TOPICS.md served by the BLE roles, which later parts of the gateway implement;
  /// until then they are answered with `not_supported` rather than silence.
  public static let bluetoothVerbs: Set<String> = [
    "scan", "device/connect", "device/disconnect", "device/remove", "peripheral/start",
    "peripheral/stop",
  ]

  /// Creates a router.
  public init() {}

  /// Answers one request.
  /// - Parameters:
  ///   - verb: the topic's verb (`health_check`, `device/connect`, …).
  ///   - payload: the request's payload bytes.
  ///   - health: the current health figures, for `health_check`.
  ///   - scan: carries out a valid `scan` command (``DiscoveryBridge/apply(_:)``); the router
  ///     sets the transaction. `nil` (no Bluetooth role yet) answers valid commands with
  ///     `not_supported`; invalid ones get `invalid_payload` either way.
  ///   - device: carries out `device/connect` (`true`) and `device/disconnect` (`false`) with
  ///     the request's object (``GATTBridge/deviceRequest(connect:body:now:)``); the router sets
  ///     the transaction. `nil` answers them with `not_supported`.
  /// - Returns: the response to publish; never fails, bad input gets an error response.
  public func respond(
    verb: String, payload: [UInt8], health: () -> HealthReport,
    scan: ((ScanCommand) -> BridgeResponse)? = nil,
    device: ((Bool, JSONObject) -> BridgeResponse)? = nil
  ) -> BridgeResponse {
    let request: BridgeRequest
    do {
      request = try BridgeRequest(verb: verb, payload: payload)
    } catch {
      return error
    }
    switch verb {
    case "health_check":
      var data: JSONObject = ["healthy": true]
      if case .object(let figures) = health().json {
        for (key, value) in figures { data[key] = value }
      }
      return .success(data, transaction: request.transaction)
    case "scan":
      let command: ScanCommand
      do {
        command = try ScanCommand(parsing: request.body)
      } catch {
        return .failure(
          code: error.code, message: error.description, transaction: request.transaction)
      }
      guard let scan else { return notSupported(verb, transaction: request.transaction) }
      var response = scan(command)
      response.transaction = request.transaction
      return response
    case "device/connect", "device/disconnect":
      guard let device else { return notSupported(verb, transaction: request.transaction) }
      var response = device(verb == "device/connect", request.body)
      response.transaction = request.transaction
      return response
    case _ where Self.bluetoothVerbs.contains(verb):
      return notSupported(verb, transaction: request.transaction)
    default:
      let known = (["health_check"] + Self.bluetoothVerbs.sorted()).joined(separator: ", ")
      // The verb is the requester's: quote at most 64 characters of it.
      let quoted = verb.count > 64 ? String(verb.prefix(64)) + "…" : verb
      return .failure(
        code: "unknown_request", message: "unknown request '\(quoted)'; known: \(known)",
        transaction: request.transaction)
    }
  }

  private func notSupported(_ verb: String, transaction: JSONValue?) -> BridgeResponse {
    .failure(
      code: "not_supported",
      message: "'\(verb)' needs the Bluetooth roles, which this build does not have yet",
      transaction: transaction)
  }
}
