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
///   still online when the grace ends and answered us during it (a live incumbent publishes its
///   state again when it sees ours), the newcomer stops (``shouldStop(now:)``): the gateway
///   exits 78 (a configuration error) without publishing `offline`, so the incumbent's state
///   stands. An older state that was only ever retained and never answered is a stale one —
///   a run that died while the broker was down leaves one, and no will ever replaces it — and
///   the newcomer carries on when its grace ends, or ``answerWait`` seconds after its own state
///   came back if that is sooner (``dismissSilentRival(now:)``).
///
/// Two runs never both act: a run starts its radio roles, answers requests and publishes
/// anything but its state only once ``mayAct`` — its own `online` state came back from the
/// broker (which delivers the retained state of an earlier run before it) and no older run is
/// online. The newcomer stands by for its grace, reading states only. A run that had to start
/// without that answer (the broker unreachable at its start, ``beginActing()``) and then meets
/// an older run online stops at once (``shouldStop(now:)``, ``stopsAtOnce``): it acted, so it
/// must not go on for a grace.
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
    /// The other run's state was retained and nothing answered for it during the grace: a
    /// stale state of a run that is gone; carry on.
    case stale(other: String)
    /// Another run's last will (or clean stop) overwrote our retained state: publish it again.
    /// Not for a retained `offline` handed over on subscribing: that is an earlier run's.
    case overwritten(other: String)
  }

  /// This run.
  public let own: GatewayInstance
  /// Seconds the newcomer waits for the other run's state to go offline.
  public let grace: Double
  /// The other run that makes us the newcomer, and when we stop.
  public private(set) var rival: (id: String, deadline: Double, live: Bool)?
  /// Whether our own `online` state came back from the broker.
  public var confirmed: Bool { confirmedAt != nil }
  /// When our own `online` state first came back from the broker.
  public private(set) var confirmedAt: Double?
  /// Seconds a rival whose state was only ever retained has to answer ours, once ours came
  /// back: a live run publishes its state again within a round trip of seeing ours.
  public static let answerWait = 10.0
  /// Whether this run acts (``beginActing()``).
  public private(set) var acting = false

  /// Whether this run may start acting: the broker handed our own state back and no older run
  /// is online.
  public var mayAct: Bool { confirmed && rival == nil }

  /// Whether a stop now (SIGTERM) must publish no `offline` state: this run stands by for an
  /// older run that answered, whose `online` state stands.
  public var stopsQuietly: Bool { !acting && rival?.live == true }

  /// Whether the stop ``shouldStop(now:)`` asks for comes at once, without a grace: an older
  /// run turned up after this one had started acting.
  public var stopsAtOnce: Bool { acting && rival != nil }

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
  ///   - retained: Whether the broker handed it over as a retained message (on subscribing)
  ///     rather than as one published now.
  ///   - now: Monotonic seconds (deadlines are in the same clock).
  /// - Returns: What it means.
  public mutating func observe(_ payload: [UInt8], retained: Bool = false, now: Double) -> Verdict {
    guard case .object(let object) = try? JSONValue.parse(payload),
      case .string(let state) = object["state"], case .string(let other) = object["instance"]
    else { return .none }
    guard other != own.id else {
      if state == "online", confirmedAt == nil { confirmedAt = now }
      return .none
    }
    guard state == "online" else {
      guard let rival, rival.id == other else {
        // Handed over on subscribing: what an earlier run left (the client subscribes before
        // it publishes our state, after every connection), not something that replaced ours.
        return retained ? .none : .overwritten(other: other)
      }
      self.rival = nil
      return .cleared(other: other)
    }
    let started = object["started"].flatMap(\.integerValue).map { Double($0) / 1000 } ?? 0
    let olderThanUs = (started, other) < (own.started, own.id)
    guard olderThanUs else { return .incumbent(other: other) }
    if let rival, rival.id == other {
      if !retained { self.rival?.live = true }
      return .newcomer(other: other, deadline: rival.deadline)
    }
    let deadline = now + grace
    rival = (other, deadline, !retained)
    return .newcomer(other: other, deadline: deadline)
  }

  /// Whether this run must stop: the newcomer's grace is over with the older run still online
  /// and answering, or an older run turned up after this one started acting (``stopsAtOnce``).
  ///
  /// - Parameter now: Monotonic seconds.
  /// - Returns: `true` when this run must stop.
  public func shouldStop(now: Double) -> Bool {
    guard let rival else { return false }
    return acting || (now >= rival.deadline && rival.live)
  }

  /// Ends the grace of a rival that never answered: its state was only ever retained, a stale
  /// one of a run that is gone.
  ///
  /// - Parameter now: Monotonic seconds.
  /// - Returns: ``Verdict/stale(other:)`` once, when the grace is over without an answer.
  public mutating func dismissSilentRival(now: Double) -> Verdict? {
    guard let rival, !acting, !rival.live else { return nil }
    let answerBy = confirmedAt.map { $0 + Self.answerWait } ?? rival.deadline
    guard now >= min(rival.deadline, answerBy) else { return nil }
    self.rival = nil
    return .stale(other: rival.id)
  }

  /// Records that this run starts acting: when ``mayAct``, or when the broker could not be asked
  /// in time. From then on an older run online stops this one at once.
  public mutating func beginActing() {
    acting = true
  }
}
