public import BridgeCore
import Foundation
public import Logging
public import Mosquitto
import Synchronization

/// Runs the connection half of the bridge (rows C4–C10): central events and device-plane
/// requests in; MQTT publications, connections and GATT operations out.
///
/// The pure ``GATTBridge`` decides everything; a ``BridgeDriver`` feeds it and carries out its
/// outputs in order: publications go to the MQTT client at once; connections, disconnections
/// and GATT operations each run in a child task, so a slow device never holds up the others or
/// the publications, and their outcomes are fed back to the bridge. The bridge hands out one
/// operation per characteristic at a time, so operations on one characteristic never overlap.
public final class ConnectionService: Sendable {
  private let central: any GATTCentral
  private let driver: BridgeDriver<GATTBridge>
  private let logger: Logger

  /// Creates the service.
  ///
  /// - Parameters:
  ///   - central: The BLE central (BlueZ, or a simulated one).
  ///   - bridge: The configured bridge logic.
  ///   - client: Where publications go.
  ///   - qos: QoS of non-retained publications.
  ///   - clock: The clock the bridge runs on.
  ///   - logger: Where connection and operation failures are logged.
  public init(
    central: any GATTCentral, bridge: GATTBridge, client: MQTTClient, qos: MQTTQoS,
    clock: BridgeClock = .system, logger: Logger
  ) {
    self.central = central
    self.logger = logger
    driver = BridgeDriver(bridge: bridge, clock: clock, client: client, qos: qos, logger: logger)
  }

  /// Runs until the task is cancelled.
  public func run() async {
    await withTaskGroup(of: Void.self) { group in
      group.addTask { await self.driver.runCommands(.concurrent) { await self.perform($0) } }
      group.addTask {
        await self.driver.consume(self.central.events()) { bridge, event, now in
          bridge.handle(event, now: now)
        }
      }
      group.addTask { await self.driver.runTicks(every: .seconds(1)) }
      await group.next()
      group.cancelAll()
    }
    driver.finish()
  }

  /// Tears every link down in order (notifications off, then disconnect) and waits until all
  /// are down or `timeout` seconds passed; then disconnects what is left.
  ///
  /// - Parameter timeout: The most seconds to wait.
  public func shutdown(timeout: Double = 5) async {
    driver.feed { bridge, now in bridge.shutdown(now: now) }
    let deadline = ContinuousClock.now + .seconds(timeout)
    while ContinuousClock.now < deadline, !driver.read({ $0.isIdle }) {
      try? await Task.sleep(for: .milliseconds(50))
    }
    let left = driver.read { $0.connectedAddresses }
    for address in left {
      logger.warning("forcing a disconnect at shutdown", metadata: ["ble.address": "\(address)"])
      try? await central.disconnect(address)
    }
  }

  /// Serves a device-plane request (`connection/set`, `/get`, `/set`, `/notify`).
  ///
  /// - Parameters:
  ///   - request: The parsed topic.
  ///   - message: The message.
  public func request(_ request: Topics.Request, message: MQTTMessage) {
    let reply = message.properties.responseTopic.map {
      ReplyAddress(topic: $0, correlationData: message.properties.correlationData)
    }
    driver.feed { bridge, now in
      bridge.request(request, payload: message.payload, reply: reply, now: now)
    }
  }

  /// Refuses a device-plane request that cannot be served (see
  /// ``GATTBridge/refuse(_:code:message:reply:)``).
  ///
  /// - Parameters:
  ///   - request: The parsed topic.
  ///   - message: The message (its Response Topic, if any, gets the answer too).
  ///   - code: The error code.
  ///   - text: What a person reads.
  public func refuse(_ request: Topics.Request, message: MQTTMessage, code: String, text: String) {
    let reply = message.properties.responseTopic.map {
      ReplyAddress(topic: $0, correlationData: message.properties.correlationData)
    }
    driver.feed { bridge, _ in bridge.refuse(request, code: code, message: text, reply: reply) }
  }

  /// Answers `device/connect` and `device/disconnect` bridge requests.
  ///
  /// - Parameters:
  ///   - connect: `true` for `device/connect`.
  ///   - body: The request's JSON object.
  /// - Returns: The response.
  public func deviceRequest(connect: Bool, body: JSONObject) -> BridgeResponse {
    driver.feed { bridge, now in bridge.deviceRequest(connect: connect, body: body, now: now) }
  }

  /// Connection figures for the health message.
  public var healthJSON: JSONObject {
    var json = driver.read { $0.healthJSON }
    json["radio_commands_waiting"] = .integer(Int64(driver.waitingCommands))
    json["radio_commands_dropped"] = .integer(Int64(clamping: driver.droppedCommands))
    return json
  }

  private func perform(_ command: GATTOutput) async {
    switch command {
    case .publish, .reply: break  // never a command (see `action(for:qos:)`)
    case .connect(let address, let timeout):
      logger.info("connecting", metadata: ["ble.address": "\(address)"])
      var failure: CentralError?
      do throws(CentralError) {
        try await central.connect(address, timeout: timeout)
      } catch {
        failure = error
        logger.warning("connection failed: \(error)", metadata: ["ble.address": "\(address)"])
      }
      driver.feed { bridge, now in bridge.connectFinished(address, error: failure, now: now) }
    case .disconnect(let address):
      logger.info("disconnecting", metadata: ["ble.address": "\(address)"])
      do {
        try await central.disconnect(address)
      } catch {
        logger.warning("disconnect failed: \(error)", metadata: ["ble.address": "\(address)"])
      }
    case .execute(let operation):
      await execute(operation)
    }
  }

  private func execute(_ operation: GATTOperation) async {
    let id = operation.characteristic
    let result: Result<[UInt8], CentralError>
    do throws(CentralError) {
      switch operation.kind {
      case .read:
        result = .success(try await central.read(id, timeout: operation.timeout))
      case .write(let value, let withResponse):
        try await central.write(
          id, value: value, withResponse: withResponse, timeout: operation.timeout)
        result = .success([])
      case .notify(let enabled):
        try await central.setNotify(id, enabled: enabled, timeout: operation.timeout)
        result = .success([])
      }
    } catch {
      logger.warning(
        "GATT \(operation.kind.name) failed: \(error)",
        metadata: ["ble.characteristic": "\(id)"])
      result = .failure(error)
    }
    driver.feed { bridge, now in bridge.operationFinished(operation.id, result: result, now: now) }
  }
}

extension GATTBridge: DrivenBridge {
  typealias Command = GATTOutput

  static func action(for output: GATTOutput, qos: MQTTQoS) -> DriverAction<GATTOutput> {
    switch output {
    case .publish(let topic, let payload, let retain):
      return .publish(
        MQTTMessage(
          topic: topic.rawValue, payload: payload, qos: retain ? .atLeastOnce : qos,
          retain: retain))
    case .reply(let address, let payload):
      // The reply topic was checked against `ReplyTopicPolicy`; one that is not a valid topic
      // name cannot be published.
      guard (try? TopicName(address.topic)) != nil else { return .none }
      return .publish(
        MQTTMessage(
          topic: address.topic, payload: payload, qos: .atLeastOnce,
          properties: MQTTPublishProperties(correlationData: address.correlationData)))
    case .connect, .disconnect, .execute:
      return .command(output)
    }
  }

  mutating func tick(now: Double, wallClockOffset: Double) -> [GATTOutput] {
    self.wallClockOffset = wallClockOffset
    return tick(now: now)
  }
}
