public import BridgeCore
import Foundation
public import Logging
public import Mosquitto
import Synchronization

/// Runs the discovery half of the bridge (rows C1, C2, C3, C11): BLE central events in,
/// MQTT publications and discovery commands out.
///
/// The pure ``DiscoveryBridge`` decides everything; this service feeds it the central's events
/// and a one-second tick, and carries its outputs out **in order** through one queue: MQTT
/// publishes go to the client, discovery start/stop go to the central (a failed start is fed
/// back to the bridge, which reports it).
public final class DiscoveryService: Sendable {
  private let central: any BLECentral
  private let bridge: Mutex<DiscoveryBridge>
  private let client: MQTTClient
  private let qos: MQTTQoS
  private let logger: Logger
  private let outputs: AsyncStream<[BridgeOutput]>
  /// Discovery starts to try again (adapter → filter, when, attempts so far): bluetoothd answers
  /// `InProgress` for a while after it (re)starts, and a refused start must not stop scanning
  /// for good.
  private let retries = Mutex<[String: (filter: DiscoveryFilter, at: Double, attempts: Int)]>([:])
  private let outputSink: AsyncStream<[BridgeOutput]>.Continuation

  /// Creates the service.
  /// - Parameters:
  ///   - central: the BLE central (BlueZ, or a simulated one).
  ///   - bridge: the configured bridge logic.
  ///   - client: where publications go.
  ///   - qos: QoS of the publications.
  ///   - logger: where discovery failures are logged.
  public init(
    central: any BLECentral, bridge: DiscoveryBridge, client: MQTTClient, qos: MQTTQoS,
    logger: Logger
  ) {
    self.central = central
    self.bridge = Mutex(bridge)
    self.client = client
    self.qos = qos
    self.logger = logger
    // Unbounded on purpose: batches are small and produced at the pace of central events,
    // which BLECentral already bounds; dropping one would lose ordering guarantees.
    (outputs, outputSink) = AsyncStream.makeStream(of: [BridgeOutput].self)
  }

  /// Runs until the task is cancelled.
  public func run() async {
    await withTaskGroup(of: Void.self) { group in
      group.addTask { await self.forwardOutputs() }
      group.addTask { await self.consumeEvents() }
      group.addTask { await self.tick() }
      await group.next()
      group.cancelAll()
    }
    outputSink.finish()
  }

  /// Answers a `scan` bridge request (start/stop/filter).
  public func scan(_ command: ScanCommand) -> BridgeResponse {
    let (produced, response) = bridge.withLock { $0.apply(command) }
    outputSink.yield(produced)
    return response
  }

  /// Discovery figures for the health message.
  public var healthJSON: JSONObject { bridge.withLock { $0.healthJSON } }

  private func consumeEvents() async {
    // Subscribe before taking the snapshot, so nothing falls between the two.
    let events = central.events()
    do {
      for adapter in try await central.adapters() {
        feed(.adapterChanged(adapter))
      }
    } catch {
      logger.warning("Bluetooth adapters unavailable: \(error)")
    }
    for await event in events {
      if Task.isCancelled { return }
      feed(event)
    }
  }

  private func feed(_ event: CentralEvent) {
    let now = Date().timeIntervalSince1970
    let produced = bridge.withLock { $0.handle(event, now: now) }
    if !produced.isEmpty { outputSink.yield(produced) }
  }

  private func tick() async {
    while !Task.isCancelled {
      let now = Date().timeIntervalSince1970
      var produced = bridge.withLock { $0.tick(now: now) }
      produced += dueRetries(now: now)
      if !produced.isEmpty { outputSink.yield(produced) }
      try? await Task.sleep(for: .seconds(1))
    }
  }

  /// The discovery starts whose retry time has come, for adapters that should still scan.
  private func dueRetries(now: Double) -> [BridgeOutput] {
    let due = retries.withLock { retries in
      let ready = retries.filter { $0.value.at <= now }
      for adapter in ready.keys { retries[adapter]?.at = .infinity }
      return ready
    }
    return due.compactMap { adapter, retry in
      guard bridge.withLock({ $0.adapters.shouldDiscover(adapter) }) else {
        retries.withLock { $0[adapter] = nil }
        return nil
      }
      return .startDiscovery(adapter: adapter, filter: retry.filter)
    }
  }

  private func forwardOutputs() async {
    for await batch in outputs {
      for output in batch { await forward(output) }
      if Task.isCancelled { return }
    }
  }

  private func forward(_ output: BridgeOutput) async {
    switch output {
    case .publish(let topic, let payload, let retain):
      client.enqueue(
        MQTTMessage(
          topic: topic.rawValue, payload: payload, qos: retain ? .atLeastOnce : qos,
          retain: retain))
    case .startDiscovery(let adapter, let filter):
      do {
        try await central.startDiscovery(adapter: adapter, filter: filter)
        retries.withLock { $0[adapter] = nil }
        logger.info("discovery started", metadata: ["ble.adapter": "\(adapter)"])
      } catch {
        let attempts = retries.withLock { retries in
          let attempts = (retries[adapter]?.attempts ?? 0) + 1
          // 1 s, 2 s, 4 s … up to 30 s between attempts.
          let delay = min(30, Double(1 << min(attempts - 1, 5)))
          retries[adapter] = (filter, Date().timeIntervalSince1970 + delay, attempts)
          return attempts
        }
        logger.error(
          "discovery could not start (attempt \(attempts)), retrying: \(error)",
          metadata: ["ble.adapter": "\(adapter)"])
        // Reported once per failure streak, not on every retry.
        if attempts == 1 {
          let produced = bridge.withLock { $0.discoveryFailed(adapter: adapter, error: error) }
          for output in produced { await forward(output) }
        }
      }
    case .stopDiscovery(let adapter):
      do {
        try await central.stopDiscovery(adapter: adapter)
      } catch {
        logger.debug("discovery stop failed: \(error)", metadata: ["ble.adapter": "\(adapter)"])
      }
    }
  }
}
