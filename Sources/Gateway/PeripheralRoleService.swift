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
/// path). This service's sender hands one notification at a time to the ``BLEPeripheral``:
/// through BlueZ's notification socket the next follows as soon as bluetoothd took the last
/// (back-pressure); as `PropertiesChanged` signals (no back-pressure) at most one per
/// `peripheral.chunk_interval`. Chunks are never dropped, reordered or duplicated by us.
public final class PeripheralRoleService: Sendable {
  private let peripheral: any BLEPeripheral
  private let driver: BridgeDriver<PeripheralBridge>
  private let definition: PeripheralService
  private let logger: Logger
  private let observer: (@Sendable (PeripheralEvent) -> Void)?
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
  ///   - chunkInterval: Seconds per notification sent without back-pressure.
  ///   - client: Where publications go.
  ///   - clock: The clock the bridge runs on.
  ///   - observer: Told every event of the peripheral after the bridge (the central role keeps
  ///     the centrals in its device registry), if anyone.
  ///   - logger: Where failures are logged.
  public init(
    peripheral: any BLEPeripheral, bridge: PeripheralBridge, definition: PeripheralService,
    startAtLaunch: Bool, chunkInterval: Double, client: MQTTClient, clock: BridgeClock = .system,
    observer: (@Sendable (PeripheralEvent) -> Void)? = nil, logger: Logger
  ) {
    self.peripheral = peripheral
    self.observer = observer
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

  /// A message on `<base>/bridge/<gw>/peripheral/text/set`, or on the fleet's
  /// `<base>/bridge/peripheral/text/set` (``PeripheralBridge/setText(_:source:now:)``).
  ///
  /// - Parameters:
  ///   - message: The message.
  ///   - source: Which of the two topics it came from.
  public func text(_ message: MQTTMessage, source: PeripheralBridge.TextSource = .own) {
    driver.feed { bridge, now in bridge.setText(message.payload, source: source, now: now) }
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

  /// Why the role cannot serve now (health's `reasons`), or `nil`: it is unavailable only after
  /// it was asked to advertise and could not.
  public var problem: String? {
    driver.read { bridge in
      guard case .unavailable(let reason) = bridge.state else { return nil }
      return "peripheral role unavailable: \(reason)"
    }
  }

  /// Peripheral figures for the health message.
  public var healthJSON: JSONObject {
    driver.read { bridge in
      [
        "transfers_sent": .integer(Int64(bridge.transfersSent)),
        "bytes_sent": .integer(Int64(bridge.bytesSent)),
        "transfers_aborted": .integer(Int64(bridge.transfersAborted)),
        "text_bytes": .integer(Int64(bridge.text.count)),
      ]
    }
  }

  private func consumeEvents() async {
    for await event in peripheral.peripheralEvents() {
      if Task.isCancelled { return }
      driver.feed { bridge, now in bridge.handle(event, now: now) }
      observer?(event)
      wakeSink.yield()
    }
  }

  /// Sends notifications one at a time, paced by a ``ChunkPacer``; sleeps until woken when
  /// there is nothing to send.
  private func sender() async {
    var iterator = wake.makeAsyncIterator()
    let clock = ContinuousClock()
    var pacer = ChunkPacer(interval: interval)
    while !Task.isCancelled {
      guard let value = driver.feed({ bridge, _ in ([], bridge.nextNotification()) }) else {
        pacer.reset()
        guard await iterator.next() != nil else { return }
        continue
      }
      let outcome: CentralError?
      var path = NotificationPath.unpaced
      do throws(CentralError) {
        path = try await peripheral.notify(value)
        outcome = nil
      } catch {
        outcome = error
      }
      driver.feed { bridge, now in
        if let outcome { return bridge.notificationFailed(outcome, now: now) }
        return bridge.notificationSent(path: path, now: now)
      }
      if let outcome { logger.warning("a notification could not be sent: \(outcome)") }
      if let next = pacer.next(after: path, now: clock.now) {
        try? await clock.sleep(until: next)
      }
    }
  }
}

/// When the peripheral role's next notification may leave (`peripheral.chunk_interval`).
///
/// A value that went through a channel with back-pressure (``NotificationPath/flowControlled``)
/// is followed at once. One sent without (``NotificationPath/unpaced``) is paced by deadline:
/// the n-th value of a run leaves no earlier than the first one + n × the interval, whatever
/// the sending itself took, so the interval is a rate (1 / interval per second), not a pause
/// added to each send; a sender that fell behind does not burst to catch up. Pure.
struct ChunkPacer: Sendable {
  /// Seconds per unpaced value; 0 for no pacing.
  let interval: Double
  private var deadline: ContinuousClock.Instant?

  init(interval: Double) {
    self.interval = max(0, interval)
  }

  /// A value went out by `path`; `now` is when its sending ended.
  ///
  /// - Returns: When the next value may leave, `nil` for at once.
  mutating func next(after path: NotificationPath, now: ContinuousClock.Instant)
    -> ContinuousClock.Instant?
  {
    guard path == .unpaced, interval > 0 else {
      deadline = nil
      return nil
    }
    let next = max((deadline ?? now) + .seconds(interval), now)
    deadline = next
    return next > now ? next : nil
  }

  /// Nothing to send: the next value starts a new run.
  mutating func reset() {
    deadline = nil
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
