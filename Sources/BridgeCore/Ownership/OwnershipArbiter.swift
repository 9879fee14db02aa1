/// Decides, for a fleet of gateways sharing one broker, which one owns each device: the only
/// gateway that publishes the device's state and values, answers its requests and connects to
/// it. The shared state is the broker's alone: each device's retained claim
/// (``OwnershipClaim`` on `<base>/<dev>/owner`) and each gateway's retained
/// `<base>/bridge/<gw>/state` with its last will. docs/FLEET.md explains the rule; in short:
///
/// - **Who owns.** The owner is the gateway the retained claim names, while that claim is
///   valid: its gateway's state is `online` with the claim's instance. Every gateway computes
///   this from the same messages in the broker's order, so they agree; a gateway acts as the
///   owner only once the broker has handed its own claim back (two claims racing: the later one
///   stands, on every gateway).
/// - **Claiming an unowned device** (no claim, a cleared one, a malformed or forged one, or its
///   gateway's state went `offline`): every gateway that hears it waits a delay ranked by its
///   smoothed RSSI (the strongest first: 0 s at -30 dBm up to ``Configuration/claimDelay`` at
///   -100 dBm, plus a per-gateway, per-device jitter of up to 0.5 s that splits equal RSSIs, plus
///   ``Configuration/claimDelay`` when the device wants a connection and it has no free slot);
///   the first claim seen stops the others' timers.
/// - **Taking over from a valid owner** needs the condition to hold without a break for a while:
///   the owner does not hear the device (its claim's `rssi` is `null`) for the ranked delay, or
///   the challenger is ``Configuration/margin`` dB stronger than the owner's published RSSI, or
///   the device wants a connection and the owner has no free slot, for ``Configuration/dwell``
///   seconds. A connected owner is never challenged.
/// - **The owner keeps its claim current**: it publishes it again when its smoothed RSSI moved
///   by ``Configuration/reportChange`` dB (at most every ``Configuration/reportInterval`` s), at
///   once when it stops or starts hearing the device, connects or disconnects, or runs out of
///   slots; and it **gives a device up** (clears the claim) after
///   ``Configuration/giveUpAfter`` failed connection attempts in a row, then leaves it to others
///   for ``Configuration/cooldown`` seconds.
///
/// Pure: the gateway feeds it advertisements' RSSI, its links' states, the claims and states the
/// broker delivers and a tick about once a second, and publishes the claims it returns
/// (retained). Times are monotonic seconds.
public struct OwnershipArbiter: Sendable {
  /// The settings; every default is the documented configuration default (`fleet.ownership.*`).
  public struct Configuration: Sendable, Hashable {
    /// How many dB stronger a challenger must be (`margin`, default 10).
    public var margin: Double
    /// Seconds the challenger must stay that much stronger (`dwell`, default 30).
    public var dwell: Double
    /// Seconds without an advertisement after which a gateway no longer hears a device
    /// (`stale_after`, default 15; keep it below `presence.away_after`).
    public var staleAfter: Double
    /// The longest ranked claim delay in seconds (`claim_delay`, default 5).
    public var claimDelay: Double
    /// Failed connection attempts in a row after which the owner gives the device up
    /// (`give_up_after`, default 3).
    public var giveUpAfter: Int
    /// Seconds a gateway leaves a device it gave up to the others (`cooldown`, default 120).
    public var cooldown: Double
    /// Seconds after which an RSSI sample weighs half in the smoothed RSSI (default 10).
    public var halfLife: Double
    /// The RSSI change in dB that makes the owner publish its claim again (default half the
    /// margin).
    public var reportChange: Double
    /// The fewest seconds between two RSSI updates of a claim (default 10).
    public var reportInterval: Double
    /// Seconds to wait for one's own claim to come back from the broker before claiming again
    /// (default 5).
    public var echoTimeout: Double
    /// The most devices tracked (claims of devices never heard are not kept beyond it).
    public var maximumDevices: Int

    /// Makes a configuration.
    ///
    /// - Parameters:
    ///   - margin: How many dB stronger a challenger must be.
    ///   - dwell: Seconds the challenger must stay that much stronger.
    ///   - staleAfter: Seconds without an advertisement after which a device is not heard.
    ///   - claimDelay: The longest ranked claim delay.
    ///   - giveUpAfter: Failed attempts in a row after which the owner gives up.
    ///   - cooldown: Seconds a given-up device is left to the others.
    ///   - halfLife: The smoothing half-life.
    ///   - reportChange: The RSSI change that republishes a claim; `nil` for half the margin.
    ///   - reportInterval: The fewest seconds between two RSSI updates of a claim.
    ///   - echoTimeout: Seconds to wait for one's own claim to come back.
    ///   - maximumDevices: The most devices tracked.
    public init(
      margin: Double = 10, dwell: Double = 30, staleAfter: Double = 15, claimDelay: Double = 5,
      giveUpAfter: Int = 3, cooldown: Double = 120, halfLife: Double = 10,
      reportChange: Double? = nil, reportInterval: Double = 10, echoTimeout: Double = 5,
      maximumDevices: Int = 10_000
    ) {
      self.margin = max(0, margin)
      self.dwell = max(0, dwell)
      self.staleAfter = max(1, staleAfter)
      self.claimDelay = max(0, claimDelay)
      self.giveUpAfter = max(1, giveUpAfter)
      self.cooldown = max(0, cooldown)
      self.halfLife = max(0.1, halfLife)
      self.reportChange = reportChange ?? max(1, self.margin / 2)
      self.reportInterval = max(0, reportInterval)
      self.echoTimeout = max(0.5, echoTimeout)
      self.maximumDevices = max(1, maximumDevices)
    }
  }

  /// What the arbiter asks for.
  public enum Output: Sendable, Hashable {
    /// Publish (retained) a claim; an empty payload clears it.
    case publish(topic: TopicName, payload: [UInt8])
    /// This gateway became the device's owner: publish its retained state, connect it if
    /// wanted. `from` is the previous valid owner, if any.
    case gained(BluetoothAddress, from: GatewayID?, reason: String)
    /// This gateway no longer owns the device: stop publishing for it, disconnect it. `to` is
    /// the new owner, if any.
    case lost(BluetoothAddress, to: GatewayID?, reason: String)
    /// A claim could not be read (reported once per device until a readable one arrives).
    case invalidClaim(BluetoothAddress, problem: String)
    /// The broker has this gateway back after an outage and it still owns the device: publish
    /// the device's retained state again (nothing device-level went out meanwhile).
    case resumed(BluetoothAddress)
    /// The state of a gateway not known yet was ignored: ``maxPeers`` are known and none could
    /// be forgotten (reported once until there is room again).
    case peersFull(ignored: GatewayID, known: Int)
  }

  struct Peer: Sendable, Hashable {
    var online: Bool
    var instance: String?
  }

  struct Device: Sendable {
    /// The claim the broker holds (the last one delivered); `nil` when none or cleared.
    var claim: OwnershipClaim?
    var malformed = false
    var rssi: Double?
    var lastSample: Double?
    var connected = false
    var wantsConnection = false
    var failures = 0
    var cooldownUntil: Double?
    /// Since when the condition to claim has held without a break.
    var challengeSince: Double?
    /// A claim of ours on its way to the broker and back.
    var claimSent: Double?
    var owned = false
    /// The gateway forgot the device while owning it (``prune(keeping:)``): its claim is given
    /// up at the next decision unless it is heard (or connected) again first.
    var forgotten = false
    /// The last valid owner seen other than this gateway (named in `gained` events).
    var formerOwner: GatewayID?
    /// What our last published claim said, and when its RSSI was last updated.
    var published: OwnershipClaim?
    var publishedAt: Double = -.infinity
  }

  /// The settings.
  public let configuration: Configuration
  /// The topic map.
  public let topics: Topics
  /// This run's instance id.
  public let instance: String
  /// This gateway's free connection slots (set by the gateway).
  public var freeSlots: Int

  var peers: [GatewayID: Peer] = [:]
  /// Another run's `online` state under the id of a gateway whose run is online, waiting for
  /// the running one to answer (``instanceSwitchWait``).
  var pendingPeers: [GatewayID: (peer: Peer, since: Double)] = [:]
  var devices: [BluetoothAddress: Device] = [:]
  /// The broker connection is down (``brokerLost()``) and our `online` state is not back yet:
  /// no claim goes out and nothing device-level is published.
  public private(set) var isSuspended = false

  /// Makes an arbiter that knows no device and no other gateway.
  ///
  /// - Parameters:
  ///   - topics: The topic map (its gateway is this gateway).
  ///   - instance: This run's instance id (``GatewayInstance/id``).
  ///   - freeSlots: Free connection slots at the start.
  ///   - configuration: The settings.
  public init(
    topics: Topics, instance: String, freeSlots: Int = 0,
    configuration: Configuration = Configuration()
  ) {
    self.topics = topics
    self.instance = instance
    self.freeSlots = freeSlots
    self.configuration = configuration
  }

  var gateway: GatewayID { topics.gateway }

  // MARK: - Questions

  /// The valid owner of a device, if any.
  ///
  /// - Parameter address: The device.
  /// - Returns: Its owner.
  public func owner(of address: BluetoothAddress) -> GatewayID? {
    devices[address]?.claim.flatMap { valid($0) ? $0.gateway : nil }
  }

  /// Whether the device's retained claim names this gateway in another run (one that stopped
  /// or died): left, no one else clears it.
  ///
  /// - Parameter address: The device.
  /// - Returns: `true` for a claim by this gateway's id and another instance.
  public func claimedByEarlierRun(_ address: BluetoothAddress) -> Bool {
    guard let claim = devices[address]?.claim else { return false }
    return claim.gateway == gateway && claim.instance != instance
  }

  /// Whether this gateway owns the device.
  ///
  /// - Parameter address: The device.
  /// - Returns: `true` when its valid claim names this run.
  public func owns(_ address: BluetoothAddress) -> Bool { devices[address]?.owned ?? false }

  /// Whether this gateway answers a request about the device: its owner does; for a device no
  /// gateway owns, the online gateway with the lowest id does (so that exactly one answers
  /// "unknown device" or "not connected").
  ///
  /// - Parameter address: The device.
  /// - Returns: Whether to answer.
  public func answers(_ address: BluetoothAddress) -> Bool {
    if let owner = owner(of: address) { return owner == gateway }
    return answersUnknown
  }

  /// Whether this gateway answers a request about a device no gateway owns (or a device level
  /// that names no device): the online gateway with the lowest id does.
  public var answersUnknown: Bool {
    let lowest = peers.filter { $0.value.online }.keys.min()
    return lowest.map { gateway <= $0 } ?? true
  }

  func valid(_ claim: OwnershipClaim) -> Bool {
    guard let peer = peers[claim.gateway], peer.online else { return false }
    return peer.instance == claim.instance
  }

  /// Whether this run may claim: the broker holds our own `online` state.
  var mayClaim: Bool {
    !isSuspended && (peers[gateway].map { $0.online && $0.instance == instance } ?? false)
  }

  /// The devices this gateway owns now.
  public var ownedDevices: [BluetoothAddress] {
    devices.filter { $0.value.owned }.keys.sorted()
  }

  /// The broker connection was lost: until our `online` state comes back, claim nothing and
  /// publish nothing device-level (another gateway may take our devices while our last will
  /// says `offline`; what we would have queued must not overwrite what it publishes).
  public mutating func brokerLost() {
    isSuspended = true
  }

  // MARK: - Inputs from the broker

  /// A retained claim arrived (`<base>/<dev>/owner`).
  ///
  /// - Parameters:
  ///   - address: The device the topic names.
  ///   - payload: The payload; empty when the claim was cleared.
  ///   - now: The time.
  /// - Returns: What to do.
  public mutating func claimReceived(_ address: BluetoothAddress, payload: [UInt8], now: Double)
    -> [Output]
  {
    if devices[address] == nil {
      // Nothing to remember about a device we neither hear nor see claimed.
      guard !payload.isEmpty, devices.count < configuration.maximumDevices else { return [] }
    }
    var device = devices[address] ?? Device()
    var outputs: [Output] = []
    let previous = device.claim.map { "\($0.gateway.rawValue) \($0.instance)" }
    if payload.isEmpty {
      device.claim = nil
      device.malformed = false
    } else {
      do {
        device.claim = try OwnershipClaim(parsing: payload)
        device.malformed = false
      } catch {
        device.claim = nil
        if !device.malformed {
          outputs.append(.invalidClaim(address, problem: error.description))
        }
        device.malformed = true
      }
    }
    if let claim = device.claim, claim.gateway == gateway, claim.instance == instance {
      device.claimSent = nil
    }
    // The retained claim is anyone's to write: one that displaces ours without a valid
    // claimant — unreadable, cleared by someone else, or naming a run that is not online — is
    // put right, and the owner keeps the device (a forged or broken claim must not drop a live
    // link; a gateway that wants the device publishes a valid claim).
    if device.owned, mayClaim, let ours = device.published, device.claim.map(valid) != true {
      let problem =
        device.claim.map {
          "a claim by '\($0.gateway.rawValue)' (instance \($0.instance)), which is not online in that run"
        } ?? (payload.isEmpty ? "the claim was cleared" : nil)
      if let problem { outputs.append(.invalidClaim(address, problem: problem)) }
      device.claim = ours
      device.malformed = false
      device.claimSent = now
      devices[address] = device
      return outputs + [
        .publish(topic: topics.owner(DeviceID(address: address)), payload: ours.payload)
      ]
    }
    // A new claimant restarts a challenge; the owner refreshing its claim does not.
    if device.claim.map({ "\($0.gateway.rawValue) \($0.instance)" }) != previous {
      device.challengeSince = nil
    }
    devices[address] = device
    let outputs2 = outputs + settle(address, now: now)
    if let kept = devices[address], kept.claim == nil, !kept.malformed, kept.lastSample == nil,
      !kept.owned
    {
      devices[address] = nil
    }
    return outputs2
  }

  /// A gateway's retained state arrived (`<base>/bridge/<gw>/state`), ours included.
  ///
  /// - Parameters:
  ///   - gateway: The gateway the topic names.
  ///   - payload: `{"state":"online"|"offline","instance":…}`; empty when cleared.
  ///   - now: The time.
  /// - Returns: What to do.
  public mutating func stateReceived(_ gateway: GatewayID, payload: [UInt8], now: Double)
    -> [Output]
  {
    var peer: Peer?
    if case .object(let object) = try? JSONValue.parse(payload),
      case .string(let state) = object["state"]
    {
      peer = Peer(online: state == "online", instance: object["instance"]?.stringValue)
    }
    let ours = gateway == self.gateway
    // Anyone who may publish under the base topic can name gateways without end: past the
    // bound, the state of a gateway not known yet is ignored unless room is made.
    if !ours, peers[gateway] == nil, peer != nil, !makeRoomForPeer() {
      let first = !peersFullReported
      peersFullReported = true
      return first ? [.peersFull(ignored: gateway, known: peers.count)] : []
    }
    // Our own last will, handed back when we reconnect (we subscribe before publishing
    // `online` again): not a reason to drop our devices; our `online` follows.
    if ours, let peer, !peer.online, peer.instance == instance { return [] }
    // Another run with our gateway.id (one started twice: it stands by and stops, see
    // DuplicateGatewayGuard), or our state cleared by someone else: our claims stay ours.
    if ours, peer?.instance != instance { return [] }
    if !ours, let current = peers[gateway], current.online, let peer,
      peer.instance != current.instance
    {
      // Another run of a gateway whose run is online: the state of a run that is gone (a late
      // will, a clean stop) changes nothing; a new `online` is a run started with the same
      // gateway.id — a newcomer that stands by until the running one answers, then stops
      // (DuplicateGatewayGuard) — or the replacement of a run gone without a will yet. It
      // counts only if the running one does not answer within `instanceSwitchWait`.
      if peer.online, pendingPeers[gateway] == nil { pendingPeers[gateway] = (peer, now) }
      return []
    }
    // The running one's own state (an answer), or any state of a gateway not online.
    if !ours { pendingPeers[gateway] = nil }
    let resuming = ours && isSuspended && peer?.online == true && peer?.instance == instance
    if resuming { isSuspended = false }
    guard peers[gateway] != peer || resuming else { return [] }
    var outputs = changePeer(gateway, to: peer, now: now)
    if resuming { outputs += ownedDevices.map { .resumed($0) } }
    return outputs
  }

  /// The most gateways whose state is kept, this one included (a fleet's many times over).
  public static let maxPeers = 1024
  /// A ``Output/peersFull(ignored:known:)`` went out and there has been no room since.
  var peersFullReported = false

  /// Makes room for the state of a gateway not known yet, past ``maxPeers``, by forgetting the
  /// offline gateways no claim names (to the rule an offline gateway and an unknown one are
  /// the same).
  ///
  /// - Returns: Whether there is room.
  mutating func makeRoomForPeer() -> Bool {
    guard peers.count >= Self.maxPeers else { return true }
    let named = Set(devices.values.compactMap { $0.claim?.gateway })
    peers = peers.filter { $0.value.online || named.contains($0.key) }
    if peers.count < Self.maxPeers { peersFullReported = false }
    return peers.count < Self.maxPeers
  }

  /// Records a gateway's state and settles every claim whose validity it changes.
  mutating func changePeer(_ gateway: GatewayID, to peer: Peer?, now: Double) -> [Output] {
    peers[gateway] = peer
    let ours = gateway == self.gateway
    // Every claim naming it changes validity, and ours too when it is our own state.
    var outputs: [Output] = []
    for address in devices.keys.sorted() {
      let affected = devices[address]?.claim?.gateway == gateway || ours
      if affected { outputs += settle(address, now: now) }
    }
    return outputs
  }

  /// Seconds a running gateway has to answer another run's `online` state under its id (it
  /// publishes its own again at once) before the other run counts as the gateway's.
  public static let instanceSwitchWait = 2.0

  // MARK: - Inputs from the radio

  /// An advertisement with RSSI from a device the gateway keeps.
  ///
  /// A reading outside -127...20 dBm — 127 is HCI's "RSSI not available", which some
  /// controllers (and the lab's virtual ones) report for every advertisement — counts as the
  /// weakest, -127 dBm: the device is heard, ranked last, and claims stay valid.
  ///
  /// - Parameters:
  ///   - address: The device.
  ///   - rssi: Its RSSI in dBm.
  ///   - wantsConnection: Whether the gateway would connect to it when owning it.
  ///   - now: The time.
  /// - Returns: What to do (a claim, when this sample decides one).
  public mutating func observed(
    _ address: BluetoothAddress, rssi: Int, wantsConnection: Bool, now: Double
  ) -> [Output] {
    if devices[address] == nil, devices.count >= configuration.maximumDevices {
      // Full: make room by dropping a claim of a device this gateway does not hear.
      guard let victim = devices.first(where: { $0.value.lastSample == nil && !$0.value.owned })
      else { return [] }
      devices[victim.key] = nil
    }
    var device = devices[address] ?? Device()
    let sample = Double(Advertisement.measurableRSSI.contains(rssi) ? rssi : -127)
    if let previous = device.rssi, let last = device.lastSample,
      now - last < 3 * configuration.staleAfter
    {
      let weight = 1 - HalfLife.weight(age: now - last, halfLife: configuration.halfLife)
      device.rssi = previous + max(weight, 0.2) * (sample - previous)
    } else {
      device.rssi = sample
    }
    device.lastSample = now
    device.forgotten = false
    device.wantsConnection = wantsConnection
    devices[address] = device
    return decide(address, now: now)
  }

  /// The state of this gateway's link to a device changed.
  ///
  /// - Parameters:
  ///   - address: The device.
  ///   - connected: Whether it is connected now.
  ///   - failed: Whether an attempt just failed.
  ///   - now: The time.
  /// - Returns: What to do.
  public mutating func linkChanged(
    _ address: BluetoothAddress, connected: Bool, failed: Bool, now: Double
  ) -> [Output] {
    guard var device = devices[address] else { return [] }
    device.connected = connected
    if connected {
      device.failures = 0
      device.forgotten = false
    }
    if failed { device.failures += 1 }
    devices[address] = device
    return decide(address, now: now)
  }

  /// Forgets the observations of devices the gateway no longer keeps (evicted, forgotten,
  /// removed), and every entry left with nothing to say. A device it owns and no longer keeps
  /// (not connected) is given up as after repeated failures: its claim is cleared at the next
  /// ``tick(now:)``, so that no claim stays retained for a device no gateway keeps (phones
  /// rotating their addresses would pile them up, and fill ``maximumDevices``).
  ///
  /// - Parameter keeps: Whether the gateway still keeps a device.
  public mutating func prune(keeping keeps: (BluetoothAddress) -> Bool) {
    for (address, device) in devices where device.lastSample != nil && !keeps(address) {
      guard device.owned else {
        forget(address)
        continue
      }
      guard !device.connected else { continue }
      devices[address]?.forgotten = true
      devices[address]?.lastSample = nil
      devices[address]?.rssi = nil
    }
  }

  /// The gateway forgot a device (evicted or removed): its observation goes; a claim is kept
  /// while it is valid.
  ///
  /// - Parameter address: The device.
  public mutating func forget(_ address: BluetoothAddress) {
    guard var device = devices[address] else { return }
    device.rssi = nil
    device.lastSample = nil
    device.challengeSince = nil
    if device.claim == nil || device.claim.map(valid) == false {
      devices[address] = nil
    } else {
      devices[address] = device
    }
  }

  /// Lets time pass: claims whose delay has come, stale observations, RSSI updates.
  ///
  /// - Parameter now: The time.
  /// - Returns: What to do.
  public mutating func tick(now: Double) -> [Output] {
    var outputs: [Output] = []
    // Runs that came online under a running gateway's id and were not answered: the running
    // one is gone.
    for (gateway, pending) in pendingPeers.sorted(by: { $0.key.rawValue < $1.key.rawValue })
    where now - pending.since >= Self.instanceSwitchWait {
      pendingPeers[gateway] = nil
      outputs += changePeer(gateway, to: pending.peer, now: now)
    }
    for address in devices.keys.sorted() { outputs += decide(address, now: now) }
    return outputs
  }

  // MARK: - The rule

  /// Whether this gateway hears the device now.
  func hears(_ device: Device, now: Double) -> Bool {
    guard let last = device.lastSample, device.rssi != nil else { return false }
    return now - last < configuration.staleAfter
  }

  /// The ranked delay before claiming a device: stronger gateways first.
  func rankDelay(_ address: BluetoothAddress, _ device: Device) -> Double {
    let rssi = device.rssi ?? -100
    let rank = min(1, max(0, (-30 - rssi) / 70))
    var delay = configuration.claimDelay * rank + 0.5 * Self.jitter(gateway, address)
    if device.wantsConnection, freeSlots <= 0 { delay += configuration.claimDelay + 0.5 }
    return delay
  }

  /// Recomputes ownership from the claim the broker holds; reports a change.
  mutating func settle(_ address: BluetoothAddress, now: Double) -> [Output] {
    guard var device = devices[address] else { return [] }
    let owner = device.claim.flatMap { valid($0) ? $0.gateway : nil }
    let owns = owner == gateway && device.claim?.instance == instance
    if let owner, owner != gateway { device.formerOwner = owner }
    guard owns != device.owned else {
      devices[address] = device
      return decide(address, now: now)
    }
    device.owned = owns
    var outputs: [Output] = []
    if owns {
      device.published = device.claim
      device.publishedAt = now
      devices[address] = device
      outputs.append(
        .gained(address, from: device.formerOwner, reason: device.claim?.reason ?? ""))
    } else {
      device.published = nil
      devices[address] = device
      let reason =
        owner != nil ? (device.claim?.reason ?? "") : (mayClaim ? "released" : "gateway_state")
      outputs.append(.lost(address, to: owner, reason: reason))
    }
    return outputs + decide(address, now: now)
  }

  /// Decides whether to claim, update or give up the device.
  mutating func decide(_ address: BluetoothAddress, now: Double) -> [Output] {
    guard var device = devices[address], mayClaim else { return [] }
    defer { devices[address] = device }
    let hearing = hears(device, now: now)
    if device.owned {
      device.challengeSince = nil
      if device.failures >= configuration.giveUpAfter || device.forgotten, !device.connected {
        device.failures = 0
        device.forgotten = false
        device.cooldownUntil = now + configuration.cooldown
        device.published = nil
        return [.publish(topic: topics.owner(DeviceID(address: address)), payload: [])]
      }
      return update(address, &device, hearing: hearing, now: now)
    }
    if let cooldown = device.cooldownUntil {
      if now < cooldown { return [] }
      device.cooldownUntil = nil
    }
    if let sent = device.claimSent {
      if now - sent < configuration.echoTimeout { return [] }
      device.claimSent = nil
    }
    guard hearing || device.connected, let reason = challenge(address, device) else {
      device.challengeSince = nil
      return []
    }
    let since = device.challengeSince ?? now
    device.challengeSince = since
    let wait =
      reason == "stronger" || reason == "slots" ? configuration.dwell : rankDelay(address, device)
    guard now - since >= wait else { return [] }
    device.challengeSince = nil
    device.claimSent = now
    return [claim(address, device, hearing: hearing, reason: reason)]
  }

  /// Why this gateway may take the device, or `nil` when it may not.
  func challenge(_ address: BluetoothAddress, _ device: Device) -> String? {
    guard let current = device.claim else { return "unowned" }
    guard valid(current) else {
      return peers[current.gateway]?.online == false ? "owner_offline" : "unowned"
    }
    guard current.gateway != gateway else { return "unowned" }  // ours from an earlier run
    if current.connected { return nil }
    guard let theirs = current.rssi else { return "owner_stale" }
    if let ours = device.rssi, ours >= theirs + configuration.margin { return "stronger" }
    if device.wantsConnection, current.slots == 0, freeSlots > 0 { return "slots" }
    return nil
  }

  /// The owner's claim again when what it says changed enough.
  mutating func update(
    _ address: BluetoothAddress, _ device: inout Device, hearing: Bool, now: Double
  ) -> [Output] {
    // At most one claim a second: a refresh racing another gateway's claim would undo it.
    guard let published = device.published, now - device.publishedAt >= 1 else { return [] }
    let rssi = hearing ? device.rssi : nil
    let slotsGone = (published.slots == 0) != (freeSlots <= 0)
    var changed =
      published.connected != device.connected || (published.rssi == nil) != (rssi == nil)
      || slotsGone
    if !changed, let old = published.rssi, let new = rssi,
      abs(new - old) >= configuration.reportChange,
      now - device.publishedAt >= configuration.reportInterval
    {
      changed = true
    }
    guard changed else { return [] }
    let output = claim(address, device, hearing: hearing, reason: "refresh")
    if case .publish(_, let payload) = output {
      device.published = try? OwnershipClaim(parsing: payload)
    }
    device.publishedAt = now
    return [output]
  }

  func claim(_ address: BluetoothAddress, _ device: Device, hearing: Bool, reason: String)
    -> Output
  {
    let claim = OwnershipClaim(
      gateway: gateway, instance: instance, rssi: hearing ? device.rssi : nil,
      connected: device.connected, slots: max(0, freeSlots), reason: reason)
    return .publish(topic: topics.owner(DeviceID(address: address)), payload: claim.payload)
  }

  // MARK: - Helpers

  /// A number in [0, 1) from the gateway id and the address, the same in every process
  /// (FNV-1a; Swift's `Hasher` is seeded per process).
  static func jitter(_ gateway: GatewayID, _ address: BluetoothAddress) -> Double {
    var hash: UInt64 = 0xcbf2_9ce4_8422_2325
    for byte in gateway.rawValue.utf8 + Array(address.description.utf8) {
      hash ^= UInt64(byte)
      hash &*= 0x0000_0100_0000_01b3
    }
    return Double(hash >> 11) / Double(UInt64(1) << 53)
  }
}
