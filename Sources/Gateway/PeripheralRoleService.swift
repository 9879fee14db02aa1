public import BridgeCore
import Foundation
public import Logging
public import Mosquitto
import Synchronization

/// Runs the peripheral role (rows P1–P6): texts from MQTT and the peripheral's events in;
/// paced notifications, the retained state and events out.
///
/// The pure ``PeripheralBridge`` decides what to send; this service's sender hands one
/// notification at a time to the ``BLEPeripheral`` and waits
/// `peripheral.chunk_interval` seconds before the next (BlueZ gives no back-pressure on
/// notifications), so chunks are never dropped, reordered or duplicated by us.
public final class PeripheralRoleService: Sendable {
  private let peripheral: any BLEPeripheral
  private let bridge: Mutex<PeripheralBridge>
  private let definition: PeripheralService
  private let client: MQTTClient
  private let logger: Logger
  private let interval: Double
  private let startAtLaunch: Bool
  private let wake: AsyncStream<Void>
  private let wakeSink: AsyncStream<Void>.Continuation
  private let outputs: AsyncStream<[PeripheralBridge.Output]>
  private let outputSink: AsyncStream<[PeripheralBridge.Output]>.Continuation

  /// Creates the service.
  ///
  /// - Parameters:
  ///   - peripheral: The BLE peripheral (BlueZ, or a simulated one).
  ///   - bridge: The configured bridge logic.
  ///   - definition: What to publish and advertise.
  ///   - startAtLaunch: Whether to start advertising at once (`peripheral.enabled`).
  ///   - chunkInterval: Seconds between two notifications.
  ///   - client: Where publications go.
  ///   - logger: Where failures are logged.
  public init(
    peripheral: any BLEPeripheral, bridge: PeripheralBridge, definition: PeripheralService,
    startAtLaunch: Bool, chunkInterval: Double, client: MQTTClient, logger: Logger
  ) {
    self.peripheral = peripheral
    self.bridge = Mutex(bridge)
    self.definition = definition
    self.startAtLaunch = startAtLaunch
    interval = max(0, chunkInterval)
    self.client = client
    self.logger = logger
    (wake, wakeSink) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    // Unbounded on purpose: one small batch per MQTT text message (bounded by the client's
    // inbound queue) or peripheral event; carried out in order by `run()`.
    (outputs, outputSink) = AsyncStream.makeStream(of: [PeripheralBridge.Output].self)
  }

  /// Runs until the task is cancelled; withdraws the service at the end.
  public func run() async {
    let initial = bridge.withLock { $0.stateOutput() }
    await carryOut([initial])
    await withTaskGroup(of: Void.self) { group in
      group.addTask { await self.consumeEvents() }
      group.addTask { await self.sender() }
      group.addTask {
        for await batch in self.outputs { await self.carryOut(batch) }
      }
      if startAtLaunch {
        group.addTask { _ = await self.start() }
      }
      // Until cancelled: the event stream and the sender both run while the task lives.
      await group.waitForAll()
    }
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
    let now = Date().timeIntervalSince1970
    outputSink.yield(bridge.withLock { $0.setText(message.payload, now: now) })
    wakeSink.yield()
  }

  /// Refuses a text the gateway could not take in (see ``PeripheralBridge/refuseText(code:message:)``).
  ///
  /// - Parameters:
  ///   - code: The error code.
  ///   - message: What a person reads.
  public func refuseText(code: String, message: String) {
    outputSink.yield(bridge.withLock { $0.refuseText(code: code, message: message) })
  }

  /// Peripheral figures for the health message.
  public var healthJSON: JSONObject {
    bridge.withLock { bridge in
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
      let now = Date().timeIntervalSince1970
      let outputs = bridge.withLock { $0.handle(event, now: now) }
      await carryOut(outputs)
      wakeSink.yield()
    }
  }

  /// Sends notifications one at a time, paced; sleeps until woken when there is nothing to send.
  private func sender() async {
    var iterator = wake.makeAsyncIterator()
    while !Task.isCancelled {
      guard let value = bridge.withLock({ $0.nextNotification() }) else {
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
      let now = Date().timeIntervalSince1970
      let outputs = bridge.withLock { bridge in
        if let outcome { return bridge.notificationFailed(outcome, now: now) }
        return bridge.notificationSent(now: now)
      }
      if let outcome { logger.warning("a notification could not be sent: \(outcome)") }
      await carryOut(outputs)
      if interval > 0 { try? await Task.sleep(for: .seconds(interval)) }
    }
  }

  private func carryOut(_ outputs: [PeripheralBridge.Output]) async {
    for output in outputs {
      switch output {
      case .publish(let topic, let payload, let retain):
        if retain {
          client.setRetainedState(
            MQTTMessage(topic: topic.rawValue, payload: payload, qos: .atLeastOnce, retain: true))
        } else {
          client.enqueue(MQTTMessage(topic: topic.rawValue, payload: payload, qos: .atLeastOnce))
        }
      case .setReadValue(let value):
        await peripheral.setReadValue(value)
      }
    }
  }
}
