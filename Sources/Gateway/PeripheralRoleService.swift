public import BridgeCore
import Foundation
public import Logging
public import Mosquitto
import Synchronization

/// Runs the peripheral role (rows P1–P6): texts from MQTT and the peripheral's events in;
/// paced notifications, the retained state and events out.
///
/// The pure ``PeripheralBridge`` decides what to send; a ``BridgeDriver`` feeds it and carries
/// out its outputs (publications at once, read-value updates in order off the publishing
/// path). This service's sender hands one notification at a time to the ``BLEPeripheral`` and
/// waits `peripheral.chunk_interval` seconds before the next (BlueZ gives no back-pressure on
/// notifications), so chunks are never dropped, reordered or duplicated by us.
public final class PeripheralRoleService: Sendable {
  private let peripheral: any BLEPeripheral
  private let driver: BridgeDriver<PeripheralBridge>
  private let definition: PeripheralService
  private let logger: Logger
  private let interval: Double
  private let startAtLaunch: Bool
  private let wake: AsyncStream<Void>
  private let wakeSink: AsyncStream<Void>.Continuation

  /// Creates the service.
  ///
  /// - Parameters:
  ///   - peripheral: The BLE peripheral (BlueZ, or a simulated one).
  ///   - bridge: The configured bridge logic.
  ///   - definition: What to publish and advertise.
  ///   - startAtLaunch: Whether to start advertising at once (`peripheral.enabled`).
  ///   - chunkInterval: Seconds between two notifications.
  ///   - client: Where publications go.
  ///   - clock: The clock the bridge runs on.
  ///   - logger: Where failures are logged.
  public init(
    peripheral: any BLEPeripheral, bridge: PeripheralBridge, definition: PeripheralService,
    startAtLaunch: Bool, chunkInterval: Double, client: MQTTClient, clock: BridgeClock = .system,
    logger: Logger
  ) {
    self.peripheral = peripheral
    driver = BridgeDriver(
      bridge: bridge, clock: clock, client: client, qos: .atLeastOnce, logger: logger)
    self.definition = definition
    self.startAtLaunch = startAtLaunch
    interval = max(0, chunkInterval)
    self.logger = logger
    (wake, wakeSink) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
  }

  /// Runs until the task is cancelled; withdraws the service at the end.
  public func run() async {
    driver.feed { bridge, _ in [bridge.stateOutput()] }
    await withTaskGroup(of: Void.self) { group in
      group.addTask { await self.consumeEvents() }
      group.addTask { await self.sender() }
      group.addTask {
        await self.driver.runCommands { command in
          if case .setReadValue(let value) = command { await self.peripheral.setReadValue(value) }
        }
      }
      if startAtLaunch {
        group.addTask { _ = await self.start() }
      }
      // Until cancelled: the event stream and the sender both run while the task lives.
      await group.waitForAll()
    }
    driver.finish()
  }

  /// Withdraws the advertisement and the service (on shutdown and `peripheral/stop`).
  public func stop() async {
    await peripheral.stopPeripheral()
  }

  /// Publishes and advertises the service (`peripheral/start`).
  ///
  /// - Returns: The response.
  public func start() async -> BridgeResponse {
    do {
      try await peripheral.startPeripheral(definition)
      return .success(["service": .string(definition.service.topicSegment)], transaction: nil)
    } catch {
      logger.error("the peripheral role cannot start: \(error)")
      return .failure(code: error.code.rawValue, message: error.message, transaction: nil)
    }
  }

  /// A message on `<base>/bridge/<gw>/peripheral/text/set`.
  ///
  /// - Parameter message: The message.
  public func text(_ message: MQTTMessage) {
    driver.feed { bridge, now in bridge.setText(message.payload, now: now) }
    wakeSink.yield()
  }

  /// Refuses a text the gateway could not take in (see ``PeripheralBridge/refuseText(code:message:)``).
  ///
  /// - Parameters:
  ///   - code: The error code.
  ///   - message: What a person reads.
  public func refuseText(code: String, message: String) {
    driver.feed { bridge, _ in bridge.refuseText(code: code, message: message) }
  }

  /// The role's state in a few words: `advertising, 2 subscribed`, `stopped`, `unavailable`.
  public var stateName: String {
    driver.read { bridge in
      switch bridge.state {
      case .advertising:
        bridge.hasSubscribers ? "advertising, subscribed" : "advertising"
      case .stopped: "stopped"
      case .unavailable: "unavailable"
      }
    }
  }

  /// Peripheral figures for the health message.
  public var healthJSON: JSONObject {
    driver.read { bridge in
      [
        "transfers_sent": .integer(Int64(bridge.transfersSent)),
        "transfers_aborted": .integer(Int64(bridge.transfersAborted)),
        "text_bytes": .integer(Int64(bridge.text.count)),
      ]
    }
  }

  private func consumeEvents() async {
    for await event in peripheral.peripheralEvents() {
      if Task.isCancelled { return }
      driver.feed { bridge, now in bridge.handle(event, now: now) }
      wakeSink.yield()
    }
  }

  /// Sends notifications one at a time, paced; sleeps until woken when there is nothing to send.
  private func sender() async {
    var iterator = wake.makeAsyncIterator()
    while !Task.isCancelled {
      guard let value = driver.feed({ bridge, _ in ([], bridge.nextNotification()) }) else {
        guard await iterator.next() != nil else { return }
        continue
      }
      let outcome: CentralError?
      do throws(CentralError) {
        try await peripheral.notify(value)
        outcome = nil
      } catch {
        outcome = error
      }
      driver.feed { bridge, now in
        if let outcome { return bridge.notificationFailed(outcome, now: now) }
        return bridge.notificationSent(now: now)
      }
      if let outcome { logger.warning("a notification could not be sent: \(outcome)") }
      if interval > 0 { try? await Task.sleep(for: .seconds(interval)) }
    }
  }
}

extension PeripheralBridge: DrivenBridge {
  typealias Command = PeripheralBridge.Output

  static func action(for output: Output, qos: MQTTQoS) -> DriverAction<Output> {
    switch output {
    case .publish(let topic, let payload, let retain):
      let message = MQTTMessage(
        topic: topic.rawValue, payload: payload, qos: .atLeastOnce, retain: retain)
      return retain ? .state(message) : .publish(message)
    case .setReadValue:
      return .command(output, .serial)
    }
  }

  /// The peripheral role has no timers.
  mutating func tick(now: Double, wallClockOffset: Double) -> [Output] { [] }
}
