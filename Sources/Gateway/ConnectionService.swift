public import BridgeCore
import Foundation
public import Logging
public import Mosquitto
import Synchronization

/// Runs the connection half of the bridge (rows C4–C10): central events and device-plane
/// requests in; MQTT publications, connections and GATT operations out.
///
/// The pure ``GATTBridge`` decides everything. Its outputs are carried out **in order** by one
/// loop: publications go to the MQTT client at once; connections, disconnections and GATT
/// operations each run in a child task, so a slow device never holds up the others, and their
/// outcomes are fed back to the bridge. The bridge hands out one operation per characteristic
/// at a time, so operations on one characteristic never overlap.
public final class ConnectionService: Sendable {
  private let central: any GATTCentral
  private let bridge: Mutex<GATTBridge>
  private let client: MQTTClient
  private let qos: MQTTQoS
  private let logger: Logger
  private let outputs: AsyncStream<[GATTOutput]>
  private let outputSink: AsyncStream<[GATTOutput]>.Continuation

  /// Creates the service.
  ///
  /// - Parameters:
  ///   - central: The BLE central (BlueZ, or a simulated one).
  ///   - bridge: The configured bridge logic.
  ///   - client: Where publications go.
  ///   - qos: QoS of non-retained publications.
  ///   - logger: Where connection and operation failures are logged.
  public init(
    central: any GATTCentral, bridge: GATTBridge, client: MQTTClient, qos: MQTTQoS,
    logger: Logger
  ) {
    self.central = central
    self.bridge = Mutex(bridge)
    self.client = client
    self.qos = qos
    self.logger = logger
    // Unbounded on purpose: batches are produced at the pace of central events (bounded by the
    // central) and MQTT requests (bounded by the client's inbound queue and the bridge's
    // per-characteristic queue limit); dropping one would break the ordering guarantees.
    (outputs, outputSink) = AsyncStream.makeStream(of: [GATTOutput].self)
  }

  /// Runs until the task is cancelled.
  public func run() async {
    await withDiscardingTaskGroup { group in
      group.addTask { await self.consumeEvents() }
      group.addTask { await self.tick() }
      for await batch in outputs {
        for output in batch { forward(output, in: &group) }
        if Task.isCancelled { break }
      }
      group.cancelAll()
    }
  }

  /// Tears every link down in order (notifications off, then disconnect) and waits until all
  /// are down or `timeout` seconds passed; then disconnects what is left.
  ///
  /// - Parameter timeout: The most seconds to wait.
  public func shutdown(timeout: Double = 5) async {
    let now = Date().timeIntervalSince1970
    feed { $0.shutdown(now: now) }
    let deadline = ContinuousClock.now + .seconds(timeout)
    while ContinuousClock.now < deadline, !bridge.withLock({ $0.isIdle }) {
      try? await Task.sleep(for: .milliseconds(50))
    }
    let left = bridge.withLock { $0.connectedAddresses }
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
    let now = Date().timeIntervalSince1970
    feed { $0.request(request, payload: message.payload, reply: reply, now: now) }
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
    feed { $0.refuse(request, code: code, message: text, reply: reply) }
  }

  /// Answers `device/connect` and `device/disconnect` bridge requests.
  ///
  /// - Parameters:
  ///   - connect: `true` for `device/connect`.
  ///   - body: The request's JSON object.
  /// - Returns: The response.
  public func deviceRequest(connect: Bool, body: JSONObject) -> BridgeResponse {
    let now = Date().timeIntervalSince1970
    let (produced, response) = bridge.withLock {
      $0.deviceRequest(connect: connect, body: body, now: now)
    }
    if !produced.isEmpty { outputSink.yield(produced) }
    return response
  }

  /// Connection figures for the health message.
  public var healthJSON: JSONObject { bridge.withLock { $0.healthJSON } }

  private func feed(_ step: (inout GATTBridge) -> [GATTOutput]) {
    let produced = bridge.withLock { step(&$0) }
    if !produced.isEmpty { outputSink.yield(produced) }
  }

  private func consumeEvents() async {
    let events = central.events()
    for await event in events {
      if Task.isCancelled { return }
      let now = Date().timeIntervalSince1970
      feed { $0.handle(event, now: now) }
    }
  }

  private func tick() async {
    while !Task.isCancelled {
      try? await Task.sleep(for: .seconds(1))
      let now = Date().timeIntervalSince1970
      feed { $0.tick(now: now) }
    }
  }

  private func forward(_ output: GATTOutput, in group: inout DiscardingTaskGroup) {
    switch output {
    case .publish(let topic, let payload, let retain):
      client.enqueue(
        MQTTMessage(
          topic: topic.rawValue, payload: payload, qos: retain ? .atLeastOnce : qos,
          retain: retain))
    case .reply(let address, let payload):
      guard (try? TopicName(address.topic)) != nil else { return }
      client.enqueue(
        MQTTMessage(
          topic: address.topic, payload: payload, qos: .atLeastOnce,
          properties: MQTTPublishProperties(correlationData: address.correlationData)))
    case .connect(let address, let timeout):
      logger.info("connecting", metadata: ["ble.address": "\(address)"])
      group.addTask {
        var failure: CentralError?
        do throws(CentralError) {
          try await self.central.connect(address, timeout: timeout)
        } catch {
          failure = error
          self.logger.warning(
            "connection failed: \(error)", metadata: ["ble.address": "\(address)"])
        }
        let now = Date().timeIntervalSince1970
        self.feed { $0.connectFinished(address, error: failure, now: now) }
      }
    case .disconnect(let address):
      logger.info("disconnecting", metadata: ["ble.address": "\(address)"])
      group.addTask {
        do {
          try await self.central.disconnect(address)
        } catch {
          self.logger.warning(
            "disconnect failed: \(error)", metadata: ["ble.address": "\(address)"])
        }
      }
    case .execute(let operation):
      group.addTask { await self.execute(operation) }
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
    let now = Date().timeIntervalSince1970
    feed { $0.operationFinished(operation.id, result: result, now: now) }
  }
}
