import BlueZ
public import BridgeCore
import Foundation
public import GatewaySettings
public import Logging
import Mosquitto
public import ServiceLifecycle
public import SimulatedRadio
public import UnixSignals
public import Web
import YAMLSupport

/// Runs a ``GatewayService`` in a `ServiceGroup` until SIGTERM or SIGINT.
public enum GatewayRunner {
  /// Runs the gateway; returns after a graceful shutdown (`offline` published, clean
  /// disconnect).
  /// - Throws: ``GatewayError`` when the gateway cannot start.
  public static func run(configuration: GatewayConfiguration, logger: Logger) async throws {
    ProcessMetrics.configureAllocator()
    for warning in try preflight(configuration) { logger.warning("\(warning)") }
    let web = configuration.web.enabled ? (hub: WebHub(), metrics: GatewayMetrics()) : nil
    let radio = try makeRadio(configuration, logger: logger, metrics: web?.metrics)
    let service = try GatewayService(
      configuration: configuration, logger: logger, central: radio.central,
      peripheral: radio.peripheral, liveness: radio.liveness, web: web,
      linkQuality: radio.linkQuality, radioHealth: radio.health)
    // The radio first in the list, so it stops last: the gateway publishes `offline` and
    // withdraws its service before the Bluetooth side goes away.
    var services = radio.services
    if let web {
      // Before the gateway in the list, so that it stops after it: the gateway publishes its
      // `offline` state and closes its links whatever the page's clients do.
      // The listen address was checked by the configuration loader.
      let (host, port) = configuration.web.listenAddress ?? ("127.0.0.1", 8080)
      services.append(
        .init(
          service: WebServer(
            configuration: .init(host: host, port: port, token: configuration.web.token),
            backend: service, hub: web.hub, metrics: web.metrics, logger: logger)))
    }
    services.append(.init(service: service))
    var group = ServiceGroupConfiguration(
      services: services, gracefulShutdownSignals: shutdownSignals, logger: logger)
    // Every part bounds its own teardown (Bluetooth 1.2 s: 1 s orderly, then 0.2 s for forced
    // disconnections; MQTT 0.6 s); past this the group
    // cancels whatever is left, so a stop never waits for a broker or a radio that is gone.
    group.maximumGracefulShutdownDuration = gracefulShutdownLimit
    try await ServiceGroup(configuration: group).run()
  }

  /// Checks what the configuration loader cannot: the topics the gateway would use, the MQTT
  /// client's settings (TLS files readable, settings libmosquitto accepts), and the simulated
  /// world file when the radio is simulated. `run` and `check-config` both call it, so that a
  /// configuration `check-config` accepts is one `run` starts with.
  ///
  /// - Parameter configuration: The loaded configuration.
  /// - Returns: Warnings about settings that will not be used (a world file without the
  ///   simulated radio).
  /// - Throws: ``GatewayError`` naming the problem.
  public static func preflight(_ configuration: GatewayConfiguration) throws(GatewayError)
    -> [String]
  {
    let topics: Topics
    do {
      topics = try Topics(
        base: configuration.mqtt.baseTopic,
        gateway: GatewayID(
          configuration.gateway.id ?? GatewayConfiguration.Gateway.systemHostname()))
    } catch {
      throw GatewayError("mqtt.base_topic: \(error)")
    }
    do {
      // Made and dropped at once: it opens no connection before `start()`.
      _ = try MQTTClient(
        configuration: MQTTClientConfiguration(
          gateway: configuration, topics: topics, instance: GatewayInstance.random(started: 0)),
        logger: Logger(label: "gatt2mqtt.preflight"))
    } catch {
      throw GatewayError("MQTT settings: \(error.message)")
    }
    var warnings: [String] = []
    if configuration.bluetooth.radio == .simulated {
      _ = try simulatedWorld(configuration.bluetooth.simulation)
    } else if let world = configuration.bluetooth.simulation {
      warnings.append(
        "bluetooth.simulation (\(world)) is not used: bluetooth.radio is \(configuration.bluetooth.radio.rawValue), not simulated"
      )
    }
    return warnings
  }

  /// The signals that stop the gateway cleanly (`offline` published, Bluetooth torn down):
  /// SIGTERM, SIGINT, SIGHUP (there is no reload: a supervisor restarts the service to apply a
  /// new configuration) and SIGQUIT. SIGUSR1 logs the health report (``GatewayService``).
  public static let shutdownSignals: [UnixSignal] = [.sigterm, .sigint, .sighup, .sigquit]

  /// How long a graceful shutdown may take before the remaining tasks are cancelled.
  public static let gracefulShutdownLimit: Duration = .milliseconds(1800)

  /// The Bluetooth side `bluetooth.radio` asks for: the central and peripheral ports and the
  /// services that keep them running.
  public struct Radio: Sendable {
    /// The central ports (discovery, GATT client), or nil for none.
    public var central: (any GATTCentral)?
    /// The peripheral port, or nil for none.
    public var peripheral: (any BLEPeripheral)?
    /// Services to run before the gateway's (they stop after it).
    public var services: [ServiceGroupConfiguration.ServiceConfiguration]
    /// Checks that the radio's own threads answer (the systemd watchdog's and health's; none by
    /// default).
    public var liveness: [LivenessCheck] = []
    /// Where connected devices' RSSI is read from, if anywhere.
    public var linkQuality: (any LinkQualityReader)?
    /// The radio's own sections of `health` (`bluez`, `simulation`), if any.
    public var health: (@Sendable () -> JSONObject)?
  }

  /// Builds the radio `bluetooth.radio` asks for.
  /// - Parameters:
  ///   - configuration: the loaded configuration.
  ///   - logger: the gateway's logger.
  ///   - metrics: Where BlueZ's D-Bus calls are timed (`/metrics`), if anywhere.
  /// - Returns: The ports and their services (all nil and empty for `none`).
  /// - Throws: ``GatewayError`` when the simulated world's file cannot be read or is invalid.
  public static func makeRadio(
    _ configuration: GatewayConfiguration, logger: Logger, metrics: GatewayMetrics? = nil
  ) throws(GatewayError) -> Radio {
    if configuration.bluetooth.radio == .simulated {
      let world = try simulatedWorld(configuration.bluetooth.simulation)
      let radio = SimulatedRadio(
        world: world, gathering: configuration.bluetooth.batchWindow)
      let devices = world.devices.reduce(0) { $0 + $1.count }
      let centrals = world.centrals.reduce(0) { $0 + $1.count }
      logger.notice(
        "simulated radio: \(devices) devices, \(centrals) centrals, adapters \(world.adapters.map(\.id).joined(separator: ", ")), seed \(world.seed) (world: \(configuration.bluetooth.simulation ?? "built-in"))"
      )
      return Radio(
        central: radio, peripheral: radio,
        services: [.init(service: RadioService { await radio.run() })], linkQuality: radio,
        health: { ["simulation": .object(radio.statistics.json)] })
    }
    guard usesBlueZ(configuration, logger: logger) else {
      return Radio(central: nil, peripheral: nil, services: [])
    }
    // One bus connection for both roles; the peripheral role runs only when BlueZ is in use.
    var callObserver: (@Sendable (String, Double, Bool) -> Void)?
    if let metrics {
      callObserver = { method, seconds, ok in
        metrics.recordDBusCall(method, ok: ok, seconds: seconds)
      }
    }
    // One set of bus settings for the shared session and the central.
    let centralConfiguration = BlueZCentralConfiguration(gateway: configuration)
    let session = BlueZSession(
      configuration: centralConfiguration.bus, logger: logger, callObserver: callObserver)
    let central = BlueZCentral(
      session: session, configuration: centralConfiguration, logger: logger)
    let peripheral = BlueZPeripheral(
      session: session,
      configuration: BlueZPeripheralConfiguration(
        bus: centralConfiguration.bus, notifySocket: configuration.peripheral.notifySocket,
        severalCentrals: configuration.peripheral.severalCentrals),
      logger: logger)
    // The session first in the list, so that it stops last.
    return Radio(
      central: central, peripheral: peripheral,
      services: [
        .init(service: RadioService { await session.run() }),
        .init(service: RadioService { await central.run() }),
        .init(service: RadioService { await peripheral.run() }),
      ],
      liveness: [
        LivenessCheck(name: "the D-Bus system bus") { await session.ping(timeout: .seconds(5)) }
      ], linkQuality: ManagementLinkQuality(),
      health: { ["bluez": .object(session.statistics.json)] })
  }

  /// The simulated world in `path` (YAML), or the built-in one.
  /// - Parameter path: the world file, or nil.
  /// - Returns: The world.
  /// - Throws: ``GatewayError`` naming the file and, for a bad key, its path in the file.
  public static func simulatedWorld(_ path: String?) throws(GatewayError) -> SimulatedWorld {
    guard let path else { return .builtIn }
    let text: String
    do {
      text = try YAMLFile.read(atPath: path)
    } catch {
      throw GatewayError("bluetooth.simulation: \(path) \(error)")
    }
    do {
      return try SimulatedWorld.parse(yaml: text)
    } catch {
      throw GatewayError("bluetooth.simulation: \(path): \(error)")
    }
  }

  /// Whether `bluetooth.radio` asks for BlueZ (`bluez`, or `auto` with a system bus); `false`
  /// for the MQTT side only.
  static func usesBlueZ(_ configuration: GatewayConfiguration, logger: Logger) -> Bool {
    switch configuration.bluetooth.radio {
    case .none, .simulated:
      if configuration.bluetooth.radio == .none {
        logger.info("Bluetooth off (bluetooth.radio: none)")
      }
      return false
    case .bluez:
      return true
    case .auto:
      guard systemBusReachable() else {
        logger.warning(
          "no D-Bus system bus on this machine: Bluetooth roles off (set bluetooth.radio to bluez to insist, simulated for a simulated world, or none to silence this)"
        )
        return false
      }
      return true
    }
  }

  /// Whether a D-Bus system bus is there to talk to (`DBUS_SYSTEM_BUS_ADDRESS` or the standard
  /// socket).
  static func systemBusReachable() -> Bool {
    if let address = ProcessInfo.processInfo.environment["DBUS_SYSTEM_BUS_ADDRESS"],
      !address.isEmpty
    {
      return true
    }
    return FileManager.default.fileExists(atPath: "/run/dbus/system_bus_socket")
  }
}

/// Runs one long-lived part of the radio (the BlueZ session, the central, the peripheral's
/// stack, the simulated world) until the service group shuts down.
struct RadioService: Service {
  let body: @Sendable () async -> Void

  func run() async throws {
    await cancelWhenGracefulShutdown { await body() }
  }
}
