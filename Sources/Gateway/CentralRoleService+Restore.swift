import BridgeCore
public import Mosquitto
import Synchronization

extension CentralRoleService {
  /// How long the subscriptions that look for what an earlier run left stay after the last
  /// one is acknowledged (the broker sent the retained messages before its SUBACK; this is
  /// the time for them to pass through the client).
  static let leftoverWindow: Duration = .seconds(3)
  /// Filters subscribed at once in the search for leftovers.
  static let leftoverBatch = 100

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
    // In batches, each acknowledged before the next: the broker sends a batch's retained
    // messages before its last SUBACK, and queues only so many for a client (mosquitto:
    // `max_queued_messages`, 1000 by default) — thousands at once would be dropped there.
    var batches = stride(from: 0, to: filters.count, by: Self.leftoverBatch).map {
      filters[$0..<min($0 + Self.leftoverBatch, filters.count)]
    }[...]
    while let batch = batches.popFirst(), !Task.isCancelled {
      for filter in batch.dropLast() { client.addSubscription(filter) }
      do {
        try await client.subscribe(batch[batch.endIndex - 1], qos: .atLeastOnce)
      } catch {
        if error.code != .cancelled {
          logger.warning(
            "cannot look for what an earlier run left: \(error)",
            metadata: ["mqtt.topic": "\(batch[batch.endIndex - 1])"])
        }
        break
      }
      try? await Task.sleep(for: .milliseconds(200))  // for the batch's messages to drain
    }
    try? await Task.sleep(for: Self.leftoverWindow)
    await withTaskGroup(of: Void.self) { group in
      for filter in filters { group.addTask { try? await client.unsubscribe(filter) } }
    }
    let (found, dropped) = leftoverSearch.withLock { ($0.found, $0.dropped) }
    logger.info(
      "found \(found) retained topics an earlier run left for \(devices.count) restored devices",
      metadata: dropped > 0 ? ["mqtt.dropped": "\(dropped)"] : [:])
    if dropped > 0 {
      logger.warning(
        "\(dropped) retained messages an earlier run left were dropped on the way in (too large, or the buffer was full); they stay retained"
      )
    }
    leftoverSearch.withLock { $0 = LeftoverSearch() }
    driver.feed { bridge, _ in
      bridge.leftoverSearchEnded()
      return []
    }
    return devices.count
  }

  /// Holds the devices list back until ``restore(previous:client:homeAssistantPrefix:)`` or
  /// ``releaseDevicesList()`` (``DiscoveryBridge/holdsDevicesList``).
  public func holdDevicesList() {
    driver.feed { bridge, _ in
      bridge.holdDevicesList()
      return []
    }
  }

  /// Lets the devices list go out: no earlier run's list is to be restored.
  public func releaseDevicesList() {
    driver.feed { bridge, _ in
      bridge.releaseDevicesList()
      return []
    }
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
    guard message.retain, !message.payload.isEmpty, let topic = try? TopicName(message.topic)
    else { return true }
    guard message.discarded == nil else {
      leftoverSearch.withLock { $0.dropped += 1 }
      return true
    }
    leftoverSearch.withLock { $0.found += 1 }
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
  /// Retained messages taken.
  var found = 0
  /// Retained messages that arrived without their payload.
  var dropped = 0

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
