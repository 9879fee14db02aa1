import Backoff
public import BridgeCore
import Foundation
public import Logging
import LoopSupport
public import Mosquitto
import Synchronization
public import Web

/// Runs the central role (rows C1–C11): BLE central events, `scan` and `device/*` requests and
/// device-plane requests in; MQTT publications, discovery commands, connections and GATT
/// operations out.
///
/// The pure ``CentralBridge`` decides everything (one device model for discovery and
/// connections). A ``BridgeDriver`` feeds it the central's events (one subscription) and a
/// one-second tick, hands its publications to the MQTT client at once, and carries out its
/// radio commands off that path: discovery start/stop and device removals one at a time in
/// order (a failed start is reported once and retried with ``Backoff``), connections and GATT
/// operations each in a child task, their outcomes fed back to the bridge. The bridge hands out
/// one operation per characteristic at a time, so operations on one characteristic never
/// overlap, and a slow `StartDiscovery` or device never holds back a publication.
public final class CentralRoleService: Sendable {
  private let central: any BLECentral
  let gattCentral: (any GATTCentral)?
  let driver: BridgeDriver<CentralBridge>
  let logger: Logger
  /// Where GATT operations are counted and timed (`/metrics`), if anywhere.
  private let metrics: GatewayMetrics?
  /// Where connected devices' RSSI is read from, and how often (seconds); `nil` for none.
  let linkQuality: (reader: any LinkQualityReader, interval: Double, adapter: String?)?
  /// Set once reading link quality turned out impossible (no capability, no interface): said
  /// once, not tried again.
  let linkQualityRefused = Mutex<CentralError?>(nil)
  /// What the search for an earlier run's leftovers looks for
  /// (``restore(previous:client:homeAssistantPrefix:)``).
  let leftoverSearch = Mutex(LeftoverSearch())
  /// Discovery starts to try again (adapter → filter, when, the failed starts so far): bluetoothd
  /// answers `InProgress` for a while after it (re)starts, and a refused start must not stop
  /// scanning for good. Times are the driver's monotonic clock.
  private let retries = Mutex<
    [String: (filter: DiscoveryFilter, at: Double, streak: DiscoveryRetry)]
  >([:])

  /// The failed starts of discovery on one adapter since it last started: when to try again,
  /// and whether to report it.
  ///
  /// bluetoothd answers `InProgress` while it is busy (connecting a device, finishing a
  /// discovery of its own), which ends by itself within seconds: those starts are retried
  /// every 0.25 s, without backing off and without a report, up to ``busyLimit`` times in a
  /// row (measured in the lab after a bluetoothd restart: a doubling backoff left discovery
  /// off for up to 2 s after bluetoothd had finished reconnecting the devices). Other
  /// failures, and busy answers past that, back off from 0.25 s to 30 s; the first of them is
  /// reported (`discovery_failed`), once per streak.
  struct DiscoveryRetry: Sendable {
    /// Busy answers retried at the shortest delay before they count as failures.
    static let busyLimit = 40
    static let backoff = Backoff(minimum: 0.25, maximum: 30)

    /// Busy answers so far.
    private(set) var busy = 0
    /// Other failures (and busy answers past the limit) so far.
    private(set) var failures = 0

    /// Records a failed start.
    ///
    /// - Parameter error: Why it failed.
    /// - Returns: The seconds to wait, whether bluetoothd was only busy, and whether to
    ///   report the failure.
    mutating func record(_ error: CentralError) -> (delay: Double, busy: Bool, report: Bool) {
      if error.code == .inProgress && busy < Self.busyLimit {
        busy += 1
        return (Self.backoff.minimum, true, false)
      }
      failures += 1
      return (Self.backoff.nominalDelay(afterFailures: failures - 1), false, failures == 1)
    }

    /// Every failed start so far.
    var attempts: Int { busy + failures }
  }

  /// Creates the service.
  ///
  /// - Parameters:
  ///   - central: The BLE central (BlueZ, or a simulated one); connections and GATT are served
  ///     when it is also a ``GATTCentral``.
  ///   - discovery: The configured discovery half.
  ///   - gatt: The configured connection half (used only with a ``GATTCentral``).
  ///   - client: Where publications go.
  ///   - qos: QoS of non-retained publications.
  ///   - clock: The clock the bridge runs on.
  ///   - metrics: Where GATT operations are counted and timed, if anywhere.
  ///   - ownership: Fleet ownership, or `nil` for a gateway that owns every device it hears.
  ///   - linkQuality: Where connected devices' RSSI is read, every `interval` seconds, on
  ///     `adapter` (or each known adapter in turn); `nil` for none.
  ///   - logger: Where failures are logged.
  public init(
    central: any BLECentral, discovery: DiscoveryBridge, gatt: GATTBridge, client: MQTTClient,
    qos: MQTTQoS, clock: BridgeClock = .system, metrics: GatewayMetrics? = nil,
    ownership: OwnershipArbiter? = nil,
    linkQuality: (reader: any LinkQualityReader, interval: Double, adapter: String?)? = nil,
    logger: Logger
  ) {
    self.central = central
    self.metrics = metrics
    self.linkQuality = linkQuality
    gattCentral = central as? any GATTCentral
    self.logger = logger
    let bridge = CentralBridge(
      discovery: discovery, gatt: gattCentral == nil ? nil : gatt, ownership: ownership)
    driver = BridgeDriver(bridge: bridge, clock: clock, client: client, qos: qos, logger: logger)
  }

  /// Whether the central serves connections and GATT (device-plane requests).
  public var servesConnections: Bool { gattCentral != nil }

  /// Runs until the task is cancelled.
  public func run() async {
    await withTaskGroup(of: Void.self) { group in
      group.addTask { await self.driver.runCommands { await self.perform($0) } }
      group.addTask { await self.consumeEvents() }
      group.addTask {
        await self.driver.runTicks(every: .seconds(1)) { self.startDueRetries() }
      }
      if self.linkQuality != nil, self.gattCentral != nil {
        group.addTask {
          await self.readLinkQualities()
          // Reading may stop for good (refused); the role must not: the first task to end
          // ends them all.
          await Self.untilCancelled()
        }
      }
      await group.next()
      group.cancelAll()
    }
    driver.finish()
  }

  /// Returns when the task is cancelled.
  private static func untilCancelled() async {
    let (never, _) = AsyncStream.makeStream(of: Void.self)
    for await _ in never {}
  }

  /// Answers a `scan` bridge request (start/stop/filter).
  public func scan(_ command: ScanCommand) -> BridgeResponse {
    driver.feed { bridge, _ in bridge.discovery { $0.apply(command) } }
  }

  /// Publishes every device's Home Assistant discovery configs again (Home Assistant sent
  /// its `online` birth message).
  public func republishHomeAssistant() {
    driver.feed { bridge, _ in bridge.discovery { ($0.homeAssistantRepublish(), ()) } }
  }

  /// Answers a `device/remove` bridge request (``CentralBridge/remove(_:now:)``).
  public func remove(_ body: JSONObject) -> BridgeResponse {
    driver.feed { bridge, now in bridge.remove(body, now: now) }
  }

  /// Answers `device/connect` and `device/disconnect` bridge requests.
  ///
  /// - Parameters:
  ///   - connect: `true` for `device/connect`.
  ///   - body: The request's JSON object.
  /// - Returns: The response.
  public func deviceRequest(connect: Bool, body: JSONObject) -> BridgeResponse {
    driver.feed { bridge, now in
      bridge.deviceRequest(connect: connect, body: body, now: now) ?? ([], Self.noConnections)
    }
  }

  /// The broker connection was lost (``CentralBridge/brokerLost()``: with fleet ownership,
  /// nothing device-level goes out until this gateway's `online` state is back).
  public func brokerLost() {
    driver.feed { bridge, _ in bridge.brokerLost() }
  }

  /// Answers a `device/rename` request (``CentralBridge/renameRequest(_:)``): the name is
  /// published to the broker; the rename itself follows when the broker hands it back.
  ///
  /// - Parameter body: The request's JSON object.
  /// - Returns: The response.
  public func renameRequest(_ body: JSONObject) -> BridgeResponse {
    driver.feed { bridge, _ in bridge.renameRequest(body) }
  }

  /// Takes in a device's owner claim, a gateway's state (fleet ownership) or a device's name.
  ///
  /// - Parameters:
  ///   - message: What the topic is about.
  ///   - payload: The payload.
  public func fleetMessage(_ message: Topics.FleetMessage, payload: [UInt8]) {
    driver.feed { bridge, now in bridge.fleetMessage(message, payload: payload, now: now) }
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
      bridge.request(about: request.device, now: now) {
        $0.request(request, payload: message.payload, reply: reply, now: now)
      }
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
    driver.feed { bridge, now in
      bridge.request(about: request.device, now: now) {
        $0.refuse(request, code: code, message: text, reply: reply)
      }
    }
  }

  /// Says, before the gateway's `offline` state, that it lets its devices go (fleet ownership:
  /// ``CentralBridge/stopping()``).
  public func announceStop() {
    driver.feed { bridge, _ in bridge.stopping() }
  }

  /// Tears every link down in order (notifications off, then disconnect) and waits until all
  /// are down or `timeout` seconds passed; then disconnects what is left, all at once, and waits
  /// for those answers at most `forcedLimit` seconds more.
  ///
  /// The forced disconnections run in tasks of their own: when the gateway's stop is cut short
  /// (the service group's limit cancels the caller) a `Disconnect` on its way is not withdrawn
  /// — bluetoothd carries out one it received — and only the wait for its answer ends; the log
  /// says so rather than calling it a failure. A cancelled caller also stops waiting for the
  /// orderly teardown at once.
  ///
  /// - Parameters:
  ///   - timeout: The most seconds the orderly teardown may take.
  ///   - forcedLimit: The most seconds to wait for the answers of the forced disconnections.
  public func shutdown(timeout: Double = 5, forcedLimit: Double = 0.5) async {
    guard let gattCentral else { return }
    driver.feed { bridge, now in bridge.connections(now: now) { $0.shutdown(now: now) } }
    let started = ContinuousClock.now
    let deadline = started + .seconds(timeout)
    while !Task.isCancelled, ContinuousClock.now < deadline,
      driver.read({ $0.gatt?.isIdle == false })
    {
      try? await Task.sleep(for: .milliseconds(50))
    }
    let left = driver.read { $0.gatt?.connectedAddresses ?? [] }
    guard !left.isEmpty else { return }
    let answers = ForcedDisconnections()
    let elapsed = (ContinuousClock.now - started).seconds
    for address in left {
      logger.warning(
        "still connected \(String(format: "%.1f", elapsed)) s into the shutdown: disconnecting at once",
        metadata: ["ble.address": "\(address)"])
      // Not a child task: the caller's cancellation must not withdraw the call.
      Task {
        var failure: CentralError?
        do throws(CentralError) {
          try await gattCentral.disconnect(address)
        } catch {
          failure = error
        }
        answers.results.withLock { $0[address] = .some(failure) }
      }
    }
    let forcedDeadline = ContinuousClock.now + .seconds(forcedLimit)
    while !Task.isCancelled, ContinuousClock.now < forcedDeadline,
      answers.results.withLock({ $0.count < left.count })
    {
      try? await Task.sleep(for: .milliseconds(10))
    }
    let answered = answers.results.withLock { $0 }
    for address in left {
      switch answered[address] {
      case .some(nil): break
      case .some(let error?):
        logger.warning(
          "disconnect at shutdown failed: \(error); bluetoothd may keep the link",
          metadata: ["ble.address": "\(address)"])
      case nil:
        logger.notice(
          "disconnect at shutdown asked for, not withdrawn; the gateway stops before bluetoothd answered",
          metadata: ["ble.address": "\(address)"])
      }
    }
  }

  /// What keeps the central role from doing its job (``AdapterTracker/problems``).
  public var adapterProblems: [String] { driver.read { $0.discovery.adapters.problems } }

  /// The devices list, as `<base>/bridge/<gw>/devices` carries it (the `devices` request).
  public var devicesJSON: JSONValue { driver.read { $0.discovery.devicesJSON } }

  /// The adapters in a few words (``AdapterTracker/summary``).
  public var adapterSummary: String { driver.read { $0.discovery.adapters.summary } }

  /// bluetoothd's version as its adapters report it, once one is known.
  public var stackVersion: String? { driver.read { $0.discovery.adapters.stackVersion } }

  /// Discovery figures for the health message.
  public var discoveryHealthJSON: JSONObject { driver.read { $0.discovery.healthJSON } }

  /// Connection figures for the health message, with the radio commands waiting and dropped.
  public var connectionsHealthJSON: JSONObject {
    var json = driver.read { $0.gatt?.healthJSON ?? [:] }
    json["radio_commands_waiting"] = .integer(Int64(driver.waitingCommands))
    json["radio_commands_dropped"] = .integer(Int64(clamping: driver.droppedCommands))
    return json
  }

  private static let noConnections = BridgeResponse.failure(
    code: "not_supported", message: "this Bluetooth central cannot connect", transaction: nil)

  private func consumeEvents() async {
    await driver.follow(central.attach) {
      do {
        return try await central.adapters().map(CentralEvent.adapterChanged)
      } catch {
        // Refused before this subscription: the event it missed.
        if let refused = error as? CentralError, refused.code == .accessDenied {
          return [.stackRefused(refused)]
        }
        logger.warning("Bluetooth adapters unavailable: \(error)")
        return []
      }
    } _: { bridge, event, now in
      bridge.handle(event, now: now)
    }
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
      guard driver.read({ $0.discovery.adapters.shouldDiscover(adapter) }) else {
        retries.withLock { $0[adapter] = nil }
        continue
      }
      driver.enqueue(
        .discovery(.startDiscovery(adapter: adapter, filter: retry.filter)), lane: .serial)
    }
  }

  private func perform(_ command: CentralBridge.Output) async {
    switch command {
    case .discovery(let output): await perform(output)
    case .gatt(let output): await perform(output)
    case .fleet: break  // handed to the MQTT client by the driver
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
        let (attempts, retry) = retries.withLock { retries in
          var streak = retries[adapter]?.streak ?? DiscoveryRetry()
          let retry = streak.record(error)
          retries[adapter] = (filter, now + retry.delay, streak)
          return (streak.attempts, retry)
        }
        if retry.busy {
          logger.info(
            "discovery waits: bluetoothd is busy (attempt \(attempts)), retrying in \(retry.delay) s: \(error)",
            metadata: ["ble.adapter": "\(adapter)"])
        } else {
          logger.error(
            "discovery could not start (attempt \(attempts)), retrying in \(retry.delay) s: \(error)",
            metadata: ["ble.adapter": "\(adapter)"])
        }
        if retry.report {
          driver.feed { bridge, _ in
            bridge.discovery { ($0.discoveryFailed(adapter: adapter, error: error), ()) }.0
          }
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

  private func perform(_ command: GATTOutput) async {
    guard let gattCentral else { return }
    switch command {
    case .publish, .reply: break  // never a command (see `action(for:qos:)`)
    case .connect(let address, let timeout):
      logger.info("connecting", metadata: ["ble.address": "\(address)"])
      var failure: CentralError?
      do throws(CentralError) {
        try await gattCentral.connect(address, timeout: timeout)
      } catch {
        failure = error
        logger.warning("connection failed: \(error)", metadata: ["ble.address": "\(address)"])
      }
      driver.feed { bridge, now in
        bridge.connections(now: now) { $0.connectFinished(address, error: failure, now: now) }
      }
    case .disconnect(let address):
      logger.info("disconnecting", metadata: ["ble.address": "\(address)"])
      do {
        try await gattCentral.disconnect(address)
      } catch  where Task.isCancelled {
        // The gateway is stopping and cancelled the call:
        // ``shutdown(timeout:forcedLimit:)`` disconnects a link that is still up.
        logger.debug(
          "disconnect abandoned at shutdown: \(error)", metadata: ["ble.address": "\(address)"])
      } catch {
        logger.warning("disconnect failed: \(error)", metadata: ["ble.address": "\(address)"])
      }
    case .execute(let operation):
      await execute(operation, on: gattCentral)
    }
  }

  private func execute(_ operation: GATTOperation, on central: any GATTCentral) async {
    let id = operation.characteristic
    let started = ContinuousClock.now
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
        try await central.setNotify(
          id, enabled: enabled, method: operation.notifyMethod, timeout: operation.timeout)
        result = .success([])
      }
    } catch {
      logger.warning(
        "GATT \(operation.kind.name) failed: \(error)",
        metadata: ["ble.characteristic": "\(id)"])
      result = .failure(error)
    }
    if let metrics {
      let ok: Bool = if case .success = result { true } else { false }
      metrics.recordOperation(
        operation.kind.name, ok: ok, seconds: (ContinuousClock.now - started).seconds)
    }
    driver.feed { bridge, now in
      bridge.connections(now: now) { $0.operationFinished(operation.id, result: result, now: now) }
    }
  }
}

extension CentralBridge: DrivenBridge {
  typealias Command = CentralBridge.Output

  static func action(for output: Output, qos: MQTTQoS) -> DriverAction<Output> {
    switch output {
    case .discovery(.publish(let topic, let payload, let retain)),
      .gatt(.publish(let topic, let payload, let retain)):
      return .publish(
        MQTTMessage(
          topic: topic.rawValue, payload: payload, qos: retain ? .atLeastOnce : qos,
          retain: retain))
    case .gatt(.reply(let address, let payload)):
      // The reply topic was checked against `ReplyTopicPolicy`; one that is not a valid topic
      // name cannot be published.
      guard (try? TopicName(address.topic)) != nil else { return .none }
      // An answer to a request: ahead of queued values.
      return .handOffs([
        .answer(
          MQTTMessage(
            topic: address.topic, payload: payload, qos: .atLeastOnce,
            properties: MQTTPublishProperties(correlationData: address.correlationData)))
      ])
    case .fleet(.claim(let topic, let payload)):
      return .handOffs([
        .publishOnce(
          MQTTMessage(topic: topic.rawValue, payload: payload, qos: .atLeastOnce, retain: true))
      ])
    case .fleet(.forgetRetained(let prefix)):
      return .handOffs([.forgetRetainedBelow(prefix)])
    case .fleet(.forgetRetainedTopic(let topic)):
      return .handOffs([.forgetRetained(topic.rawValue)])
    case .discovery:
      return .command(output, .serial)
    case .gatt:
      return .command(output, .concurrent)
    }
  }

  mutating func tick(now: Double, wallClockOffset: Double) -> [Output] {
    self.wallClockOffset = wallClockOffset
    return tick(now: now)
  }
}

/// The answers of the disconnections forced at shutdown
/// (``CentralRoleService/shutdown(timeout:forcedLimit:)``), filled by tasks that outlive a
/// cancelled caller.
private final class ForcedDisconnections: Sendable {
  /// Each address's answer: `nil` inside when it succeeded.
  let results = Mutex<[BluetoothAddress: CentralError?]>([:])
}
