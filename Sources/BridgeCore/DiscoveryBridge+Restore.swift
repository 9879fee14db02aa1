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
  /// it besides its fixed ones (Home Assistant configs, retained values).
  struct Leftovers: Sendable {
    /// Home Assistant configs found, to clear when the device is forgotten.
    var topics: Set<TopicName> = []
    /// Retained values found (`<base>/<dev>/gatt/<svc>/<chr>`), to clear when the device is
    /// forgotten unless this run keeps a link to it (``takeValueLeftovers(_:)``).
    var values: Set<TopicName> = []
    /// The device was forgotten: what is found from now on is cleared at once.
    var forgotten = false
  }

  /// The most retained topics remembered for one restored device (``leftover(_:topic:payload:)``).
  public static let leftoverLimit = 256

  /// Takes back the devices an earlier run of this gateway published: the retained
  /// `<base>/bridge/<gw>/devices` it left, read once at start.
  ///
  /// Without this, a device that is not heard again after a restart would keep what the
  /// earlier run left retained — `availability` `online`, `presence` `present`, its
  /// `connection` and `gatt`, its Home Assistant entities — for good, since no run knows it.
  /// Restored, it is in the devices list again (`"restored":true`) and goes offline and is
  /// forgotten on the usual schedule: a device listed `online` counts as seen now (the list
  /// is not published on every sighting, so its `last_seen` may be old for a device that was
  /// there all along), one listed `offline` as seen at its `last_seen` (never later than now).
  /// Forgetting it clears its `availability` and `presence`, what ``leftover(_:topic:payload:)``
  /// found, and (by the connection half, or here without one) its `connection` and `gatt`.
  /// A device unheard in this run says `away` when it goes offline (it has no presence track).
  ///
  /// Taken are the entries this gateway owned (`owner` is this gateway, or `null` for one a
  /// run of it restored and had not forgotten yet) that are not known already and fit the
  /// registry without evicting anything. An entry whose id differs from the one this run gives
  /// the device (its friendly name changed meanwhile) has the old id's fixed topics cleared at
  /// once, unless another device now has that id. A malformed list or entry is reported in a
  /// `devices_restored` event (`invalid`) and otherwise skipped.
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
      guard let listed = Self.restoredRecord(entry, now: now, wallClockOffset: wallClockOffset)
      else {
        invalid += 1
        continue
      }
      let owner = entry["owner"]
      guard
        owner?.stringValue == topics.gateway.rawValue
          || (owner == .null && entry["restored"] == true),
        leftovers[listed.record.address] == nil,
        // A device heard already keeps its record; what the earlier run left is its too.
        let record = registry.markRestored(listed.record.address)
          ?? registry.restore(listed.record)
      else { continue }
      var device = RestoredDevice(address: record.address, id: record.id)
      // (With fleet ownership an old name's topics are not this gateway's to judge: another
      // gateway may publish under it.)
      if listed.id != record.id, registry.record(for: listed.id) == nil,
        !registry.naming.friendlyNames.values.contains(listed.id), owners == nil
      {
        device.previousID = listed.id
        outputs += fixedTopics(listed.id).map { .publish(topic: $0, payload: [], retain: true) }
      }
      leftovers[record.address] = Leftovers()
      restored.append(device)
    }
    if !restored.isEmpty { devicesChanged = true }
    holdsDevicesList = false
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

  /// A retained message an earlier run may have left for a restored device: one of its Home
  /// Assistant configs (`<prefix>/<component>/gatt2mqtt_<MAC>/<object>/config`, taken only
  /// when its `via_device` is this gateway: with several gateways hearing a device, the others
  /// publish the same node) or retained values (`<base>/<dev>/gatt/<svc>/<chr>`). Kept and
  /// cleared when the device is forgotten; cleared at once when it is forgotten already, or
  /// when it is under an id the device no longer has. Nothing is taken while another gateway
  /// owns the device (fleet ownership), nor a topic that is another device's.
  ///
  /// - Parameters:
  ///   - address: The restored device.
  ///   - topic: The retained topic found.
  ///   - payload: Its payload.
  /// - Returns: What to publish now.
  public mutating func leftover(_ address: BluetoothAddress, topic: TopicName, payload: [UInt8])
    -> [BridgeOutput]
  {
    guard var found = leftovers[address], !payload.isEmpty, !othersOwn(address) else { return [] }
    // Heard again after it was forgotten: a device of this run, its topics this run's.
    if let record = registry[address], !record.restored { return [] }
    let name = topic.rawValue
    let clear: [BridgeOutput] = [.publish(topic: topic, payload: [], retain: true)]
    let isValue = name.hasPrefix(topics.base + "/")
    if isValue {
      // `<base>/<dev>/gatt/<svc>/<chr>`: not a topic of another device whose name starts with
      // `<dev>/gatt/` (`kitchen/gatt/x/availability`).
      guard let cut = name.lastIndex(of: "/"),
        let owner = try? DeviceID(
          friendlyName: String(name[..<cut].dropFirst(topics.base.count + 1))),
        registry.record(for: owner) == nil,
        !registry.naming.friendlyNames.values.contains(owner)
      else { return [] }
      if let record = registry[address], !name.hasPrefix(topics.gatt(record.id).rawValue + "/") {
        // Under an id the device no longer has (not judged with fleet ownership: another
        // gateway may publish under it).
        return owners == nil ? clear : []
      }
    } else {
      guard case .object(let config) = try? JSONValue.parse(payload),
        config["device"]?["via_device"]?.stringValue
          == "gatt2mqtt_bridge_\(topics.gateway.rawValue)",
        // With fleet ownership only a config whose device the ownership filter can tell.
        owners == nil || homeAssistant != nil,
        // One this run publishes itself.
        homeAssistant?.configTopics(of: address).contains(topic) != true
      else { return [] }
    }
    if found.forgotten || registry[address] == nil { return clear }
    guard found.topics.count + found.values.count < Self.leftoverLimit else { return [] }
    if isValue {
      found.values.insert(topic)
    } else {
      found.topics.insert(topic)
    }
    leftovers[address] = found
    return []
  }

  /// The search for leftovers is over: the restored devices forgotten meanwhile are let go.
  public mutating func leftoverSearchEnded() {
    leftovers = leftovers.filter { !$0.value.forgotten }
  }

  /// The clears of what an earlier run left for a device being forgotten: its Home Assistant
  /// configs, and without a connection half its `connection`, `gatt` and retained values (with
  /// one, ``takeValueLeftovers(_:)`` hands them over: they are this run's while it keeps a
  /// link). Nothing for a device this run did not restore, or one another gateway owns now.
  mutating func leftoverClears(_ record: DeviceRecord) -> [BridgeOutput] {
    guard let found = leftovers[record.address], !found.forgotten else { return [] }
    leftovers[record.address] = Leftovers(values: found.values, forgotten: true)
    guard !othersOwn(record.address) else { return [] }
    var clears = found.topics.sorted()
    if !tracksForgotten {
      clears =
        [topics.connection(record.id), topics.gatt(record.id)] + found.values.sorted() + clears
      leftovers[record.address]?.values = []
    }
    return clears.map { .publish(topic: $0, payload: [], retain: true) }
  }

  /// The retained values an earlier run left for a restored device just forgotten, for the
  /// connection half to clear when it keeps no link to it; taken once.
  ///
  /// - Parameter address: The device.
  /// - Returns: The value topics.
  mutating func takeValueLeftovers(_ address: BluetoothAddress) -> [TopicName] {
    guard let values = leftovers[address]?.values, leftovers[address]?.forgotten == true else {
      return []
    }
    leftovers[address]?.values = []
    return othersOwn(address) ? [] : values.sorted()
  }

  /// Whether another gateway owns the device now (fleet ownership): what an earlier run left
  /// for it is the owner's state now.
  func othersOwn(_ address: BluetoothAddress) -> Bool {
    guard let owner = owners?[address] else { return false }
    return owner != topics.gateway
  }

  /// A device id's topics that are not one per characteristic.
  func fixedTopics(_ id: DeviceID) -> [TopicName] {
    [topics.availability(id), topics.presence(id), topics.connection(id), topics.gatt(id)]
  }

  /// One entry of a devices list as a record, with the id it was listed under; `nil` when it
  /// lacks a valid `address` or `id`, or its id is another device's address id.
  private static func restoredRecord(_ entry: JSONValue, now: Double, wallClockOffset: Double)
    -> (record: DeviceRecord, id: DeviceID)?
  {
    guard let text = entry["address"]?.stringValue,
      let address = try? BluetoothAddress(text),
      let idText = entry["id"]?.stringValue,
      let id = idText == DeviceID(address: address).rawValue
        ? DeviceID(address: address) : try? DeviceID(friendlyName: idText),
      (try? BluetoothAddress(idText)).map({ $0 == address }) ?? true
    else { return nil }
    let online = entry["availability"]?.stringValue != "offline"
    // An offline device was unseen since its `last_seen` (the list went out when it went
    // offline), on this run's clock and never later than now; an online one was there when
    // the list last went out, maybe long before the earlier run stopped: seen now.
    var lastSeen = now
    if !online, let milliseconds = entry["last_seen"]?.doubleValue, milliseconds.isFinite {
      lastSeen = min(now, milliseconds / 1000 - wallClockOffset)
    }
    var name: [UInt8]?
    if entry["name_hex"] == nil, let text = entry["name"]?.stringValue { name = Array(text.utf8) }
    let record = DeviceRecord(
      id: id, address: address,
      addressType: entry["addr_type"]?.stringValue.flatMap(Advertisement.AddressType.init)
        ?? .public,
      name: name, rssi: entry["rssi"]?.integerValue.flatMap { Int(exactly: $0) },
      firstSeen: lastSeen, lastSeen: lastSeen, connection: .disconnected, online: online)
    return (record, id)
  }
}
