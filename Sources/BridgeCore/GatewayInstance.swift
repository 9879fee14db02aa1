/// One run of a gateway: a random id and the wall-clock time it started, carried in its
/// retained `<base>/bridge/<gw>/state` so that two processes configured with the same
/// `gateway.id` can tell each other apart (``DuplicateGatewayGuard``).
public struct GatewayInstance: Sendable, Hashable {
  /// 16 lower-case hex digits, new at every start.
  public var id: String
  /// When the run started, in seconds since the Unix epoch.
  public var started: Double

  /// Makes an instance.
  ///
  /// - Parameters:
  ///   - id: The run's id.
  ///   - started: When it started, in seconds since the Unix epoch.
  public init(id: String, started: Double) {
    self.id = id
    self.started = started
  }

  /// A new run starting at `started`, with a random id.
  ///
  /// - Parameter started: Seconds since the Unix epoch.
  /// - Returns: The instance.
  public static func random(started: Double) -> GatewayInstance {
    var generator = SystemRandomNumberGenerator()
    let id = Hex.encode(UInt64.random(in: 0 ... .max, using: &generator), width: 16)
    return GatewayInstance(id: id, started: started)
  }

  /// The payload of `<base>/bridge/<gw>/state`:
  /// `{"state":"online","instance":"9f2c…","started":1700000000000}`, or
  /// `{"state":"offline","instance":"9f2c…"}` (the last will and the clean stop).
  ///
  /// - Parameter online: Which state.
  /// - Returns: The JSON bytes.
  public func statePayload(online: Bool) -> [UInt8] {
    var object: JSONObject = [
      "state": .string(online ? "online" : "offline"), "instance": .string(id),
    ]
    if online { object["started"] = .integer(Timestamps.milliseconds(started)) }
    return JSONValue.object(object).serializedBytes()
  }
}

/// Tells a gateway when another process runs with its `gateway.id` — two gateways of a fleet
/// configured alike, or one started twice — from the retained `<base>/bridge/<gw>/state` they
/// both publish and both read (each carries its ``GatewayInstance``).
///
/// The rule, the same on both sides so that exactly one keeps running:
/// - the **older** run (earlier `started`; the lower id on a tie) is the incumbent: it keeps
///   running and publishes its state again (the newcomer overwrote it);
/// - the **newcomer** keeps running for ``grace`` seconds: a run that lost power keeps an
///   `online` state until the broker gives up on its connection (1.5 × keepalive) and publishes
///   its last will, and that must not stop the gateway that replaces it. If the other run is
///   still online when the grace ends, the newcomer stops (``shouldStop(now:)``): the gateway
///   exits 78 (a configuration error) without publishing `offline`, so the incumbent's state
///   stands.
///
/// States without an instance (gatt2mqtt before 0.4, or anything else) are ignored.
public struct DuplicateGatewayGuard: Sendable {
  /// What one state message means.
  public enum Verdict: Sendable, Hashable {
    /// Nothing to do: our own state, or nothing that can be read.
    case none
    /// An older run with our id is online: we are the newcomer, and stop at `deadline`
    /// (monotonic time) unless it goes offline first.
    case newcomer(other: String, deadline: Double)
    /// A newer run with our id is online: it will stop; publish our state again.
    case incumbent(other: String)
    /// The other run went offline before the grace ended: carry on, and publish our state
    /// again (its last will overwrote it).
    case cleared(other: String)
    /// Another run's last will (or clean stop) overwrote our retained state: publish it again.
    case overwritten(other: String)
  }

  /// This run.
  public let own: GatewayInstance
  /// Seconds the newcomer waits for the other run's state to go offline.
  public let grace: Double
  /// The other run that makes us the newcomer, and when we stop.
  public private(set) var rival: (id: String, deadline: Double)?

  /// Makes a guard.
  ///
  /// - Parameters:
  ///   - own: This run.
  ///   - grace: Seconds the newcomer waits (the gateway uses 1.5 × `mqtt.keepalive` + 5).
  public init(own: GatewayInstance, grace: Double) {
    self.own = own
    self.grace = max(0, grace)
  }

  /// Reads one message of `<base>/bridge/<gw>/state`.
  ///
  /// - Parameters:
  ///   - payload: The message's payload.
  ///   - now: Monotonic seconds (deadlines are in the same clock).
  /// - Returns: What it means.
  public mutating func observe(_ payload: [UInt8], now: Double) -> Verdict {
    guard case .object(let object) = try? JSONValue.parse(payload),
      case .string(let state) = object["state"], case .string(let other) = object["instance"],
      other != own.id
    else { return .none }
    guard state == "online" else {
      guard let rival, rival.id == other else { return .overwritten(other: other) }
      self.rival = nil
      return .cleared(other: other)
    }
    let started = object["started"].flatMap(\.integerValue).map { Double($0) / 1000 } ?? 0
    let olderThanUs = (started, other) < (own.started, own.id)
    guard olderThanUs else { return .incumbent(other: other) }
    if let rival, rival.id == other { return .newcomer(other: other, deadline: rival.deadline) }
    let deadline = now + grace
    rival = (other, deadline)
    return .newcomer(other: other, deadline: deadline)
  }

  /// Whether the newcomer's grace is over with the older run still online.
  ///
  /// - Parameter now: Monotonic seconds.
  /// - Returns: `true` when this run must stop.
  public func shouldStop(now: Double) -> Bool {
    guard let rival else { return false }
    return now >= rival.deadline
  }
}
