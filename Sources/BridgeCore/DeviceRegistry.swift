/// The single source of truth about devices (C3): which devices exist, their ids, names, last
/// RSSI, connection state and availability.
///
/// Memory is bounded: at most ``capacity`` devices. Random addresses keep appearing (phones
/// rotate theirs every few minutes), so when a new device arrives at capacity the device seen
/// longest ago that is not connected (nor being connected) is evicted (counted in ``evictions``); if every device is
/// connected or being connected the newcomer is not admitted (counted in ``refusals``).
///
/// Timing, with `offline_after` and `forget_after` measured from ``DeviceRecord/lastSeen``
/// (connected devices are exempt from both; a device being connected is never forgotten or
/// evicted, ``ConnectionState/isLive``):
/// - unseen for ``offlineAfter`` seconds: offline (``expire(now:)`` reports it);
/// - unseen for ``forgetAfter`` seconds: forgotten;
/// - seen again while offline: online again (``observe(_:now:)`` reports it).
public struct DeviceRegistry: Sendable {
  /// What one ``observe(_:now:)`` changed.
  public struct Observation: Sendable, Hashable {
    /// The device's record after the advertisement.
    public var record: DeviceRecord
    /// Whether the device was not in the registry before.
    public var isNew: Bool
    /// Whether the device went from offline to online.
    public var cameOnline: Bool
    /// Whether a field of the devices list other than RSSI and last-seen time changed.
    public var listChanged: Bool
    /// Devices evicted to make room, at most one.
    public var evicted: [DeviceRecord]
  }

  /// What one ``expire(now:)`` changed.
  public struct Expiry: Sendable, Hashable {
    /// Devices that went offline, sorted by id.
    public var wentOffline: [DeviceRecord]
    /// Devices forgotten, sorted by id.
    public var forgotten: [DeviceRecord]
  }

  /// Seconds unseen after which a device is offline (`devices.offline_after`, default 90).
  public let offlineAfter: Double
  /// Seconds unseen after which a device is forgotten (`devices.forget_after`, default 900).
  public let forgetAfter: Double
  /// The most devices kept (`devices.capacity`, default 1000).
  public let capacity: Int
  /// How devices get their ids.
  public private(set) var naming: DeviceNaming
  /// Devices evicted to make room since the registry was made.
  public private(set) var evictions: UInt64 = 0
  /// New devices not admitted because every kept device was connected.
  public private(set) var refusals: UInt64 = 0

  private var byAddress: [BluetoothAddress: DeviceRecord] = [:]
  private var addressesByID: [DeviceID: BluetoothAddress] = [:]

  /// Makes an empty registry.
  ///
  /// - Parameters:
  ///   - offlineAfter: Seconds unseen after which a device is offline.
  ///   - forgetAfter: Seconds unseen after which a device is forgotten; at least `offlineAfter`.
  ///   - capacity: The most devices kept; raised to 1 when lower.
  ///   - naming: How devices get their ids.
  public init(
    offlineAfter: Double = 90, forgetAfter: Double = 900, capacity: Int = 1000,
    naming: DeviceNaming = DeviceNaming()
  ) {
    self.offlineAfter = offlineAfter
    self.forgetAfter = max(forgetAfter, offlineAfter)
    self.capacity = max(1, capacity)
    self.naming = naming
  }

  /// The number of devices.
  public var count: Int { byAddress.count }

  /// The device with this address.
  ///
  /// - Parameter address: The device's address.
  public subscript(address: BluetoothAddress) -> DeviceRecord? { byAddress[address] }

  /// The device with this id.
  ///
  /// - Parameter id: The device's id.
  /// - Returns: Its record, or `nil`.
  public func record(for id: DeviceID) -> DeviceRecord? {
    addressesByID[id].flatMap { byAddress[$0] }
  }

  /// Every device's address, in no order.
  public var addresses: Dictionary<BluetoothAddress, DeviceRecord>.Keys { byAddress.keys }

  /// All devices, sorted by id.
  public var records: [DeviceRecord] {
    addressesByID.keys.sorted().compactMap { addressesByID[$0].flatMap { byAddress[$0] } }
  }

  /// Registers a sighting: adds the device or updates it, and brings it online.
  ///
  /// A name, once seen, is kept when later advertisements (which often lack the scan
  /// response) carry none.
  ///
  /// - Parameters:
  ///   - advertisement: What the device advertised.
  ///   - now: The time, in seconds since the Unix epoch.
  /// - Returns: What changed, or `nil` when the device is new and could not be admitted.
  public mutating func observe(_ advertisement: Advertisement, now: Double) -> Observation? {
    let address = advertisement.address
    // A known device (nearly every advertisement): updated in place, one look-up.
    if let index = byAddress.index(forKey: address) {
      let (cameOnline, listChanged) = Self.refresh(&byAddress.values[index], advertisement, now)
      return Observation(
        record: byAddress.values[index], isNew: false, cameOnline: cameOnline,
        listChanged: listChanged, evicted: [])
    }
    var evicted: [DeviceRecord] = []
    if byAddress.count >= capacity {
      guard let victim = evictionCandidate() else {
        refusals += 1
        return nil
      }
      evicted.append(remove(victim)!)
      evictions += 1
    }
    let id = naming.id(for: address)
    let record = DeviceRecord(
      id: id, address: address, addressType: advertisement.addressType, name: advertisement.name,
      rssi: advertisement.rssi, firstSeen: now, lastSeen: now)
    byAddress[address] = record
    addressesByID[id] = address
    return Observation(
      record: record, isNew: true, cameOnline: true, listChanged: true, evicted: evicted)
  }

  /// Takes back a device an earlier run of the gateway knew (its retained devices list), so
  /// that it goes offline and is forgotten on the usual schedule, counted from `record`'s
  /// ``DeviceRecord/lastSeen``; it is marked ``DeviceRecord/restored``. Nothing is evicted for
  /// it: a device already known, or one that finds the registry full, is not taken; its id
  /// comes from ``naming``.
  ///
  /// - Parameter record: The device as the earlier run left it.
  /// - Returns: The record taken, or `nil` when it was not.
  public mutating func restore(_ record: DeviceRecord) -> DeviceRecord? {
    guard byAddress[record.address] == nil, byAddress.count < capacity else { return nil }
    var record = record
    record.id = naming.id(for: record.address)
    record.restored = true
    guard addressesByID[record.id] == nil else { return nil }
    byAddress[record.address] = record
    addressesByID[record.id] = record.address
    return record
  }

  /// Marks a known device ``DeviceRecord/restored``: an earlier run left retained state for it
  /// too (``DiscoveryBridge/restore(previous:now:)``).
  ///
  /// - Parameter address: The device's address.
  /// - Returns: Its record, or `nil` for an unknown device.
  public mutating func markRestored(_ address: BluetoothAddress) -> DeviceRecord? {
    byAddress[address]?.restored = true
    return byAddress[address]
  }

  /// Updates a known device's record from its advertisement.
  ///
  /// - Returns: Whether it came back online, and whether what the devices list shows changed.
  private static func refresh(
    _ record: inout DeviceRecord, _ advertisement: Advertisement, _ now: Double
  ) -> (cameOnline: Bool, listChanged: Bool) {
    let cameOnline = !record.online
    var listChanged = cameOnline || record.addressType != advertisement.addressType
    record.addressType = advertisement.addressType
    if let name = advertisement.name, name != record.name {
      record.name = name
      listChanged = true
    }
    if let rssi = advertisement.rssi { record.rssi = rssi }
    record.lastSeen = max(record.lastSeen, now)
    record.online = true
    return (cameOnline, listChanged)
  }

  /// Sets a known device's connection state; connection activity counts as a sighting.
  ///
  /// - Parameters:
  ///   - address: The device's address.
  ///   - state: The new connection state.
  ///   - now: The time, in seconds since the Unix epoch.
  /// - Returns: The updated record, or `nil` for an unknown device.
  public mutating func setConnection(
    _ address: BluetoothAddress, _ state: ConnectionState, now: Double
  ) -> DeviceRecord? {
    guard var record = byAddress[address] else { return nil }
    record.connection = state
    record.lastSeen = max(record.lastSeen, now)
    if state.isConnected { record.online = true }
    byAddress[address] = record
    return record
  }

  /// Marks devices unseen for ``offlineAfter`` seconds offline and forgets devices unseen for
  /// ``forgetAfter`` seconds; connected devices are left alone. Call it about once a second.
  ///
  /// - Parameter now: The time, in seconds since the Unix epoch.
  /// - Returns: The devices that went offline and the ones forgotten.
  public mutating func expire(now: Double) -> Expiry {
    var wentOffline: [DeviceRecord] = []
    var forgotten: [BluetoothAddress] = []
    for (address, record) in byAddress
    where !record.connection.isConnected && record.subscriber == nil {
      let unseen = now - record.lastSeen
      if unseen >= forgetAfter, !record.isLive {
        forgotten.append(address)
      } else if record.online, unseen >= offlineAfter {
        byAddress[address]?.online = false
        wentOffline.append(byAddress[address]!)
      }
    }
    let removed = forgotten.compactMap { remove($0) }
    return Expiry(
      wentOffline: wentOffline.sorted { $0.id < $1.id }, forgotten: removed.sorted { $0.id < $1.id }
    )
  }

  /// A central subscribed to the gateway's transfer characteristic, or unsubscribed (the
  /// peripheral role): it is admitted when new (evicting as ``observe(_:now:)`` does), online,
  /// and seen now.
  ///
  /// - Parameters:
  ///   - address: The central's address.
  ///   - subscriber: Its subscription, or `nil` when it unsubscribed.
  ///   - now: The time.
  /// - Returns: The record before (`nil` when new) and after, and the device evicted for it;
  ///   `nil` when a new central could not be admitted, or an unknown one unsubscribed.
  public mutating func setSubscriber(
    _ address: BluetoothAddress, _ subscriber: DeviceRecord.Subscriber?, now: Double
  ) -> (before: DeviceRecord?, after: DeviceRecord, evicted: DeviceRecord?)? {
    if var record = byAddress[address] {
      let before = record
      record.subscriber = subscriber
      record.lastSeen = max(record.lastSeen, now)
      record.online = true
      byAddress[address] = record
      return (before, record, nil)
    }
    let id = naming.id(for: address)
    guard subscriber != nil, addressesByID[id] == nil else { return nil }
    var evicted: DeviceRecord?
    if byAddress.count >= capacity {
      guard let victim = evictionCandidate() else {
        refusals += 1
        return nil
      }
      evicted = remove(victim)
      evictions += 1
    }
    // The stack does not say the type; centrals (phones) connect from resolvable private
    // addresses (`01` in the top bits).
    var record = DeviceRecord(
      id: id, address: address, addressType: address.value >> 46 == 0b01 ? .random : .public,
      name: nil, rssi: nil, firstSeen: now, lastSeen: now)
    record.subscriber = subscriber
    byAddress[address] = record
    addressesByID[id] = address
    return (nil, record, evicted)
  }

  /// Gives a device another id (a `device/rename`): its record, when it has one, and the id it
  /// gets if it is forgotten and seen again.
  ///
  /// - Parameters:
  ///   - address: The device's address.
  ///   - id: Its new id.
  /// - Returns: The record before and after, or `nil` when the registry does not hold the device.
  /// - Throws: The address of the device that already has the id.
  public mutating func rename(_ address: BluetoothAddress, to id: DeviceID) throws(RenameConflict)
    -> (before: DeviceRecord, after: DeviceRecord)?
  {
    if let other = addressesByID[id], other != address { throw RenameConflict(holder: other) }
    if id == DeviceID(address: address) {
      naming.friendlyNames[address] = nil
    } else {
      naming.friendlyNames[address] = id
    }
    guard var record = byAddress[address] else { return nil }
    let before = record
    addressesByID[record.id] = nil
    record.id = id
    addressesByID[id] = address
    byAddress[address] = record
    return (before, record)
  }

  /// The device that holds an id another device was to get.
  public struct RenameConflict: Error, Sendable, Hashable {
    /// The device that has the id.
    public var holder: BluetoothAddress
  }

  /// Forgets a device now (for example on a `device/remove` request).
  ///
  /// - Parameter address: The device's address.
  /// - Returns: The forgotten record, or `nil` for an unknown device.
  @discardableResult
  public mutating func remove(_ address: BluetoothAddress) -> DeviceRecord? {
    guard let record = byAddress.removeValue(forKey: address) else { return nil }
    addressesByID[record.id] = nil
    return record
  }

  /// The payload of `<base>/bridge/<gw>/devices`: an array of ``DeviceRecord/json(owner:)``
  /// sorted by id.
  ///
  /// - Parameters:
  ///   - owner: This gateway.
  ///   - owners: With fleet ownership, each device's owner (`null` in the list when it has
  ///     none); `nil` when this gateway owns every device.
  ///   - wallClockOffset: Seconds to add to the registry's (monotonic) times to get wall time.
  /// - Returns: The JSON value.
  public func json(
    owner: GatewayID, owners: [BluetoothAddress: GatewayID]? = nil, wallClockOffset: Double = 0
  ) -> JSONValue {
    guard let owners else {
      return .array(records.map { $0.json(owner: owner, wallClockOffset: wallClockOffset) })
    }
    return .array(
      records.map { record in
        var json = record.json(owner: owner, wallClockOffset: wallClockOffset)
        if case .object(var object) = json {
          object["owner"] = owners[record.address].map { .string($0.rawValue) } ?? .null
          json = .object(object)
        }
        return json
      })
  }

  /// The address of the device seen longest ago that is not connected (ties: lowest address).
  private func evictionCandidate() -> BluetoothAddress? {
    var best: DeviceRecord?
    for record in byAddress.values where !record.isLive {
      if let current = best,
        (current.lastSeen, current.address) <= (record.lastSeen, record.address)
      {
        continue
      }
      best = record
    }
    return best?.address
  }
}
