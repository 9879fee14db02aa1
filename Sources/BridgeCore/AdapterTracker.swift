/// Tracks the local adapters (C1): publishes `<base>/bridge/<gw>/adapters`, reports state changes
/// and recoveries as bridge events, and decides when discovery starts and stops so that scanning
/// happens only on powered adapters.
///
/// Feed it every adapter snapshot the ``BLECentral`` reports; forward the returned outputs.
///
/// Events on `<base>/bridge/<gw>/event` (`data` holds `"adapter"`, the adapter's id, except
/// for the two events of the stack as a whole):
/// - `adapter_added`: first seen (`state`);
/// - `adapter_state`: the state changed (`state`, `previous`);
/// - `adapter_recovered`: back after being ``AdapterInfo/State/unavailable`` or
///   ``AdapterInfo/State/resetting`` (`state`, `previous`);
/// - `adapter_removed`: gone; it stays in the list as ``AdapterInfo/State/unavailable``;
/// - `bluetooth_unavailable`: the stack itself went away (`adapters`: the ids), all unavailable;
/// - `bluetooth_refused`: the stack runs but the system bus denies the gateway's user
///   (`error` `access_denied`, `message` saying what to install, `detail` the D-Bus error);
/// - `discovery_failed`: starting discovery failed (`error`, `message`); retried on the next
///   adapter change or ``setScanning(_:)``.
public struct AdapterTracker: Sendable {
  /// The adapters by id, including ones no longer present.
  public private(set) var adapters: [String: AdapterInfo] = [:]
  /// The discovery filter while scanning is wanted, `nil` while it is not.
  public private(set) var scanning: DiscoveryFilter?
  /// The adapters to scan on; empty for all.
  public let allowedAdapters: Set<String>

  private let topics: Topics
  /// Adapters this tracker asked to discover (and not asked to stop since).
  private var requested: Set<String> = []
  /// Requested adapters that have reported discovering since the request.
  private var confirmed: Set<String> = []
  /// Why the stack will not serve the gateway, from ``stackRefused(_:)`` until an adapter is
  /// reported again.
  public private(set) var refusal: CentralError?

  /// Makes a tracker that knows no adapter yet.
  ///
  /// - Parameters:
  ///   - topics: The topic map.
  ///   - scanning: The filter to scan with from the start, or `nil` to wait for a `scan` request.
  ///   - allowedAdapters: The adapter ids to scan on; empty for every adapter.
  public init(topics: Topics, scanning: DiscoveryFilter?, allowedAdapters: Set<String> = []) {
    self.topics = topics
    self.scanning = scanning
    self.allowedAdapters = allowedAdapters
  }

  /// Takes in a new snapshot of one adapter (added or changed).
  ///
  /// - Parameter adapter: The adapter as the stack reports it now.
  /// - Returns: The adapters list and events to publish (nothing when nothing published
  ///   changed) and the discovery commands it calls for.
  public mutating func update(_ adapter: AdapterInfo) -> [BridgeOutput] {
    refusal = nil
    let previous = adapters[adapter.id]
    adapters[adapter.id] = adapter
    var outputs: [BridgeOutput] = []
    let state = adapter.state
    if let previous {
      let before = previous.state
      if before != state {
        let recovered =
          (before == .unavailable && adapter.present)
          || (before == .resetting && state == .poweredOn)
        outputs.append(
          event(
            recovered ? "adapter_recovered" : "adapter_state", adapter.id,
            ["state": .string(state.rawValue), "previous": .string(before.rawValue)]))
      }
    } else {
      outputs.append(event("adapter_added", adapter.id, ["state": .string(state.rawValue)]))
    }
    if previous?.json != adapter.json { outputs.append(listOutput()) }
    outputs += discoveryCommands(for: adapter.id)
    return outputs
  }

  /// Notes that an adapter disappeared; it stays listed as ``AdapterInfo/State/unavailable``.
  ///
  /// - Parameter id: The adapter's id.
  /// - Returns: The `adapter_removed` event and the adapters list, or nothing for an adapter
  ///   that was not present.
  public mutating func remove(id: String) -> [BridgeOutput] {
    guard var adapter = adapters[id], adapter.present else { return [] }
    adapter.present = false
    adapter.discovering = false
    adapters[id] = adapter
    requested.remove(id)
    confirmed.remove(id)
    return [event("adapter_removed", id, [:]), listOutput()]
  }

  /// Notes that the Bluetooth stack went away (bluetoothd stopped): every adapter becomes
  /// ``AdapterInfo/State/unavailable`` until it is reported again.
  ///
  /// - Returns: The `bluetooth_unavailable` event and the adapters list.
  public mutating func stackLost() -> [BridgeOutput] {
    let lost = adapters.values.filter(\.present).map(\.id).sorted()
    for id in lost {
      adapters[id]?.present = false
      adapters[id]?.discovering = false
    }
    requested.removeAll()
    confirmed.removeAll()
    let data: JSONObject = ["adapters": .array(lost.map { .string($0) })]
    return [
      .publish(
        topic: topics.bridgeEvent,
        payload: BridgePayload.event(type: "bluetooth_unavailable", data: data),
        retain: false),
      listOutput(),
    ]
  }

  /// Notes that the stack runs but will not serve the gateway (the bus's policy denies its
  /// user): a `bluetooth_refused` event (`error`, `message`, `detail`), and health says why
  /// until the stack serves the gateway again (`nil`, or an adapter reported).
  ///
  /// - Parameter error: Why, with what to do about it; `nil` when the refusal ended.
  /// - Returns: The event (nothing when the refusal ended).
  public mutating func stackRefused(_ error: CentralError?) -> [BridgeOutput] {
    refusal = error
    guard let error else { return [] }
    var data: JSONObject = [
      "error": .string(error.code.rawValue), "message": .string(error.message),
    ]
    if let detail = error.detail { data["detail"] = .string(detail) }
    return [
      .publish(
        topic: topics.bridgeEvent,
        payload: BridgePayload.event(type: "bluetooth_refused", data: data), retain: false)
    ]
  }

  /// Marks an adapter as being power-cycled by the gateway (or clears the mark).
  ///
  /// - Parameters:
  ///   - id: The adapter's id.
  ///   - resetting: Whether the reset is under way.
  /// - Returns: What ``update(_:)`` returns for the changed adapter; nothing for an unknown one.
  public mutating func setResetting(id: String, _ resetting: Bool) -> [BridgeOutput] {
    guard var adapter = adapters[id] else { return [] }
    adapter.resetting = resetting
    if resetting {
      requested.remove(id)
      confirmed.remove(id)
    }
    return update(adapter)
  }

  /// Changes whether scanning is wanted, and with which filter.
  ///
  /// - Parameter filter: The filter to scan with, or `nil` to stop scanning.
  /// - Returns: Discovery commands: when the filter changed, a start on each adapter that should
  ///   discover (also when it already does, to apply the new filter); when scanning is no longer
  ///   wanted, a stop on each powered adapter this tracker started.
  public mutating func setScanning(_ filter: DiscoveryFilter?) -> [BridgeOutput] {
    let changed = filter != scanning
    scanning = filter
    return adapters.keys.sorted().flatMap { discoveryCommands(for: $0, force: changed) }
  }

  /// Notes that starting discovery failed; it is asked again on the next adapter change or
  /// ``setScanning(_:)``.
  ///
  /// - Parameters:
  ///   - id: The adapter's id.
  ///   - error: What went wrong.
  /// - Returns: The `discovery_failed` event.
  public mutating func discoveryFailed(id: String, error: CentralError) -> [BridgeOutput] {
    requested.remove(id)
    confirmed.remove(id)
    var data: JSONObject = [
      "error": .string(error.code.rawValue), "message": .string(error.message),
    ]
    if let detail = error.detail { data["detail"] = .string(detail) }
    return [event("discovery_failed", id, data)]
  }

  /// Whether the adapter should be discovering now: scanning is wanted, the adapter is allowed,
  /// and it is ``AdapterInfo/State/poweredOn``.
  ///
  /// - Parameter id: The adapter's id.
  /// - Returns: `true` when discovery should run on it.
  public func shouldDiscover(_ id: String) -> Bool {
    guard scanning != nil, let adapter = adapters[id], adapter.state == .poweredOn else {
      return false
    }
    return allowedAdapters.isEmpty || allowedAdapters.contains(id)
  }

  /// What keeps the Bluetooth side from doing its job now, one sentence each (empty when
  /// nothing does), for health's `reasons`: no adapter at all; a configured adapter absent,
  /// powered off or being reset (without `bluetooth.adapters`, only when no adapter is
  /// powered); a powered adapter that should scan and does not.
  public var problems: [String] {
    var problems: [String] = []
    if let refusal { return [refusal.message] }
    if !adapters.values.contains(where: \.present) {
      return ["no Bluetooth adapter (is bluetoothd running?)"]
    }
    let watched =
      allowedAdapters.isEmpty
      ? (adapters.values.contains { $0.state == .poweredOn }
        ? [] : adapters.values.filter(\.present).map(\.id).sorted())
      : allowedAdapters.sorted()
    for id in watched {
      switch adapters[id]?.state {
      case nil, .unavailable?:
        problems.append("adapter \(id) (bluetooth.adapters) is not present")
      case .poweredOff?: problems.append("adapter \(id) is powered off")
      case .resetting?: problems.append("adapter \(id) is being reset")
      case .poweredOn?: break
      }
    }
    for id in adapters.keys.sorted() where shouldDiscover(id) && adapters[id]?.discovering == false
    {
      problems.append("adapter \(id) is not scanning although asked to")
    }
    return problems
  }

  /// The adapters in a few words for `systemctl status`: `adapter hci0 on, scanning`,
  /// `adapters hci0 on, hci1 off`, `no adapter`.
  public var summary: String {
    let present = adapters.keys.sorted().compactMap { adapters[$0] }.filter(\.present)
    guard !present.isEmpty else { return "no adapter" }
    let words = present.map { adapter in
      let state =
        switch adapter.state {
        case .poweredOn: adapter.discovering ? "on, scanning" : "on"
        case .poweredOff: "off"
        case .resetting: "resetting"
        case .unavailable: "unavailable"
        }
      return "\(adapter.id) \(state)"
    }
    return (present.count == 1 ? "adapter " : "adapters ") + words.joined(separator: ", ")
  }

  /// The version of the Bluetooth stack as the adapters report it, if one does.
  public var stackVersion: String? {
    adapters.keys.sorted().lazy.compactMap { self.adapters[$0]?.stackVersion }.first
  }

  /// The payload of `<base>/bridge/<gw>/adapters`: an array of ``AdapterInfo/json`` sorted by id.
  public var json: JSONValue {
    .array(adapters.keys.sorted().compactMap { adapters[$0]?.json })
  }

  /// The retained adapters list.
  public func listOutput() -> BridgeOutput {
    .publish(topics.bridgeAdapters, json, retain: true)
  }

  /// The discovery commands for one adapter. A start is sent when discovery is wanted and was
  /// not asked for yet (or `force`), or when the adapter stopped discovering after it had
  /// confirmed; a stop only for an adapter this tracker started that is still powered.
  private mutating func discoveryCommands(for id: String, force: Bool = false) -> [BridgeOutput] {
    guard let adapter = adapters[id] else { return [] }
    if shouldDiscover(id), let scanning {
      if force || !requested.contains(id) {
        requested.insert(id)
        confirmed.remove(id)
        return [.startDiscovery(adapter: id, filter: scanning)]
      }
      if adapter.discovering {
        confirmed.insert(id)
        return []
      }
      guard confirmed.remove(id) != nil else { return [] }
      return [.startDiscovery(adapter: id, filter: scanning)]
    }
    confirmed.remove(id)
    guard requested.remove(id) != nil, adapter.state == .poweredOn else { return [] }
    return [.stopDiscovery(adapter: id)]
  }

  private func event(_ type: String, _ id: String, _ data: JSONObject) -> BridgeOutput {
    var object: JSONObject = ["adapter": .string(id)]
    for (key, value) in data { object[key] = value }
    return .publish(
      topic: topics.bridgeEvent, payload: BridgePayload.event(type: type, data: object),
      retain: false)
  }
}
