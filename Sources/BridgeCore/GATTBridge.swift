/// The connection half of the central role, as one pure state machine: connections (C4, C10),
/// the GATT tree (C5), reads (C6), notifications (C7), writes (C8) and the transfer protocol's
/// central side (C9).
///
/// The gateway feeds it every ``CentralEvent``, the device-plane requests of TOPICS.md, the
/// outcome of each connection attempt and GATT operation it asked for, and a tick about once a
/// second; it carries out every returned ``GATTOutput`` in order.
///
/// Guarantees:
/// - **One operation per characteristic at a time.** Requests wait in a bounded queue per
///   characteristic (``Configuration/queueLimit``), so BlueZ's `InProgress` cannot happen
///   through the bridge; different characteristics proceed in parallel.
/// - **One connection attempt at a time**, each with a timeout, at most
///   ``Configuration/maxConnections`` links; failed attempts are retried with a delay chosen
///   by the kind of failure (``retryDelay(after:attempt:)``).
/// - **Notifications re-armed on every connection**: the desired state (retained `/notify`
///   messages, `bluetooth.gatt.notify`, the transfer characteristic) is applied each time the
///   services are resolved.
/// - **Orderly teardown**: notifications are turned off, then the device is disconnected (on a
///   `disconnected` request and on shutdown).
///
/// What it publishes:
///
/// | topic | retain | when |
/// |---|---|---|
/// | `<base>/<dev>/connection` | yes | every state change |
/// | `<base>/<dev>/gatt` | yes | services resolved |
/// | `<base>/<dev>/gatt/<svc>/<chr>` | per `mqtt.retain_values` | a read or a notification |
/// | `<base>/<dev>/gatt/<svc>/<chr>/result` | no | each request's outcome, notification state changes |
/// | `<base>/<dev>/transfer` | no | a complete transfer-protocol text |
/// | `<base>/bridge/<gw>/event` | no | `connected`, `disconnected`, `connect_failed`, `gatt_resolved`, `notification_backlog`, `transfer_aborted`, `transfer_too_long`, `request_error` |
public struct GATTBridge: Sendable {
  /// The settings; every default is the documented configuration default.
  public struct Configuration: Sendable {
    /// Which devices to connect to by itself (`bluetooth.connect.addresses|names|uuids`).
    public var policy: ConnectionPolicy
    /// The most simultaneous connections (`bluetooth.connect.max_connections`, default 5).
    public var maxConnections: Int
    /// Seconds per connection attempt (`bluetooth.connect.timeout`, default 20).
    public var connectTimeout: Double
    /// The first delay before retrying (`bluetooth.connect.retry_min_delay`, default 2).
    public var retryMinDelay: Double
    /// The longest delay between retries (`bluetooth.connect.retry_max_delay`, default 120).
    public var retryMaxDelay: Double
    /// Seconds per GATT operation (`bluetooth.gatt.timeout`, default 15).
    public var operationTimeout: Double
    /// The value format of characteristics no rule names (`bluetooth.gatt.format`).
    public var defaultFormat: ValueFormat
    /// Value formats per characteristic; the first matching rule wins
    /// (`bluetooth.gatt.formats`).
    public var formats: [FormatRule]
    /// Characteristics whose notifications are turned on at every connection
    /// (`bluetooth.gatt.notify`).
    public var notify: [CharacteristicSelector]
    /// How notifications are turned on where no rule says otherwise
    /// (`bluetooth.gatt.notify_method`, default `auto`).
    public var notifyMethod: NotifyMethod
    /// How notifications are turned on per characteristic; the first matching rule wins
    /// (`bluetooth.gatt.notify_methods`).
    public var notifyMethods: [NotifyMethodRule]
    /// When not empty, only these characteristics may be written (`bluetooth.gatt.writable`).
    public var writable: [CharacteristicSelector]
    /// The most operations waiting per characteristic (`bluetooth.gatt.queue_limit`).
    public var queueLimit: Int
    /// The transfer service (`bluetooth.transfer.service`).
    public var transferService: BluetoothUUID
    /// The transfer characteristic (`bluetooth.transfer.characteristic`).
    public var transferCharacteristic: BluetoothUUID
    /// The longest reassembled text in bytes (`bluetooth.transfer.max_bytes`).
    public var transferMaxBytes: Int
    /// Whether values are published retained (`mqtt.retain_values`).
    public var retainValues: Bool
    /// Friendly names by address (`bluetooth.names`), used as `<dev>` in the device's topics.
    public var names: [BluetoothAddress: DeviceID] = [:]

    /// Makes a configuration.
    ///
    /// - Parameters:
    ///   - policy: Which devices to connect to by itself.
    ///   - maxConnections: The most simultaneous connections.
    ///   - connectTimeout: Seconds per connection attempt.
    ///   - retryMinDelay: The first delay before retrying.
    ///   - retryMaxDelay: The longest delay between retries.
    ///   - operationTimeout: Seconds per GATT operation.
    ///   - defaultFormat: The value format of characteristics no rule names.
    ///   - formats: Value formats per characteristic.
    ///   - notify: Characteristics whose notifications are turned on at every connection.
    ///   - notifyMethod: How notifications are turned on where no rule says otherwise.
    ///   - notifyMethods: How notifications are turned on per characteristic.
    ///   - writable: When not empty, the only characteristics that may be written.
    ///   - queueLimit: The most operations waiting per characteristic.
    ///   - transferService: The transfer service.
    ///   - transferCharacteristic: The transfer characteristic.
    ///   - transferMaxBytes: The longest reassembled text.
    ///   - retainValues: Whether values are published retained.
    public init(
      policy: ConnectionPolicy = ConnectionPolicy(), maxConnections: Int = 5,
      connectTimeout: Double = 20, retryMinDelay: Double = 2, retryMaxDelay: Double = 120,
      operationTimeout: Double = 15, defaultFormat: ValueFormat = .hex,
      formats: [FormatRule] = [], notify: [CharacteristicSelector] = [],
      notifyMethod: NotifyMethod = .auto, notifyMethods: [NotifyMethodRule] = [],
      writable: [CharacteristicSelector] = [], queueLimit: Int = 64,
      transferService: BluetoothUUID = GATTBridge.defaultTransferService,
      transferCharacteristic: BluetoothUUID = GATTBridge.defaultTransferCharacteristic,
      transferMaxBytes: Int = 1 << 20, retainValues: Bool = false
    ) {
      self.policy = policy
      self.maxConnections = max(1, maxConnections)
      self.connectTimeout = connectTimeout
      self.retryMinDelay = retryMinDelay
      self.retryMaxDelay = max(retryMinDelay, retryMaxDelay)
      self.operationTimeout = operationTimeout
      self.defaultFormat = defaultFormat
      self.formats = formats
      self.notify = notify
      self.notifyMethod = notifyMethod
      self.notifyMethods = notifyMethods
      self.writable = writable
      self.queueLimit = max(1, queueLimit)
      self.transferService = transferService
      self.transferCharacteristic = transferCharacteristic
      self.transferMaxBytes = max(1, transferMaxBytes)
      self.retainValues = retainValues
    }
  }

  /// Counters for `<base>/bridge/<gw>/health`.
  public struct Counters: Sendable, Hashable {
    /// Connection attempts started.
    public var connectAttempts: UInt64 = 0
    /// Connection attempts that failed.
    public var connectFailures: UInt64 = 0
    /// Links lost without being asked to.
    public var unexpectedDisconnects: UInt64 = 0
    /// Notifications received.
    public var notifications: UInt64 = 0
    /// Times a characteristic's notification channel was found holding a backlog
    /// (``CentralEvent/notificationBacklog(_:waiting:)``): values may have been lost.
    public var notificationBacklogs: UInt64 = 0
    /// GATT operations carried out.
    public var operations: UInt64 = 0
    /// Requests and operations answered with an error.
    public var errors: UInt64 = 0
    /// Transfer-protocol texts published.
    public var transfers: UInt64 = 0
    /// Partial transfer texts discarded (disconnection or size limit).
    public var transfersAborted: UInt64 = 0
  }

  /// The transfer service of Apple's "BTLE Transfer" sample (MISSION.md P2).
  public static let defaultTransferService = BluetoothUUID(
    high: 0xE20A_39F4_73F5_4BC4, low: 0xA12F_17D1_AD07_A961)
  /// The transfer characteristic of Apple's "BTLE Transfer" sample (MISSION.md P2).
  public static let defaultTransferCharacteristic = BluetoothUUID(
    high: 0x0859_0F7E_DB05_467E, low: 0x8757_72F6_FAEB_13D4)
  /// The longest value the ATT protocol allows (Core spec Vol 3 Part F 3.2.9).
  public static let maximumValueLength = 512

  /// The topic map.
  public let topics: Topics
  /// The settings.
  public let configuration: Configuration
  /// The counters.
  public internal(set) var counters = Counters()
  /// Seconds to add to the `now` this bridge is given to get wall-clock time, for the
  /// timestamps in payloads (value `ts`, connection `since`); timers (timeouts, retries) use
  /// `now` alone. See ``DiscoveryBridge/wallClockOffset``.
  public var wallClockOffset: Double = 0

  var links: [BluetoothAddress: Link] = [:]
  var linkByID: [DeviceID: BluetoothAddress] = [:]
  /// Addresses seen recently, in two generations so the memory stays bounded.
  var seen: Set<BluetoothAddress> = []
  var seenBefore: Set<BluetoothAddress> = []
  /// The desired notification state from `/notify` messages (at most ``maxNotifyWishes``).
  var notifyWanted: [CharacteristicPath: Bool] = [:]
  /// The most `/notify` wishes kept, for devices connected or not (the retained `/notify`
  /// messages of a whole fleet's devices fit many times over).
  public static let maxNotifyWishes = 4096
  var queues: [GATTCharacteristicID: [Pending]] = [:]
  var running: [UInt64: Pending] = [:]
  var active: Set<GATTCharacteristicID> = []
  var nextOperation: UInt64 = 1
  var stopping = false
  /// The stack went away (`stackLost`) and no adapter is powered again yet: no attempt starts
  /// (each would fail and run up its link's backoff).
  var stackDown = false
  /// The adapters powered now, so that only one becoming powered cuts retries short.
  var poweredAdapters: Set<String> = []
  /// Names given by `device/rename`, over ``Configuration/names``.
  var renamed: [BluetoothAddress: DeviceID] = [:]
  /// With fleet ownership (``requireOwnership()``), the devices this gateway owns; `nil` when
  /// it owns every device.
  var ownedAddresses: Set<BluetoothAddress>?

  static let seenGeneration = 4096

  /// Makes a bridge with no device yet.
  ///
  /// - Parameters:
  ///   - topics: The topic map.
  ///   - configuration: The settings.
  public init(topics: Topics, configuration: Configuration = Configuration()) {
    self.topics = topics
    self.configuration = configuration
    for address in configuration.policy.addresses.sorted()
    where configuration.policy.selects(address) {
      var link = makeLink(address, now: 0)
      link.selected = true
      links[address] = link
      linkByID[link.id] = address
    }
  }

  /// A device's id: its name (renamed, else configured), else its address id.
  ///
  /// - Parameter address: The device.
  /// - Returns: Its id.
  public func name(of address: BluetoothAddress) -> DeviceID {
    renamed[address] ?? configuration.names[address] ?? DeviceID(address: address)
  }

  /// Gives a device another id (a `device/rename`): its link, its wanted notifications and its
  /// retained state move to the new id; the old id's retained `connection`, `gatt` (and values,
  /// with `mqtt.retain_values`) are cleared.
  ///
  /// - Parameters:
  ///   - address: The device.
  ///   - id: Its new id.
  /// - Returns: What to publish.
  public mutating func rename(_ address: BluetoothAddress, to id: DeviceID) -> [GATTOutput] {
    renamed[address] = id
    let old = links[address]?.id ?? name(of: address)
    // Wishes recorded before the device was linked move too.
    for candidate in Set([old, DeviceID(address: address)]) where candidate != id {
      for (path, wanted) in notifyWanted where path.device == candidate {
        notifyWanted[path] = nil
        var moved = path
        moved.device = id
        notifyWanted[moved] = wanted
      }
    }
    guard var link = links[address], link.id != id else { return [] }
    var outputs = clearRetained(old, tree: link.tree)
    linkByID[old] = nil
    link.id = id
    links[address] = link
    linkByID[id] = address
    outputs.append(connectionOutput(link))
    if let tree = link.tree, link.state == .ready {
      outputs.append(.publish(topics.gatt(id), tree.json, retain: true))
    }
    return outputs
  }

  /// A linked device's retained state as it is now (its `connection`, and its `gatt` when
  /// resolved), to publish again.
  ///
  /// - Parameter address: The device.
  /// - Returns: The publications; none for a device without a link.
  public func currentState(_ address: BluetoothAddress) -> [GATTOutput] {
    guard let link = links[address] else { return [] }
    var outputs = [connectionOutput(link)]
    if let tree = link.tree, link.state == .ready {
      outputs.append(.publish(topics.gatt(link.id), tree.json, retain: true))
    }
    return outputs
  }

  /// Seconds a new owner waits before connecting a device it just gained.
  public static let ownershipSettle = 1.0

  /// Forgets a device (a `device/remove`): its queued and running operations fail with
  /// `not_connected` (a running one's later outcome is ignored),
  /// a live link is disconnected (the stack's `RemoveDevice`, which the discovery half asks for,
  /// ends it too — unless that call fails), its retained `connection` and `gatt` (and values,
  /// with `mqtt.retain_values`) are cleared, and its link goes with any `device/connect`
  /// request; its disconnection then finds nothing to publish. A device the configuration
  /// connects by address (`bluetooth.connect.addresses`) gets a fresh, disconnected link that
  /// connects again once the device is heard (not before: the stack has just forgotten it).
  ///
  /// - Parameters:
  ///   - address: The device.
  ///   - now: The time.
  /// - Returns: What to do; nothing for a device without a link.
  public mutating func remove(_ address: BluetoothAddress, now: Double) -> [GATTOutput] {
    guard let link = links.removeValue(forKey: address) else { return [] }
    linkByID[link.id] = nil
    var outputs = failQueued(
      address: address, code: .notConnected, message: "the device was removed")
    // An operation under way is answered now: its outcome, when the stack gives it, must not
    // publish a value (retained, with `mqtt.retain_values`) after the clearing below.
    for (id, pending) in running.sorted(by: { $0.key < $1.key })
    where pending.operation.characteristic.address == address {
      running[id] = nil
      active.remove(pending.operation.characteristic)
      guard pending.report else { continue }
      outputs += result(
        pending.path, op: pending.operation.kind.name, transaction: pending.transaction,
        reply: pending.reply,
        Failure(CentralError.Code.notConnected.rawValue, "the device was removed"))
    }
    if link.state.isConnected || link.state == .connecting { outputs.append(.disconnect(address)) }
    outputs += clearRetained(link.id, tree: link.tree)
    guard configuration.policy.selects(address) else { return outputs }
    var fresh = makeLink(address, now: now)
    fresh.selected = true
    fresh.known = false
    links[address] = fresh
    linkByID[fresh.id] = address
    return outputs + [connectionOutput(fresh)]
  }

  /// The discovery half forgot a device (unheard for `devices.forget_after`, evicted, removed
  /// by the stack): its link goes too when it is not live, the configuration does not name
  /// the device by address, no `device/connect` asked for it and no operation on it is under
  /// way, with its retained
  /// `connection` and `gatt` cleared. A name or UUID rule matching a rotating address would
  /// otherwise leave a link, and retained topics, behind for every address it ever matched.
  ///
  /// - Parameter address: The device.
  /// - Returns: What to publish; nothing when the link stays or there is none.
  public mutating func forgotten(_ address: BluetoothAddress) -> [GATTOutput] {
    guard let link = links[address], !link.state.isLive, link.request == nil,
      !configuration.policy.addresses.contains(address),
      // An operation's outcome still to come would publish for a link that is gone.
      !running.values.contains(where: { $0.operation.characteristic.address == address })
    else { return [] }
    links[address] = nil
    linkByID[link.id] = nil
    return failQueued(address: address, code: .notConnected, message: "the device was forgotten")
      + clearRetained(link.id, tree: link.tree)
  }

  /// Empty retained payloads for a device id's `connection`, `gatt` and, with
  /// `mqtt.retain_values`, each value of `tree`.
  func clearRetained(_ id: DeviceID, tree: GATTTree?) -> [GATTOutput] {
    var outputs: [GATTOutput] = [
      .publish(topic: topics.connection(id), payload: [], retain: true),
      .publish(topic: topics.gatt(id), payload: [], retain: true),
    ]
    guard configuration.retainValues, let tree else { return outputs }
    for service in tree.services {
      for characteristic in service.characteristics {
        let path = CharacteristicPath(
          device: id, service: service.uuid, characteristic: characteristic.uuid)
        outputs.append(.publish(topic: topics.value(path), payload: [], retain: true))
      }
    }
    return outputs
  }

  /// A new link, owned unless fleet ownership says otherwise.
  func makeLink(_ address: BluetoothAddress, now: Double) -> Link {
    var link = Link(address: address, id: name(of: address), now: now)
    link.owned = ownedAddresses?.contains(address) ?? true
    return link
  }

  /// Turns fleet ownership on: from now on a device is connected only after
  /// ``setOwned(_:_:now:)`` says this gateway owns it.
  public mutating func requireOwnership() {
    guard ownedAddresses == nil else { return }
    ownedAddresses = []
    for address in links.keys { links[address]?.owned = false }
  }

  /// This gateway gained or lost a device (``OwnershipArbiter``): a gained device's retained
  /// connection state is published and it is connected when wanted (its recorded
  /// `connection/set` request and the policy follow it); a lost one is torn down.
  ///
  /// - Parameters:
  ///   - address: The device.
  ///   - owned: Whether this gateway owns it now.
  ///   - now: The time.
  /// - Returns: What to do.
  public mutating func setOwned(_ address: BluetoothAddress, _ owned: Bool, now: Double)
    -> [GATTOutput]
  {
    guard ownedAddresses != nil else { return [] }
    if owned { ownedAddresses?.insert(address) } else { ownedAddresses?.remove(address) }
    guard var link = links[address], link.owned != owned else { return [] }
    link.owned = owned
    if owned {
      // Not at once: two gateways claiming the same device within a broker round trip both
      // own it until the later claim reaches the earlier one (milliseconds); a connection
      // started in between would be a second link to the device.
      link.retryAt = now + Self.ownershipSettle
      link.attempts = 0
      links[address] = link
      return [connectionOutput(link)] + schedule(now: now)
    }
    links[address] = link
    return teardown(address, now: now)
  }

  /// Whether the device's link wants a connection by policy or request (ownership aside).
  ///
  /// - Parameter address: The device.
  /// - Returns: `true` when the gateway would connect it as its owner.
  public func wantsConnection(_ address: BluetoothAddress) -> Bool {
    links[address].map { $0.request ?? $0.selected } ?? false
  }

  /// Free connection slots: the most connections less those up or being made.
  public var freeSlots: Int {
    configuration.maxConnections
      - links.values.filter { $0.state.isConnected || $0.state == .connecting }.count
  }

  /// Whether no device is connected or being connected: after ``shutdown(now:)``, the gateway
  /// may stop once this holds.
  public var isIdle: Bool {
    links.values.allSatisfy { !$0.state.isConnected && $0.state != .connecting }
  }

  /// The connection state of a device, `nil` when the bridge does not track it.
  ///
  /// - Parameter address: The device's address.
  /// - Returns: Its state.
  public func state(of address: BluetoothAddress) -> ConnectionState? { links[address]?.state }

  /// The figures for the health payload: `{"connections":…,"connect_attempts":…,…}`.
  public var healthJSON: JSONObject {
    func number(_ value: UInt64) -> JSONValue { .integer(Int64(clamping: value)) }
    return [
      "connections": .integer(Int64(links.values.filter { $0.state.isConnected }.count)),
      "connect_attempts": number(counters.connectAttempts),
      "connect_failures": number(counters.connectFailures),
      "unexpected_disconnects": number(counters.unexpectedDisconnects),
      "notifications": number(counters.notifications),
      "notification_backlogs": number(counters.notificationBacklogs),
      "gatt_operations": number(counters.operations),
      "gatt_errors": number(counters.errors),
      "gatt_queued": .integer(Int64(queues.values.reduce(0) { $0 + $1.count })),
      "transfers": number(counters.transfers),
      "transfers_aborted": number(counters.transfersAborted),
    ]
  }

  /// Lets time pass: retries whose time has come start.
  ///
  /// - Parameter now: The time, in seconds since the Unix epoch.
  /// - Returns: What to do.
  public mutating func tick(now: Double) -> [GATTOutput] {
    schedule(now: now)
  }

  /// Starts the orderly teardown of every link: notifications off, then disconnect; no new
  /// connection starts afterwards. Call ``tick(now:)`` and feed results until ``isIdle``.
  ///
  /// - Parameter now: The time.
  /// - Returns: What to do.
  public mutating func shutdown(now: Double) -> [GATTOutput] {
    stopping = true
    var outputs: [GATTOutput] = []
    for address in links.keys.sorted() { outputs += teardown(address, now: now) }
    return outputs
  }

  /// The links still up (for a last forced disconnect when the teardown takes too long).
  public var connectedAddresses: [BluetoothAddress] {
    links.values.filter { $0.state.isConnected || $0.state == .connecting }.map(\.address)
      .sorted()
  }
}
