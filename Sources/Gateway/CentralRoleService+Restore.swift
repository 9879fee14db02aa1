public import BridgeCore
public import Mosquitto
import Synchronization

extension CentralRoleService {
  /// How long the subscriptions that look for what an earlier run left stay after the last
  /// one is acknowledged (the broker sent the retained messages before its SUBACK; this is
  /// the time for them to pass through the client).
  static let leftoverWindow: Duration = .seconds(5)

  /// Takes back the devices an earlier run of this gateway left in its retained devices list
  /// (``CentralBridge/restore(previous:now:)``), then looks for the retained topics it left for
  /// them that the list does not name: their Home Assistant configs
  /// (`<prefix>/+/gatt2mqtt_<MAC>/+/config`) and retained values (`<base>/<dev>/gatt/+/+`),
  /// subscribing for ``leftoverWindow``; ``takeLeftover(_:)`` takes what arrives.
  ///
  /// - Parameters:
  ///   - payload: The retained devices list.
  ///   - client: The MQTT client to subscribe with.
  ///   - homeAssistantPrefix: The Home Assistant discovery prefix (also when discovery is off
  ///     now: an earlier run may have had it on).
  /// - Returns: How many devices were restored.
  @discardableResult
  public func restore(previous payload: [UInt8], client: MQTTClient, homeAssistantPrefix: String)
    async -> Int
  {
    let offset = driver.clock.wallClockOffset()
    let devices = driver.feed { bridge, now in
      bridge.wallClockOffset = offset
      return bridge.restore(previous: payload, now: now)
    }
    logger.info(
      "restored \(devices.count) devices from the devices list an earlier run left",
      metadata: ["mqtt.topic": "\(driver.read { $0.discovery.topics.bridgeDevices })"])
    guard !devices.isEmpty else { return 0 }
    let topics = driver.read { $0.discovery.topics }
    var filters: [String] = []
    leftoverSearch.withLock { search in
      for device in devices {
        let node = "gatt2mqtt_" + DeviceID(address: device.address).rawValue
        search.nodes[node] = device.address
        filters.append("\(homeAssistantPrefix)/+/\(node)/+/config")
        for id in [device.id] + (device.previousID.map { [$0] } ?? []) {
          let below = topics.gatt(id).rawValue + "/"
          search.values[below] = device.address
          filters.append(below + "+/+")
        }
      }
      search.homeAssistantPrefix = homeAssistantPrefix + "/"
    }
    // All at once (the broker answers them in order): the last one's SUBACK means every
    // retained message of the others was sent before it.
    for filter in filters.dropLast() { client.addSubscription(filter) }
    do {
      try await client.subscribe(filters[filters.count - 1], qos: .atLeastOnce)
      try? await Task.sleep(for: Self.leftoverWindow)
    } catch {
      if error.code != .cancelled {
        logger.warning(
          "cannot look for what an earlier run left: \(error)",
          metadata: ["mqtt.topic": "\(filters[filters.count - 1])"])
      }
    }
    for filter in filters { try? await client.unsubscribe(filter) }
    leftoverSearch.withLock { $0 = LeftoverSearch() }
    driver.feed { bridge, _ in
      bridge.leftoverSearchEnded()
      return []
    }
    return devices.count
  }

  /// Takes a message that answers the search for what an earlier run left
  /// (``restore(previous:client:homeAssistantPrefix:)``).
  ///
  /// - Parameter message: An incoming message.
  /// - Returns: Whether it was one (retained or not; only retained ones count).
  public func takeLeftover(_ message: MQTTMessage) -> Bool {
    guard let address = leftoverSearch.withLock({ $0.device(of: message.topic) }) else {
      return false
    }
    guard message.retain, !message.payload.isEmpty, message.discarded == nil,
      let topic = try? TopicName(message.topic)
    else { return true }
    driver.feed { bridge, _ in bridge.leftover(address, topic: topic, payload: message.payload) }
    return true
  }
}

/// The topics being searched for what an earlier run left, by device.
struct LeftoverSearch: Sendable {
  /// `<prefix>/`, the Home Assistant discovery prefix.
  var homeAssistantPrefix = ""
  /// Home Assistant node ids (`gatt2mqtt_<MAC>`) → device.
  var nodes: [String: BluetoothAddress] = [:]
  /// `<base>/<dev>/gatt/` → device.
  var values: [String: BluetoothAddress] = [:]

  /// The device a topic found by the search is about: `<prefix>/<component>/<node>/<object>/config`
  /// or `<base>/<dev>/gatt/<svc>/<chr>`.
  func device(of topic: String) -> BluetoothAddress? {
    guard !nodes.isEmpty else { return nil }
    if topic.hasPrefix(homeAssistantPrefix), topic.hasSuffix("/config") {
      let levels = topic.dropFirst(homeAssistantPrefix.count).split(
        separator: "/", omittingEmptySubsequences: false)
      if levels.count == 4, let address = nodes[String(levels[1])] { return address }
    }
    // `<base>/<dev>/gatt/` is what is left without the last two levels.
    guard let last = topic.lastIndex(of: "/"),
      let previous = topic[..<last].lastIndex(of: "/")
    else { return nil }
    return values[String(topic[...previous])]
  }
}
