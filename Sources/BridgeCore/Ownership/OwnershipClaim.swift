/// A gateway's retained claim to a device, `<base>/<dev>/owner`:
/// `{"gw":"hall","instance":"9f2c…","rssi":-61.5,"connected":false,"slots":4,"reason":"unowned"}`.
///
/// The claim names the run (``GatewayInstance``) that made it, so that every gateway reads it
/// the same way: a claim is **valid** while the named gateway's retained
/// `<base>/bridge/<gw>/state` is `online` with the same instance. A claim left by an earlier run,
/// by a gateway whose last will fired, or forged by anyone else, is not valid, and the device
/// is unowned (``OwnershipArbiter``).
public struct OwnershipClaim: Sendable, Hashable {
  /// The gateway that claims the device.
  public var gateway: GatewayID
  /// The run of that gateway that made the claim.
  public var instance: String
  /// The claimant's smoothed RSSI of the device in dBm; `nil` when it has not heard the device
  /// for ``OwnershipArbiter/Configuration/staleAfter`` seconds.
  public var rssi: Double?
  /// Whether the claimant is connected to the device.
  public var connected: Bool
  /// The claimant's free connection slots.
  public var slots: Int
  /// Why the claim was made or last updated: `unowned`, `owner_offline`, `owner_stale`,
  /// `stronger`, `slots`, `refresh`.
  public var reason: String

  /// Makes a claim.
  ///
  /// - Parameters:
  ///   - gateway: The claimant.
  ///   - instance: The claimant's run.
  ///   - rssi: Its smoothed RSSI, `nil` when stale.
  ///   - connected: Whether it is connected to the device.
  ///   - slots: Its free connection slots.
  ///   - reason: Why it claims.
  public init(
    gateway: GatewayID, instance: String, rssi: Double?, connected: Bool = false, slots: Int = 0,
    reason: String
  ) {
    self.gateway = gateway
    self.instance = instance
    self.rssi = rssi
    self.connected = connected
    self.slots = slots
    self.reason = reason
  }

  /// Why a payload is not a claim.
  public struct Problem: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong, for a person.
    public var description: String

    /// Makes a problem.
    ///
    /// - Parameter description: What is wrong.
    public init(description: String) { self.description = description }
  }

  /// The longest instance id accepted (ours are 16 hex digits).
  static let maximumInstanceLength = 64
  /// The longest reason accepted.
  static let maximumReasonLength = 32

  /// Reads a claim.
  ///
  /// - Parameter payload: The retained payload (not empty: an empty one clears the claim).
  /// - Throws: ``Problem`` naming what is wrong.
  public init(parsing payload: [UInt8]) throws(Problem) {
    guard case .object(let object) = try? JSONValue.parse(payload) else {
      throw Problem(description: "not a JSON object")
    }
    guard case .string(let gw) = object["gw"], GatewayID.isValid(gw) else {
      throw Problem(description: "\"gw\" is not a valid gateway id")
    }
    guard case .string(let instance) = object["instance"], !instance.isEmpty,
      instance.utf8.count <= Self.maximumInstanceLength
    else { throw Problem(description: "\"instance\" is missing or too long") }
    var rssi: Double?
    switch object["rssi"] {
    case .none, .null: rssi = nil
    case .integer(let value) where (-127...20).contains(value): rssi = Double(value)
    case .number(let value) where (-127...20).contains(value): rssi = value
    default: throw Problem(description: "\"rssi\" is not null or a number from -127 to 20")
    }
    var connected = false
    switch object["connected"] {
    case .none: break
    case .bool(let value): connected = value
    default: throw Problem(description: "\"connected\" is not a boolean")
    }
    var slots = 0
    switch object["slots"] {
    case .none: break
    case .integer(let value) where (0...1000).contains(value): slots = Int(value)
    default: throw Problem(description: "\"slots\" is not an integer from 0 to 1000")
    }
    var reason = ""
    if case .string(let text) = object["reason"] {
      reason = String(text.prefix(Self.maximumReasonLength))
    }
    self.init(
      gateway: GatewayID(gw), instance: instance, rssi: rssi, connected: connected, slots: slots,
      reason: reason)
  }

  /// The retained payload.
  public var payload: [UInt8] {
    var object: JSONObject = [
      "gw": .string(gateway.rawValue), "instance": .string(instance),
      "rssi": rssi.map { .number(($0 * 10).rounded() / 10) } ?? .null,
      "connected": .bool(connected), "slots": .integer(Int64(slots)),
    ]
    object["reason"] = .string(reason)
    return JSONValue.object(object).serializedBytes()
  }
}
