extension DiscoveryBridge {
  /// A device taken back from an earlier run's devices list (``restore(previous:now:)``).
  public struct RestoredDevice: Sendable, Hashable {
    /// The device's address.
    public var address: BluetoothAddress
    /// Its id in this run.
    public var id: DeviceID
    /// Its id in the earlier run, when that was another (a friendly name changed meanwhile).
    public var previousID: DeviceID?
  }

  /// What an earlier run left behind for one restored device: the retained topics found for
  /// it besides its fixed ones (Home Assistant configs, retained values), cleared when it is
  /// forgotten.
  struct Leftovers: Sendable {
    var topics: Set<TopicName> = []
  }

  /// The most retained topics remembered for one restored device (``leftover(_:topic:)``).
  public static let leftoverLimit = 256

  /// Takes back the devices an earlier run of this gateway published: the retained
  /// `<base>/bridge/<gw>/devices` it left, read once at start.
  ///
  /// Without this, a device that is not heard again after a restart would keep what the
  /// earlier run left retained — `availability` `online`, `presence` `present`, its
  /// `connection` and `gatt`, its Home Assistant entities — for good, since no run knows it.
  /// Restored, it is in the devices list again, goes offline ``DeviceRegistry/offlineAfter``
  /// seconds and is forgotten ``DeviceRegistry/forgetAfter`` seconds after it was last seen
  /// (the list's `last_seen`, never later than now), and forgetting it clears its
  /// `availability`, `presence`, `connection`, `gatt` and what ``leftover(_:topic:)`` found.
  /// A device unheard in this run says `away` when it goes offline (it has no presence track).
  ///
  /// Taken are the entries this gateway owned (`owner` is this gateway) that are not known
  /// already and fit the registry without evicting anything. An entry whose id differs from
  /// the one this run gives the device (its friendly name changed meanwhile) has the old id's
  /// fixed topics cleared at once, unless another device now has that id. A malformed list or
  /// entry is reported in a `devices_restored` event (`invalid`) and otherwise skipped.
  ///
  /// - Parameters:
  ///   - payload: The retained devices list.
  ///   - now: The time (monotonic, see ``wallClockOffset``).
  /// - Returns: What to publish, and the devices restored (to look for their leftovers).
  public mutating func restore(previous payload: [UInt8], now: Double) -> (
    outputs: [BridgeOutput], restored: [RestoredDevice]
  ) {
    var outputs: [BridgeOutput] = []
    var restored: [RestoredDevice] = []
    var invalid = 0
    var problem: String?
    var entries: [JSONValue] = []
    do {
      let list = try JSONValue.parse(payload)
      if case .array(let values) = list {
        entries = values
      } else {
        problem = "the devices list is not a JSON array"
      }
    } catch {
      problem = "the devices list is not JSON: \(error)"
    }
    for entry in entries {
      guard let record = Self.restoredRecord(entry, now: now, wallClockOffset: wallClockOffset)
      else {
        invalid += 1
        continue
      }
      guard entry["owner"]?.stringValue == topics.gateway.rawValue,
        let taken = registry.restore(record.record)
      else { continue }
      var device = RestoredDevice(address: taken.address, id: taken.id)
      if record.id != taken.id, registry.record(for: record.id) == nil,
        !registry.naming.friendlyNames.values.contains(record.id)
      {
        device.previousID = record.id
        for topic in [
          topics.availability(record.id), topics.presence(record.id),
          topics.connection(record.id), topics.gatt(record.id),
        ] {
          outputs.append(.publish(topic: topic, payload: [], retain: true))
        }
      }
      leftovers[taken.address] = Leftovers()
      restored.append(device)
    }
    if !restored.isEmpty { devicesChanged = true }
    var data: JSONObject = ["devices": .integer(Int64(restored.count))]
    if invalid > 0 { data["invalid"] = .integer(Int64(invalid)) }
    if let problem { data["message"] = .string(problem) }
    outputs.append(
      .publish(
        topic: topics.bridgeEvent,
        payload: BridgePayload.event(type: "devices_restored", data: data),
        retain: false))
    return (outputs, restored)
  }

  /// A retained topic an earlier run left for a restored device (one of its Home Assistant
  /// configs or retained values, which its devices list does not name): cleared when the device
  /// is forgotten. One under an id the device no longer has is cleared at once.
  ///
  /// - Parameters:
  ///   - address: The restored device.
  ///   - topic: The retained topic found.
  /// - Returns: What to publish now.
  public mutating func leftover(_ address: BluetoothAddress, topic: TopicName) -> [BridgeOutput] {
    guard let record = registry[address], leftovers[address] != nil else { return [] }
    let base = topics.gatt(record.id).rawValue + "/"
    if topic.rawValue.hasPrefix(topics.base + "/"), !topic.rawValue.hasPrefix(base) {
      return [.publish(topic: topic, payload: [], retain: true)]
    }
    guard leftovers[address]!.topics.count < Self.leftoverLimit else { return [] }
    leftovers[address]!.topics.insert(topic)
    return []
  }

  /// The clears of what an earlier run left for a device being forgotten: its `connection`,
  /// `gatt` and leftovers (nothing for a device this run did not restore).
  mutating func leftoverClears(_ record: DeviceRecord) -> [BridgeOutput] {
    guard let found = leftovers.removeValue(forKey: record.address) else { return [] }
    let fixed = [topics.connection(record.id), topics.gatt(record.id)]
    return (fixed + found.topics.subtracting(fixed).sorted()).map {
      .publish(topic: $0, payload: [], retain: true)
    }
  }

  /// One entry of a devices list as a record, with the id it was listed under; `nil` when it
  /// lacks a valid `address` or `id`.
  private static func restoredRecord(_ entry: JSONValue, now: Double, wallClockOffset: Double)
    -> (record: DeviceRecord, id: DeviceID)?
  {
    guard let text = entry["address"]?.stringValue,
      let address = try? BluetoothAddress(text),
      let idText = entry["id"]?.stringValue,
      let id = idText == DeviceID(address: address).rawValue
        ? DeviceID(address: address) : try? DeviceID(friendlyName: idText)
    else { return nil }
    // The earlier run's wall-clock time on this run's clock, never later than now (a clock
    // set back at boot would otherwise keep the device for longer than forget_after).
    var lastSeen = now
    if let milliseconds = entry["last_seen"]?.doubleValue, milliseconds.isFinite {
      lastSeen = min(now, milliseconds / 1000 - wallClockOffset)
    }
    var name: [UInt8]?
    if entry["name_hex"] == nil, let text = entry["name"]?.stringValue { name = Array(text.utf8) }
    let record = DeviceRecord(
      id: id, address: address,
      addressType: entry["addr_type"]?.stringValue.flatMap(Advertisement.AddressType.init)
        ?? .public,
      name: name, rssi: entry["rssi"]?.integerValue.flatMap { Int(exactly: $0) },
      firstSeen: lastSeen, lastSeen: lastSeen, connection: .disconnected,
      online: entry["availability"]?.stringValue != "offline")
    return (record, id)
  }
}
