import Backoff
public import BridgeCore
import Foundation
public import Logging
public import Mosquitto
import Synchronization

/// Runs the discovery half of the bridge (rows C1, C2, C3, C11): BLE central events in,
/// MQTT publications and discovery commands out.
///
/// The pure ``DiscoveryBridge`` decides everything; a ``BridgeDriver`` feeds it the central's
/// events and a one-second tick, hands its publications to the MQTT client at once and its
/// discovery start/stop commands, in order, to a worker that calls the central (a failed start
/// is fed back to the bridge, which reports it, and retried): a slow `StartDiscovery` never
/// holds back an advertisement.
public final class DiscoveryService: Sendable {
  private let central: any BLECentral
  private let driver: BridgeDriver<DiscoveryBridge>
  private let logger: Logger
  /// Discovery starts to try again (adapter → filter, when, attempts so far): bluetoothd answers
  /// `InProgress` for a while after it (re)starts, and a refused start must not stop scanning
  /// for good. Times are the driver's monotonic clock.
  private let retries = Mutex<[String: (filter: DiscoveryFilter, at: Double, attempts: Int)]>([:])

  /// The delays between discovery start attempts.
  private static let retryBackoff = Backoff(minimum: 1, maximum: 30)

  /// Creates the service.
  /// - Parameters:
  ///   - central: the BLE central (BlueZ, or a simulated one).
  ///   - bridge: the configured bridge logic.
  ///   - client: where publications go.
  ///   - qos: QoS of the publications.
  ///   - clock: the clock the bridge runs on.
  ///   - logger: where discovery failures are logged.
  public init(
    central: any BLECentral, bridge: DiscoveryBridge, client: MQTTClient, qos: MQTTQoS,
    clock: BridgeClock = .system, logger: Logger
  ) {
    self.central = central
    self.logger = logger
    driver = BridgeDriver(bridge: bridge, clock: clock, client: client, qos: qos, logger: logger)
  }

  /// Runs until the task is cancelled.
  public func run() async {
    await withTaskGroup(of: Void.self) { group in
      group.addTask { await self.driver.runCommands(.serial) { await self.perform($0) } }
      group.addTask { await self.consumeEvents() }
      group.addTask {
        await self.driver.runTicks(every: .seconds(1)) { self.startDueRetries() }
      }
      await group.next()
      group.cancelAll()
    }
    driver.finish()
  }

  /// Answers a `scan` bridge request (start/stop/filter).
  public func scan(_ command: ScanCommand) -> BridgeResponse {
    driver.feed { bridge, _ in bridge.apply(command) }
  }

  /// Answers a `device/remove` bridge request (``DiscoveryBridge/remove(_:)``).
  public func remove(_ body: JSONObject) -> BridgeResponse {
    driver.feed { bridge, _ in bridge.remove(body) }
  }

  /// Discovery figures for the health message.
  public var healthJSON: JSONObject { driver.read { $0.healthJSON } }

  private func consumeEvents() async {
    // Subscribe before taking the snapshot, so nothing falls between the two.
    let events = central.events()
    do {
      for adapter in try await central.adapters() {
        driver.feed { bridge, now in bridge.handle(.adapterChanged(adapter), now: now) }
      }
    } catch {
      logger.warning("Bluetooth adapters unavailable: \(error)")
    }
    await driver.consume(events) { bridge, event, now in bridge.handle(event, now: now) }
  }

  /// Queues the discovery starts whose retry time has come, for adapters that should still
  /// scan.
  private func startDueRetries() {
    let now = driver.clock.now()
    let due = retries.withLock { retries in
      let ready = retries.filter { $0.value.at <= now }
      for adapter in ready.keys { retries[adapter]?.at = .infinity }
      return ready
    }
    for (adapter, retry) in due.sorted(by: { $0.key < $1.key }) {
      guard driver.read({ $0.adapters.shouldDiscover(adapter) }) else {
        retries.withLock { $0[adapter] = nil }
        continue
      }
      driver.enqueue(.startDiscovery(adapter: adapter, filter: retry.filter))
    }
  }

  private func perform(_ command: BridgeOutput) async {
    switch command {
    case .publish: break  // never a command (see `action(for:qos:)`)
    case .startDiscovery(let adapter, let filter):
      do {
        try await central.startDiscovery(adapter: adapter, filter: filter)
        retries.withLock { $0[adapter] = nil }
        logger.info("discovery started", metadata: ["ble.adapter": "\(adapter)"])
      } catch {
        let now = driver.clock.now()
        let attempts = retries.withLock { retries in
          let attempts = (retries[adapter]?.attempts ?? 0) + 1
          // 1 s, 2 s, 4 s … up to 30 s between attempts.
          let delay = Self.retryBackoff.nominalDelay(afterFailures: attempts - 1)
          retries[adapter] = (filter, now + delay, attempts)
          return attempts
        }
        logger.error(
          "discovery could not start (attempt \(attempts)), retrying: \(error)",
          metadata: ["ble.adapter": "\(adapter)"])
        // Reported once per failure streak, not on every retry.
        if attempts == 1 {
          driver.feed { bridge, _ in bridge.discoveryFailed(adapter: adapter, error: error) }
        }
      }
    case .stopDiscovery(let adapter):
      do {
        try await central.stopDiscovery(adapter: adapter)
      } catch {
        logger.debug("discovery stop failed: \(error)", metadata: ["ble.adapter": "\(adapter)"])
      }
    case .removeDevice(let address):
      do {
        try await central.removeDevice(address)
        logger.info("device removed from the stack", metadata: ["ble.address": "\(address)"])
      } catch {
        logger.warning(
          "the stack did not remove the device: \(error)", metadata: ["ble.address": "\(address)"])
      }
    }
  }
}

extension DiscoveryBridge: DrivenBridge {
  typealias Command = BridgeOutput

  static func action(for output: BridgeOutput, qos: MQTTQoS) -> DriverAction<BridgeOutput> {
    guard case .publish(let topic, let payload, let retain) = output else {
      return .command(output)
    }
    return .publish(
      MQTTMessage(
        topic: topic.rawValue, payload: payload, qos: retain ? .atLeastOnce : qos, retain: retain))
  }

  mutating func tick(now: Double, wallClockOffset: Double) -> [BridgeOutput] {
    self.wallClockOffset = wallClockOffset
    return tick(now: now)
  }
}
