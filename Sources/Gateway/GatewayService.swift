public import BridgeCore
import Foundation
public import GatewaySettings
public import Logging
import LoopSupport
public import Mosquitto
public import ServiceLifecycle
import Synchronization
import UnixSignals
public import Web

/// The running gateway: one MQTT connection, the bridge plane of TOPICS.md, and (in later
/// parts) the Bluetooth roles.
///
/// On start it publishes the retained `online` state (the last will says `offline`) and the
/// retained `info`, answers bridge requests and publishes `health` every
/// `gateway.health_interval` seconds. On graceful shutdown (SIGTERM/SIGINT through the
/// `ServiceGroup`) it publishes the retained `offline` state itself and disconnects cleanly.
public final class GatewayService: Service, Sendable {
  /// The topic map of this gateway.
  public let topics: Topics
  /// The MQTT client the gateway publishes through.
  public let client: MQTTClient
  /// The loops that must stay alive: the MQTT loop thread, the radio's threads, the bridges.
  let loops: LoopMonitor
  /// How often ``loops`` are asked, and how long each may take to answer.
  let loopPeriod: Duration
  /// bluetoothd's version as last published in `info`.
  private let publishedStackVersion = Mutex<String?>(nil)
  /// The service manager's notification socket.
  let notifier: SystemdNotifier
  let configuration: GatewayConfiguration
  let logger: Logger
  private let started = ContinuousClock.now
  private let startedAt = Date()
  private let router = BridgeRequestRouter()
  private let replyPolicy: ReplyTopicPolicy
  private let counters = Counters()
  /// This run, in the retained state; and what the state of other runs with our id means.
  private let instance: GatewayInstance
  let duplicates: Mutex<DuplicateGatewayGuard>
  /// Signalled whenever ``duplicates`` changed: ``untilStopped()`` waits for it while no rival
  /// is known, instead of checking four times a second for ever.
  private let duplicatesChanged: AsyncStream<Void>
  private let duplicatesChangedSink: AsyncStream<Void>.Continuation
  /// The fleet's messages that arrived before the gateway started acting; `nil` from then on.
  private let standbyFleet = Mutex<HeldFleetMessages?>(HeldFleetMessages())
  /// The devices list an earlier run left retained (``restorePreviousDevices()``).
  let previousDevices = PreviousDevicesList()
  /// `peripheral/start|stop` requests waiting for ``servePeripheralCommands()``.
  private let peripheralCommandStream: AsyncStream<PeripheralCommand>
  private let peripheralCommands: AsyncStream<PeripheralCommand>.Continuation
  private static let peripheralCommandLimit = 16
  let centralRole: CentralRoleService?
  /// The multi-level device names whose request topics have subscriptions of their own.
  private let namedSubscriptions = Mutex<Set<String>>([])
  /// The central port, for the simulated radio's figures in health.
  private let centralPort: (any BLECentral)?
  let peripheralRole: PeripheralRoleService?
  /// Home Assistant discovery of the gateway's own device (the central role holds the
  /// devices'); `nil` when `homeassistant.enabled` is off.
  let homeAssistant: HomeAssistantDiscovery?
  /// The radio's own sections of `health`.
  let radioHealth: (@Sendable () -> JSONObject)?

  /// Creates the gateway from a loaded configuration.
  /// - Parameters:
  ///   - configuration: the loaded configuration.
  ///   - logger: the gateway's logger.
  ///   - central: the BLE central for the discovery half, or nil to run the MQTT side only.
  ///   - peripheral: the BLE peripheral for the peripheral role, or nil for none.
  ///   - liveness: Checks that the radio's own threads answer, for the systemd watchdog and
  ///     health.
  ///   - notifier: The service manager's notification socket (from the environment).
  ///   - web: The web page's view of the gateway (every publication goes to it) and its
  ///     metrics, when `web.enabled`.
  ///   - linkQuality: Where connected devices' RSSI is read (`bluetooth.connect.rssi`), if
  ///     anywhere.
  ///   - radioHealth: The radio's own sections of `health`, if any.
  /// - Throws: ``GatewayError`` when the base topic or the MQTT settings are unusable.
  public init(
    configuration: GatewayConfiguration, logger: Logger, central: (any BLECentral)? = nil,
    peripheral: (any BLEPeripheral)? = nil, liveness: [LivenessCheck] = [],
    notifier: SystemdNotifier = SystemdNotifier(),
    web: (hub: WebHub, metrics: GatewayMetrics)? = nil,
    linkQuality: (any LinkQualityReader)? = nil, radioHealth: (@Sendable () -> JSONObject)? = nil
  ) throws(GatewayError) {
    self.configuration = configuration
    self.radioHealth = radioHealth
    self.logger = logger
    self.notifier = notifier
    centralPort = central
    loopPeriod = min(notifier.watchdogInterval.map { $0 / 2 } ?? .seconds(5), .seconds(5))
    (peripheralCommandStream, peripheralCommands) = AsyncStream.makeStream(
      bufferingPolicy: .bufferingOldest(Self.peripheralCommandLimit))
    let gateway = GatewayID(
      configuration.gateway.id ?? GatewayConfiguration.Gateway.systemHostname())
    do {
      topics = try Topics(base: configuration.mqtt.baseTopic, gateway: gateway)
    } catch {
      throw GatewayError("mqtt.base_topic: \(error)")
    }
    let instance = GatewayInstance.random(started: Date().timeIntervalSince1970)
    self.instance = instance
    // The broker publishes the will of a run that lost power after 1.5 × keepalive.
    duplicates = Mutex(
      DuplicateGatewayGuard(own: instance, grace: 1.5 * Double(configuration.mqtt.keepalive) + 5))
    (duplicatesChanged, duplicatesChangedSink) = AsyncStream.makeStream(
      of: Void.self, bufferingPolicy: .bufferingNewest(1))
    replyPolicy = ReplyTopicPolicy(
      prefix: configuration.mqtt.responseTopicPrefix ?? configuration.mqtt.baseTopic)
    do {
      var observer: (@Sendable (MQTTMessage) -> Void)?
      if let hub = web?.hub {
        observer = { message in
          hub.record(topic: message.topic, payload: message.payload, retain: message.retain)
        }
      }
      client = try MQTTClient(
        configuration: MQTTClientConfiguration(
          gateway: configuration, topics: topics, instance: instance),
        logger: logger, observer: observer)
    } catch {
      throw GatewayError("MQTT settings: \(error.message)")
    }
    // One clock for every bridge: monotonic timers, wall-clock timestamps.
    let clock = BridgeClock.system
    homeAssistant = configuration.homeAssistantConfiguration.map { [topics] in
      HomeAssistantDiscovery(topics: topics, configuration: $0)
    }
    if let central {
      var discovery = configuration.discoveryBridgeConfiguration
      discovery.homeAssistant = homeAssistant
      centralRole = CentralRoleService(
        central: central,
        discovery: DiscoveryBridge(topics: topics, configuration: discovery),
        gatt: GATTBridge(topics: topics, configuration: configuration.gattBridgeConfiguration),
        client: client, qos: MQTTQoS(rawValue: configuration.mqtt.qos) ?? .atLeastOnce,
        clock: clock, metrics: web?.metrics,
        ownership: configuration.fleet.ownership.enabled
          ? OwnershipArbiter(
            topics: topics, instance: instance.id,
            configuration: configuration.ownershipConfiguration) : nil,
        linkQuality: configuration.bluetooth.connect.rssi
          ? linkQuality.map {
            (
              $0, configuration.bluetooth.connect.rssiInterval,
              configuration.bluetooth.adapter
            )
          } : nil,
        logger: logger)
    } else {
      centralRole = nil
    }
    if let peripheral {
      let p = configuration.peripheral
      let definition = PeripheralService(
        service: (try? BluetoothUUID(p.service)) ?? GATTBridge.defaultTransferService,
        characteristic: (try? BluetoothUUID(p.characteristic))
          ?? GATTBridge.defaultTransferCharacteristic,
        writeCharacteristic: p.writeCharacteristic.flatMap { try? BluetoothUUID($0) },
        localName: p.localName.isEmpty ? nil : p.localName, adapter: p.adapter,
        requireEncryption: p.requireEncryption,
        allowedCentrals: Set(p.allow.compactMap { try? BluetoothAddress($0) }))
      var centralObserver: (@Sendable (PeripheralEvent) -> Void)?
      if let role = centralRole {
        centralObserver = { event in role.peripheralEvent(event) }
      }
      peripheralRole = PeripheralRoleService(
        peripheral: peripheral,
        bridge: PeripheralBridge(
          topics: topics, service: definition, maxTextBytes: p.maxTextBytes),
        definition: definition, startAtLaunch: p.enabled, chunkInterval: p.chunkInterval,
        client: client, clock: clock,
        observer: centralObserver, logger: logger)
    } else {
      peripheralRole = nil
    }
    let client = self.client
    let (centralRole, peripheralRole) = (self.centralRole, self.peripheralRole)
    loops = LoopMonitor(
      [LivenessCheck(name: "the MQTT loop thread") { (try? await client.ping()) != nil }]
        + liveness
        + [
          // Each read takes a bridge's lock, which a stuck step would hold.
          LivenessCheck(name: "the bridges") {
            _ = centralRole?.discoveryHealthJSON
            _ = centralRole?.connectionsHealthJSON
            _ = peripheralRole?.healthJSON
            return true
          }
        ])
  }

  /// Whether device ownership is arbitrated across the fleet (`fleet.ownership.enabled`, with
  /// the central role).
  private var fleetOwnership: Bool {
    configuration.fleet.ownership.enabled && centralRole != nil
  }

  /// Runs until graceful shutdown, then publishes `offline` and disconnects.
  public func run() async throws {
    logger.info(
      "gatt2mqtt \(GatewayVersion.current) starting",
      metadata: [
        "gateway.id": "\(topics.gateway.rawValue)",
        "mqtt.broker": "\(configuration.mqtt.host):\(configuration.mqtt.port)",
      ])
    // Our own state first, so that the state another run with our gateway.id left retained
    // reaches us before ours replaces it (DuplicateGatewayGuard).
    if fleetOwnership {
      // Every gateway's state (ours included) and every device's owner claim.
      client.addSubscription(topics.fleetStateFilter.rawValue)
      client.addSubscription(topics.ownerFilter.rawValue)
    } else {
      client.addSubscription(topics.bridgeState.rawValue)
    }
    if centralRole != nil {
      // Names given by device/rename on any gateway of the fleet (retained).
      client.addSubscription(topics.namesFilter.rawValue)
    }
    client.start()
    client.setRetainedState(
      MQTTMessage(
        topic: topics.bridgeState.rawValue, payload: instance.statePayload(online: true),
        qos: .atLeastOnce, retain: true))
    if let homeAssistant {
      client.addSubscription(homeAssistant.statusTopic)
    }

    var stop = StopCause.shutdown
    await withTaskGroup(of: Void.self) { group in
      group.addTask { await self.serveRequests() }
      group.addTask { await self.refuseOverflow() }
      group.addTask { await self.logHealthOnSignal() }
      group.addTask { await self.superviseLoops() }
      if self.fleetOwnership {
        group.addTask { await self.followBroker() }
      }
      group.addTask {
        // Nothing but states until no other run with our gateway.id acts.
        guard await self.untilClearToAct() else { return }
        await self.act()
      }
      stop = await untilStopped()
      notifier.send("STOPPING=1\n" + SystemdNotifier.status("stopping"))
      // A newcomer that stops for another run owns nothing; a clean stop lets devices go.
      if stop == .shutdown { centralRole?.announceStop() }
      if let centralRole = self.centralRole, centralRole.servesConnections {
        logger.info("closing Bluetooth connections")
        // 1 s for the orderly teardown and 0.2 s for forced disconnections leave the MQTT
        // client its 0.6 s within the group's limit (GatewayRunner.gracefulShutdownLimit).
        await centralRole.shutdown(timeout: 1, forcedLimit: 0.2)
      }
      if let peripheralRole = self.peripheralRole {
        logger.info("withdrawing the peripheral service")
        await peripheralRole.stop()
      }
      group.cancelAll()
    }

    if case .duplicate(let acted) = stop {
      // The other run's `online` stands: no `offline` of ours, and a clean DISCONNECT sends no
      // last will. A run that acted before it could know is restarted by systemd into standing
      // by.
      await client.shutdown(finalMessages: [], timeout: 0.6)
      throw GatewayError(
        "another gatt2mqtt runs with gateway.id '\(topics.gateway.rawValue)'; give each gateway its own gateway.id",
        exitCode: acted ? Self.exitRestart : Self.exitConfiguration)
    }
    if duplicates.withLock({ $0.stopsQuietly }) {
      // Stopped while standing by for a run that answered: the state is that run's.
      await client.shutdown(finalMessages: [], timeout: 0.6)
      logger.info("gatt2mqtt stopped (it stood by: the other run's state stands)")
      return
    }
    logger.info("gatt2mqtt stopping: publishing offline state")
    // The last will is the retained `offline` state (MQTTClientConfiguration+Gateway.swift).
    await client.shutdown(publishingWill: true, timeout: 0.6)
    logger.info("gatt2mqtt stopped")
  }

  /// Exit status when another run with our `gateway.id` stays online (`EX_CONFIG`: systemd's
  /// unit does not restart it).
  static let exitConfiguration: Int32 = 78
  /// Exit status when another run with our `gateway.id` turned up after this one started acting
  /// (`EX_TEMPFAIL`: systemd restarts it, and the new run stands by).
  static let exitRestart: Int32 = 75
  /// How long the roles wait for the broker to hand our own state back before they start
  /// without knowing whether another run uses our `gateway.id` (a broker unreachable at start).
  static let settleWait: Duration = .seconds(5)

  /// The gateway's work: the radio roles, requests and health. Starts once no other run with our
  /// `gateway.id` acts (``untilClearToAct()``).
  private func act() async {
    client.setRetainedState(
      MQTTMessage(
        topic: topics.bridgeInfo.rawValue, payload: infoPayload(), qos: .atLeastOnce,
        retain: true))
    // The gateway's device before any Bluetooth device's, so that their `via_device` resolves
    // in Home Assistant.
    publishHomeAssistantGateway()
    // What the fleet said meanwhile, in order; the lock keeps newer messages behind it.
    standbyFleet.withLock { held in
      for (message, payload) in held?.messages ?? [] {
        takeFleetMessage(message, payload: payload)
      }
      if let dropped = held?.dropped, dropped > 0 {
        logger.warning(
          "\(dropped) fleet messages past \(HeldFleetMessages.limit) topics were dropped while standing by"
        )
      }
      held = nil
    }
    subscribeToPreviousDevices()  // before the central role's first devices list
    await withTaskGroup(of: Void.self) { group in
      group.addTask { await self.subscribeToRequests() }
      group.addTask { await self.publishHealth() }
      group.addTask { await self.restorePreviousDevices() }
      if let centralRole = self.centralRole {
        group.addTask { await centralRole.run() }
      }
      if let peripheralRole = self.peripheralRole {
        group.addTask { await peripheralRole.run() }
        group.addTask { await self.servePeripheralCommands() }
      } else if self.centralRole?.servesConnections == true {
        group.addTask { await self.servePeripheralCommands() }
      }
    }
  }

  /// Lets this run act at once, without ``run()`` (tests that drive ``handle(_:)``).
  func beginActingNow() {
    duplicates.withLock { $0.beginActing() }
    standbyFleet.withLock { $0 = nil }
  }

  /// Waits until this run may act (``DuplicateGatewayGuard/mayAct``): the broker handed our
  /// own state back and no older run with our `gateway.id` is online. A newcomer stands by here
  /// until the other run goes offline (then it acts) or its grace ends (``untilStopped()``
  /// stops it). Without an answer from the broker within ``settleWait`` the run acts anyway.
  ///
  /// - Returns: `false` when cancelled before it may act.
  private func untilClearToAct() async -> Bool {
    let deadline = ContinuousClock.now + Self.settleWait
    while !Task.isCancelled {
      let late = ContinuousClock.now >= deadline
      let start: Bool? = duplicates.withLock { guardState in
        guard guardState.mayAct || (late && guardState.rival == nil) else { return nil }
        guardState.beginActing()
        return guardState.confirmed
      }
      if let confirmed = start {
        if !confirmed {
          logger.notice(
            "the broker has not handed back this gateway's state within \(Self.settleWait): starting without knowing whether another run uses gateway.id '\(topics.gateway.rawValue)'"
          )
        }
        return true
      }
      try? await Task.sleep(for: .milliseconds(20))
    }
    return false
  }

  /// Why the gateway stops.
  private enum StopCause: Equatable {
    /// SIGTERM, SIGINT or SIGHUP.
    case shutdown
    /// Another run with our `gateway.id` stays online; `acted` when this run had already
    /// started acting (exit 75 rather than 78).
    case duplicate(acted: Bool)
  }

  /// Waits for the graceful shutdown, or for the end of the grace a newcomer gets when another
  /// run with our `gateway.id` is online (``DuplicateGatewayGuard``).
  ///
  /// - Returns: Why the gateway stops.
  private func untilStopped() async -> StopCause {
    await withTaskGroup(of: StopCause.self) { race in
      race.addTask {
        try? await gracefulShutdown()
        return .shutdown
      }
      race.addTask {
        var changes = self.duplicatesChanged.makeAsyncIterator()
        while !Task.isCancelled {
          let now = self.seconds(ContinuousClock.now)
          let (stop, acted, stale, rival) = self.duplicates.withLock {
            ($0.shouldStop(now: now), $0.stopsAtOnce, $0.dismissSilentRival(now: now), $0.rival)
          }
          if stop { return .duplicate(acted: acted) }
          if let stale { self.report(stale, now: now) }
          // Without a rival nothing changes with time alone: wait for a state message.
          // (Should the stream end before cancellation, checking four times a second again.)
          var poll = rival != nil
          if !poll { poll = await changes.next() == nil && !Task.isCancelled }
          if poll { try? await Task.sleep(for: .milliseconds(250)) }
        }
        return .shutdown
      }
      let stop = await race.next() ?? .shutdown
      race.cancelAll()
      if case .duplicate(let acted) = stop {
        logger.critical(
          "stopping: another gatt2mqtt with gateway.id '\(topics.gateway.rawValue)' is \(acted ? "online and this run already acted (the broker answered late): restarting into standing by (exit \(Self.exitRestart))" : "still online; give each gateway its own gateway.id (exit \(Self.exitConfiguration))")"
        )
      }
      return stop
    }
  }

  /// Monotonic seconds since the gateway was made.
  private func seconds(_ instant: ContinuousClock.Instant) -> Double {
    started.duration(to: instant).seconds
  }

  /// Publishes our retained online state again.
  private func assertOnline() {
    client.setRetainedState(
      MQTTMessage(
        topic: topics.bridgeState.rawValue, payload: instance.statePayload(online: true),
        qos: .atLeastOnce, retain: true))
  }

  /// A message on our own `<base>/bridge/<gw>/state`: another run with our id?
  private func observeOwnState(_ message: MQTTMessage) {
    let now = seconds(ContinuousClock.now)
    let (verdict, first) = duplicates.withLock { guardState in
      let known = guardState.rival?.id
      let verdict = guardState.observe(message.payload, retained: message.retain, now: now)
      if case .newcomer(let other, _) = verdict { return (verdict, known != other) }
      return (verdict, true)
    }
    duplicatesChangedSink.yield()
    guard first else { return }
    report(verdict, now: now)
  }

  /// Logs what a verdict of ``DuplicateGatewayGuard`` means, acts on it and publishes the
  /// `duplicate_gateway_id` event.
  private func report(_ verdict: DuplicateGatewayGuard.Verdict, now: Double) {
    var data: JSONObject = ["instance": .string(instance.id)]
    let id = topics.gateway.rawValue
    switch verdict {
    case .none:
      return
    case .newcomer(let other, let deadline):
      let wait = Int((deadline - now).rounded(.up))
      let acted = duplicates.withLock { $0.acting }
      logger.critical(
        "another gatt2mqtt (instance \(other)) has been online with gateway.id '\(id)' longer than this one (instance \(instance.id)); \(acted ? "this one stops now" : "this one stands by and stops in \(wait) s unless that one goes offline or never answers (a stale state)"). Give each gateway its own gateway.id."
      )
      data["other"] = .string(other)
      data["role"] = "newcomer"
      data["stop_in_s"] = .integer(acted ? 0 : Int64(wait))
    case .incumbent(let other):
      logger.critical(
        "another gatt2mqtt (instance \(other)) started with this gateway's id '\(id)'; it will stop. Give each gateway its own gateway.id."
      )
      data["other"] = .string(other)
      data["role"] = "incumbent"
      assertOnline()  // the newcomer overwrote our retained state
    case .cleared(let other):
      logger.notice(
        "the other gatt2mqtt with this gateway.id (instance \(other)) went offline; carrying on")
      data["other"] = .string(other)
      data["role"] = "cleared"
      assertOnline()
    case .stale(let other):
      logger.notice(
        "the other gatt2mqtt with this gateway.id (instance \(other)) never answered: its online state was a stale one (a run gone while the broker was down); carrying on"
      )
      data["other"] = .string(other)
      data["role"] = "stale"
      assertOnline()
    case .overwritten(let other):
      logger.notice(
        "another run's offline state (instance \(other)) replaced ours; publishing ours again")
      assertOnline()
      return
    }
    client.enqueue(
      MQTTMessage(
        topic: topics.bridgeEvent.rawValue,
        payload: BridgePayload.event(type: "duplicate_gateway_id", data: data), qos: .atLeastOnce))
  }

  // MARK: - bridge plane

  private func subscribeToRequests() async {
    var filters = [
      (topics.bridgeRequestFilter.rawValue, "bridge"),
      (topics.fleetRequestFilter.rawValue, "fleet-wide"),
    ]
    if centralRole?.servesConnections == true {
      filters += topics.deviceRequestFilters.map { ($0.rawValue, "device") }
      // `+` is one level: a friendly name of several levels needs its own filters.
      for name in configuration.deviceNames.values.sorted() where name.levels.count > 1 {
        filters += topics.deviceRequestFilters(for: name).map { ($0.rawValue, "device") }
      }
    }
    if peripheralRole != nil {
      filters.append((topics.peripheralTextSet.rawValue, "peripheral text"))
      filters.append((topics.fleetPeripheralTextSet.rawValue, "fleet peripheral text"))
    }
    for (filter, kind) in filters {
      do {
        try await client.subscribe(filter, qos: .atLeastOnce)
        logger.debug("subscribed to \(kind) requests", metadata: ["mqtt.topic": "\(filter)"])
      } catch  where error.code == .cancelled {
        return  // shutting down before the broker answered
      } catch {
        logger.error(
          "cannot subscribe to requests: \(error)", metadata: ["mqtt.topic": "\(filter)"])
      }
    }
  }

  /// Tells fleet ownership when the broker connection is lost.
  private func followBroker() async {
    for await event in client.events {
      if Task.isCancelled { return }
      if case .disconnected = event { centralRole?.brokerLost() }
    }
  }

  /// Hands a fleet message (a claim, a gateway's state, a device's name) to the central role.
  private func takeFleetMessage(_ fleet: Topics.FleetMessage, payload: [UInt8]) {
    centralRole?.fleetMessage(fleet, payload: payload)
    if case .name = fleet { subscribeToNamedRequests(payload) }
  }

  /// A device renamed to a name of several levels: its request topics are not matched by the
  /// `+` filters, so it gets its own (kept after the rename; harmless when unused).
  private func subscribeToNamedRequests(_ payload: [UInt8]) {
    guard centralRole?.servesConnections == true,
      case .success(let name?) = CentralBridge.name(from: payload), name.levels.count > 1
    else { return }
    // At most this many names get subscriptions of their own (retained names are anyone's to
    // publish); the rest are reached by address.
    let added = namedSubscriptions.withLock { names in
      guard names.count < Self.namedSubscriptionLimit else { return false }
      return names.insert(name.rawValue).inserted
    }
    guard added else { return }
    for filter in topics.deviceRequestFilters(for: name) {
      client.addSubscription(filter.rawValue)
    }
  }

  /// The most multi-level names subscribed to.
  static let namedSubscriptionLimit = 256

  private func serveRequests() async {
    for await message in client.messages {
      if Task.isCancelled { break }
      handle(message)
    }
  }

  /// Publishes (retained, and again after every reconnect) the Home Assistant configs of the
  /// gateway's own device.
  private func publishHomeAssistantGateway() {
    guard let homeAssistant else { return }
    for config in homeAssistant.gatewayConfigs(peripheral: peripheralRole != nil) {
      client.setRetainedState(
        MQTTMessage(
          topic: config.topic.rawValue, payload: config.payload, qos: .atLeastOnce, retain: true))
    }
  }

  /// Answers `busy` to the requests that arrived while the inbound queue was full (the client
  /// hands them over without their payload).
  private func refuseOverflow() async {
    for await message in client.overflow {
      if Task.isCancelled { break }
      handle(message)
    }
  }

  /// Answers one incoming message; never throws, whatever the message holds.
  func handle(_ incoming: MQTTMessage) {
    if let fleet = topics.parseFleet(incoming.topic) {
      // Dropped by the inbound bounds: its payload is gone, and an empty claim or state would
      // read as cleared.
      if let reason = incoming.discarded {
        logger.warning(
          "a fleet message was dropped (\(reason)); the next one of its topic sets it right",
          metadata: ["mqtt.topic": "\(incoming.topic)"])
        return
      }
      let isName: Bool
      if case .name = fleet { isName = true } else { isName = false }
      if isName || fleetOwnership {
        if !isName, incoming.topic == topics.bridgeState.rawValue { observeOwnState(incoming) }
        // Standing by, they wait for the central role (``act()`` hands them over).
        let held = standbyFleet.withLock { held in
          guard held != nil else { return false }
          held?.hold(incoming.topic, fleet, payload: incoming.payload)
          return true
        }
        if !held { takeFleetMessage(fleet, payload: incoming.payload) }
        return
      }
    }
    if incoming.topic == topics.bridgeState.rawValue {
      observeOwnState(incoming)
      return
    }
    if incoming.topic == topics.bridgeDevices.rawValue {
      takePreviousDevices(incoming)
      return
    }
    if centralRole?.takeLeftover(incoming) == true { return }
    // Standing by, nothing else is this run's to serve: the other run answers (a persistent
    // session, `mqtt.clean_session: false`, may still deliver requests; the web page too).
    guard duplicates.withLock({ $0.acting }) else {
      logger.debug(
        "standing by: not served", metadata: ["mqtt.topic": "\(incoming.topic)"])
      return
    }
    if incoming.topic == homeAssistant?.statusTopic {
      if incoming.payload == Array("online".utf8) {
        logger.info("Home Assistant is online: publishing the discovery configs again")
        publishHomeAssistantGateway()
        centralRole?.republishHomeAssistant()
      }
      return
    }
    guard let topic = try? TopicName(incoming.topic), let request = topics.parseRequest(topic)
    else {
      if incoming.topic.hasPrefix(topics.bridgeRequestPrefix) {
        // A bridge request with an empty verb or level: answered, on response/invalid.
        let verb = String(incoming.topic.dropFirst(topics.bridgeRequestPrefix.count))
        var unread = incoming
        unread.properties.responseTopic = nil  // answered only on the gateway's own topic
        answer(
          verb: verb,
          .failure(
            code: "unknown_request", message: "not a request topic: empty verb or level",
            transaction: nil), to: unread)
        return
      }
      if let topic = try? TopicName(incoming.topic),
        let problem = topics.deviceRequestProblem(topic)
      {
        refuseTopic(incoming, problem)
        return
      }
      logger.debug("ignored message", metadata: ["mqtt.topic": "\(incoming.topic)"])
      return
    }
    var message = incoming
    if let replyTo = message.properties.responseTopic, let reason = replyPolicy.refusal(replyTo) {
      counters.repliesRefused.withLock { $0 += 1 }
      logger.warning(
        "MQTT 5 Response Topic not honoured: \(reason) (answers go under \(replyPolicy.prefix)/…/response…)",
        metadata: ["mqtt.topic": "\(message.topic)", "mqtt.response_topic": "\(replyTo)"])
      message.properties.responseTopic = nil
    }
    if let (code, text) = refusal(of: message, request) {
      counters.requestsRefused.withLock { $0 += 1 }
      refuse(request, message: message, code: code, text: text)
      return
    }
    switch request {
    case .peripheralText:
      peripheralRole?.text(message)
      return
    case .fleetPeripheralText:
      peripheralRole?.text(message, source: .fleet)
      return
    case .bridge, .fleet: break
    default:
      centralRole?.request(request, message: message)
      return
    }
    let (verb, fleet): (String, Bool) =
      switch request {
      case .fleet(let verb): (verb, true)
      case .bridge(let verb): (verb, false)
      default: ("", false)
      }
    let scan = centralRole.map { service in { (command: ScanCommand) in service.scan(command) } }
    let device = centralRole.flatMap { $0.servesConnections ? $0 : nil }.map { service in
      { (connect: Bool, body: JSONObject) in service.deviceRequest(connect: connect, body: body) }
    }
    let remove = centralRole.map { service in { (body: JSONObject) in service.remove(body) } }
    let devices = centralRole.map { service in { service.devicesJSON } }
    let rename = centralRole.map { service in
      { (body: JSONObject) in service.renameRequest(body) }
    }
    let route = router.route(
      verb: verb, payload: message.payload, health: { self.health() }, scan: scan,
      device: device, remove: remove, devices: devices, rename: rename,
      peripheral: peripheralRole != nil, linkQuality: centralRole?.servesConnections == true,
      fleetWide: fleet ? topics.bridgeRequestPrefix : nil)
    let queued: PeripheralCommand
    switch route {
    case .answer(let response):
      answer(verb: verb, response, to: message, fleet: fleet)
      return
    case .peripheral(let start, let transaction):
      queued = PeripheralCommand(
        action: .peripheral(start: start), verb: verb, transaction: transaction, message: message)
    case .linkQuality(let body, let transaction):
      queued = PeripheralCommand(
        action: .linkQuality(body), verb: verb, transaction: transaction, message: message)
    }
    if case .dropped = peripheralCommands.yield(queued) {
      answer(
        verb: verb,
        .failure(
          code: "busy", message: "\(Self.peripheralCommandLimit) radio requests are waiting",
          transaction: queued.transaction), to: message)
    }
  }

  /// Carries out `peripheral/start`, `peripheral/stop` and `device/rssi` one at a time, in
  /// order, and answers each when the radio has.
  private func servePeripheralCommands() async {
    for await command in peripheralCommandStream {
      var response: BridgeResponse
      switch command.action {
      case .peripheral(start: true):
        response = await peripheralRole?.start() ?? .success(transaction: nil)
      case .peripheral(start: false):
        await peripheralRole?.stop()
        response = .success(transaction: nil)
      case .linkQuality(let body):
        response =
          await centralRole?.readLinkQuality(body)
          ?? .failure(code: "not_supported", message: "no central role", transaction: nil)
      }
      response.transaction = command.transaction
      answer(verb: command.verb, response, to: command.message)
      if Task.isCancelled { return }
    }
  }

  /// Answers a device-plane request whose topic does not parse (a device id or UUID level that
  /// is not one): a `request_error` event, and its MQTT 5 Response Topic where the policy
  /// allows.
  private func refuseTopic(_ message: MQTTMessage, _ problem: String) {
    counters.requestErrors.withLock { $0 += 1 }
    let quotedTopic =
      message.topic.count > 256 ? String(message.topic.prefix(256)) + "…" : message.topic
    logger.warning(
      "request refused: \(problem)", metadata: ["mqtt.topic": "\(quotedTopic)"])
    let data: JSONObject = [
      "topic": .string(quotedTopic), "error": "invalid_topic", "message": .string(problem),
    ]
    client.enqueue(
      MQTTMessage(
        topic: topics.bridgeEvent.rawValue,
        payload: BridgePayload.event(type: "request_error", data: data), qos: .atLeastOnce))
    if let replyTo = message.properties.responseTopic, replyPolicy.refusal(replyTo) == nil,
      (try? TopicName(replyTo)) != nil
    {
      let response = BridgeResponse.failure(
        code: "invalid_topic", message: problem, transaction: nil)
      client.answer(
        MQTTMessage(
          topic: replyTo, payload: response.json.serializedBytes(), qos: .atLeastOnce,
          properties: MQTTPublishProperties(correlationData: message.properties.correlationData)))
    }
  }

  /// Why `message` cannot be served without reading it — its payload was left out by the
  /// client, or is over the bound of its kind of topic — or nil.
  private func refusal(of message: MQTTMessage, _ request: Topics.Request) -> (String, String)? {
    let limit: Int
    switch request {
    case .peripheralText, .fleetPeripheralText: limit = configuration.peripheral.maxTextBytes
    default: limit = configuration.mqtt.inbound.maxRequestBytes
    }
    switch message.discarded {
    case .tooLarge(let bytes):
      return ("payload_too_large", "payload of \(bytes) bytes; the most is \(limit)")
    case .bufferFull(let bytes):
      return (
        "busy",
        "the gateway is behind: no room for \(bytes) more bytes (mqtt.inbound.buffer_bytes \(configuration.mqtt.inbound.bufferBytes)); try again"
      )
    case nil:
      guard message.payload.count > limit else { return nil }
      return (
        "payload_too_large", "payload of \(message.payload.count) bytes; the most is \(limit)"
      )
    }
  }

  /// Answers a request that was not read, where its kind of request is answered.
  private func refuse(_ request: Topics.Request, message: MQTTMessage, code: String, text: String) {
    switch request {
    case .bridge(let verb):
      answer(verb: verb, .failure(code: code, message: text, transaction: nil), to: message)
    case .fleet(let verb):
      answer(
        verb: verb, .failure(code: code, message: text, transaction: nil), to: message,
        fleet: true)
    case .peripheralText, .fleetPeripheralText:
      logger.warning(
        "peripheral text refused: \(text)", metadata: ["mqtt.topic": "\(message.topic)"])
      peripheralRole?.refuseText(
        code: code == "payload_too_large" ? "too_long" : code, message: text)
    default:
      logger.warning("request refused: \(text)", metadata: ["mqtt.topic": "\(message.topic)"])
      centralRole?.refuse(request, message: message, code: code, text: text)
    }
  }

  /// Logs the health report each time the process receives SIGUSR1.
  private func logHealthOnSignal() async {
    for await _ in await UnixSignalsSequence(trapping: .sigusr1) {
      if Task.isCancelled { return }
      let json = String(decoding: health().json.serializedBytes(), as: UTF8.self)
      logger.notice("health (SIGUSR1): \(json)")
    }
  }

  /// Publishes the response to a bridge request (and to its MQTT 5 response topic); the answer
  /// to a fleet-wide request carries this gateway's id as `gw` in `data`.
  private func answer(
    verb: String, _ response: BridgeResponse, to message: MQTTMessage, fleet: Bool = false
  ) {
    var response = response
    if fleet { response.data["gw"] = .string(topics.gateway.rawValue) }
    if !response.ok {
      counters.requestErrors.withLock { $0 += 1 }
      logger.warning(
        "bridge request failed: \(response.errorCode ?? "error"): \(response.message ?? "")",
        metadata: ["mqtt.topic": "\(message.topic)"])
    }
    let payload = response.json.serializedBytes()
    // Answers go ahead of queued values: a request is answered while the broker works
    // through a backlog.
    client.answer(
      MQTTMessage(
        topic: topics.bridgeResponse(answering: verb).rawValue, payload: payload,
        qos: .atLeastOnce))
    // `handle` has removed a Response Topic the policy does not honour.
    if let replyTo = message.properties.responseTopic, (try? TopicName(replyTo)) != nil {
      client.answer(
        MQTTMessage(
          topic: replyTo, payload: payload, qos: .atLeastOnce,
          properties: MQTTPublishProperties(correlationData: message.properties.correlationData)))
    }
  }

  private func publishHealth() async {
    let interval = max(0.05, configuration.gateway.healthInterval)
    var lastPublished: UInt64 = 0
    var lastTime = ContinuousClock.now
    while !Task.isCancelled {
      do {
        try await Task.sleep(for: .seconds(interval))
      } catch {
        return
      }
      ProcessMetrics.releaseFreeMemory()
      var report = health()
      let now = ContinuousClock.now
      let elapsed = (now - lastTime).seconds
      report.publishRate = elapsed > 0 ? Double(report.published - lastPublished) / elapsed : 0
      counters.publishRate.withLock { [rate = report.publishRate] in $0 = rate }
      lastPublished = report.published
      lastTime = now
      client.enqueue(
        MQTTMessage(
          topic: topics.bridgeHealth.rawValue, payload: report.json.serializedBytes(),
          qos: .atMostOnce))
    }
  }

  /// The current health figures.
  func health() -> HealthReport {
    let stats = client.statistics
    let elapsed = ContinuousClock.now - started
    var report = HealthReport(
      uptime: elapsed.seconds,
      residentMemoryBytes: ProcessMetrics.residentMemoryBytes(), published: stats.published,
      received: stats.received, queued: stats.queued, inflight: stats.inflight,
      dropped: stats.dropped, reconnects: stats.reconnects,
      connectionFailures: stats.connectionFailures,
      requestErrors: counters.requestErrors.withLock { $0 })
    report.publishRate = counters.publishRate.withLock { $0 }
    report.receivedDropped = stats.receivedDropped
    report.receivedDiscarded = stats.receivedDiscarded
    report.requestsRefused = counters.requestsRefused.withLock { $0 }
    report.repliesRefused = counters.repliesRefused.withLock { $0 }
    if let centralRole {
      report.sections["discovery"] = .object(centralRole.discoveryHealthJSON)
      if centralRole.servesConnections {
        report.sections["connections"] = .object(centralRole.connectionsHealthJSON)
      }
    }
    if let peripheralRole { report.sections["peripheral"] = .object(peripheralRole.healthJSON) }
    for (name, section) in radioHealth?() ?? [:] { report.sections[name] = section }
    report.reasons = unhealthyReasons(connected: stats.connected)
    return report
  }

  /// Why the gateway is not healthy now, one sentence each (health's `reasons`): the broker not
  /// connected, a loop stalled (as the watchdog sees it), an adapter that is missing, off or not
  /// scanning when asked, the peripheral role unavailable.
  private func unhealthyReasons(connected: Bool) -> [String] {
    var reasons: [String] = []
    if !connected { reasons.append("not connected to the MQTT broker") }
    if let rival = duplicates.withLock({ $0.acting ? nil : $0.rival?.id }) {
      reasons.append(
        "standing by: another run (instance \(rival)) is online with gateway.id '\(topics.gateway.rawValue)'"
      )
    }
    reasons += loops.stalled(limit: loopPeriod).map { "\($0) does not answer" }
    if let centralRole { reasons += centralRole.adapterProblems }
    if let problem = peripheralRole?.problem { reasons.append(problem) }
    return reasons
  }

  /// Publishes `info` again when bluetoothd's version became known or changed.
  func refreshInfo() {
    guard let version = centralRole?.stackVersion else { return }
    let changed = publishedStackVersion.withLock { published in
      guard published != version else { return false }
      published = version
      return true
    }
    guard changed else { return }
    client.setRetainedState(
      MQTTMessage(
        topic: topics.bridgeInfo.rawValue, payload: infoPayload(), qos: .atLeastOnce,
        retain: true))
  }

  private func infoPayload() -> [UInt8] {
    var summary = JSONObject()
    for entry in configuration.redactedSummary() {
      summary[entry.key] = entry.value.map { .string($0) } ?? .null
    }
    let info: JSONValue = [
      "version": .string(GatewayVersion.current),
      "gateway": .string(topics.gateway.rawValue),
      "libmosquitto": .string(MQTTClient.libraryVersion),
      "bluez": publishedStackVersion.withLock { $0 }.map { .string($0) } ?? .null,
      "started": .integer(Int64(startedAt.timeIntervalSince1970 * 1000)),
      "config": .object(summary),
    ]
    return info.serializedBytes()
  }
}

/// A gateway that cannot start, with the reason.
public struct GatewayError: Error, CustomStringConvertible, Sendable {
  /// What is wrong.
  public let description: String
  /// The process's exit status for it (78, `EX_CONFIG`, unless said otherwise).
  public let exitCode: Int32
  /// Creates the error.
  ///
  /// - Parameters:
  ///   - description: What is wrong.
  ///   - exitCode: The process's exit status for it.
  public init(_ description: String, exitCode: Int32 = 78) {
    self.description = description
    self.exitCode = exitCode
  }
}

/// A `peripheral/start` or `peripheral/stop` request waiting to be carried out.
private struct PeripheralCommand: Sendable {
  enum Action: Sendable {
    case peripheral(start: Bool)
    case linkQuality(JSONObject)
  }
  var action: Action
  var verb: String
  var transaction: JSONValue?
  var message: MQTTMessage
}

extension GatewayService: WebBackend {
  /// `health_check`'s report, for `/healthz` and `/metrics`.
  public func webHealth() -> JSONValue { health().json }

  /// A request from the web page, handled as one from the broker.
  public func webInject(topic: TopicName, payload: [UInt8]) {
    handle(MQTTMessage(topic: topic.rawValue, payload: payload, qos: .atLeastOnce))
  }
}
