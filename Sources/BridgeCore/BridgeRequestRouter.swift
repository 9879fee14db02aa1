/// Decides the answer to each bridge request. Pure: the gateway supplies the live figures.
public struct BridgeRequestRouter: Sendable {
  /// Verbs of TOPICS.md served by the BLE roles; a gateway without the role they need answers
  /// them with `not_supported` rather than silence.
  public static let bluetoothVerbs: Set<String> = [
    "scan", "devices", "device/connect", "device/disconnect", "device/remove", "device/rename",
    "device/rssi", "peripheral/start", "peripheral/stop",
  ]

  /// Verbs every gateway of a fleet answers on `<base>/bridge/request/<verb>` (each on its own
  /// response topic, with `gw` in `data`). The others act on one gateway's devices or radio:
  /// they are sent to that gateway, and a fleet-wide one is answered `not_supported`.
  public static let fleetVerbs: Set<String> = ["health_check", "devices", "scan"]

  /// Creates a router.
  public init() {}

  /// What the gateway does with one request.
  public enum Route: Sendable, Hashable {
    /// Publish this response now.
    case answer(BridgeResponse)
    /// Start (`true`) or stop (`false`) the peripheral role, then answer with this
    /// transaction (the answer waits for BlueZ, so the gateway carries it out in a task it
    /// owns).
    case peripheral(start: Bool, transaction: JSONValue?)
    /// Read a connected device's link quality (`device/rssi`) and answer when the radio has.
    case linkQuality(JSONObject, transaction: JSONValue?)
  }

  /// Routes one request: every verb of TOPICS.md is decided here.
  /// - Parameters:
  ///   - verb: the topic's verb (`health_check`, `device/connect`, …).
  ///   - payload: the request's payload bytes.
  ///   - health: the current health figures, for `health_check`.
  ///   - scan: carries out a valid `scan` command (``DiscoveryBridge/apply(_:)``); the router
  ///     sets the transaction. `nil` (no Bluetooth role) answers valid commands with
  ///     `not_supported`; invalid ones get `invalid_payload` either way.
  ///   - device: carries out `device/connect` (`true`) and `device/disconnect` (`false`) with
  ///     the request's object (``GATTBridge/deviceRequest(connect:body:now:)``); the router sets
  ///     the transaction. `nil` answers them with `not_supported`.
  ///   - remove: carries out `device/remove` with the request's object
  ///     (``DiscoveryBridge/remove(_:)``); `nil` answers it with `not_supported`.
  ///   - devices: the devices list (the payload of `<base>/bridge/<gw>/devices`) for `devices`;
  ///     `nil` answers it with `not_supported`.
  ///   - rename: renames a device for `device/rename`; `nil` answers it with `not_supported`.
  ///   - peripheral: whether the gateway runs a peripheral role (`peripheral/start|stop`).
  ///   - linkQuality: whether the gateway reads connected devices' link quality
  ///     (`device/rssi`).
  ///   - fleetWide: for a request sent to the whole fleet, the request topic prefix of this
  ///     gateway (`<base>/bridge/<gw>/request/`), named in the `not_supported` answer to a verb
  ///     that is not one of ``fleetVerbs``; `nil` for a request sent to this gateway.
  /// - Returns: what to do; never fails, bad input gets an error response.
  public func route(
    verb: String, payload: [UInt8], health: () -> HealthReport,
    scan: ((ScanCommand) -> BridgeResponse)? = nil,
    device: ((Bool, JSONObject) -> BridgeResponse)? = nil,
    remove: ((JSONObject) -> BridgeResponse)? = nil, devices: (() -> JSONValue)? = nil,
    rename: ((JSONObject) -> BridgeResponse)? = nil, peripheral: Bool = false,
    linkQuality: Bool = false, fleetWide: String? = nil
  ) -> Route {
    if let prefix = fleetWide, !Self.fleetVerbs.contains(verb) {
      let fleet = Self.fleetVerbs.sorted().joined(separator: ", ")
      return .answer(
        .failure(
          code: "not_supported",
          message:
            "'\(Self.quoted(verb))' is not a fleet-wide request: send it to \(prefix)…; fleet-wide: \(fleet)",
          transaction: try? BridgeRequest(verb: verb, payload: payload).transaction))
    }
    let request: BridgeRequest
    do {
      request = try BridgeRequest(verb: verb, payload: payload)
    } catch {
      return .answer(error)
    }
    func answer(_ response: BridgeResponse) -> Route {
      var response = response
      response.transaction = request.transaction
      return .answer(response)
    }
    switch verb {
    case "health_check":
      guard case .object(let data) = health().json else {
        return answer(.success(transaction: nil))
      }
      return answer(.success(data, transaction: nil))
    case "scan":
      let command: ScanCommand
      do {
        command = try ScanCommand(parsing: request.body)
      } catch {
        return answer(.failure(code: error.code, message: error.description, transaction: nil))
      }
      guard let scan else { return answer(notSupported(verb)) }
      return answer(scan(command))
    case "devices":
      guard let devices else { return answer(notSupported(verb)) }
      return answer(.success(["devices": devices()], transaction: nil))
    case "device/connect", "device/disconnect":
      guard let device else { return answer(notSupported(verb)) }
      return answer(device(verb == "device/connect", request.body))
    case "device/remove":
      guard let remove else { return answer(notSupported(verb)) }
      return answer(remove(request.body))
    case "device/rename":
      guard let rename else { return answer(notSupported(verb)) }
      return answer(rename(request.body))
    case "peripheral/start", "peripheral/stop":
      guard peripheral else { return answer(notSupported(verb)) }
      return .peripheral(start: verb == "peripheral/start", transaction: request.transaction)
    case "device/rssi":
      guard linkQuality else { return answer(notSupported(verb)) }
      return .linkQuality(request.body, transaction: request.transaction)
    default:
      let known = (["health_check"] + Self.bluetoothVerbs.sorted()).joined(separator: ", ")
      return answer(
        .failure(
          code: "unknown_request",
          message: "unknown request '\(Self.quoted(verb))'; known: \(known)",
          transaction: nil))
    }
  }

  /// The verb is the requester's: at most 64 characters of it are quoted.
  private static func quoted(_ verb: String) -> String {
    verb.count > 64 ? String(verb.prefix(64)) + "…" : verb
  }

  private func notSupported(_ verb: String, transaction: JSONValue? = nil) -> BridgeResponse {
    .failure(
      code: "not_supported",
      message: "'\(verb)' needs a Bluetooth role this gateway does not run (bluetooth.radio)",
      transaction: transaction)
  }
}
