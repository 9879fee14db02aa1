public import BlueZ
import BridgeCore
import Foundation
public import Logging
import ServiceLifecycle

/// Runs a ``GatewayService`` in a `ServiceGroup` until SIGTERM or SIGINT.
public enum GatewayRunner {
  /// Runs the gateway; returns after a graceful shutdown (`offline` published, clean
  /// disconnect).
  /// - Throws: ``GatewayError`` when the gateway cannot start.
  public static func run(configuration: GatewayConfiguration, logger: Logger) async throws {
    let central = makeCentral(configuration, logger: logger)
    // The peripheral role uses the same stack as the central: only when BlueZ is in use.
    let peripheral = central.map { _ in
      BlueZPeripheral(configuration: BlueZPeripheralConfiguration(), logger: logger)
    }
    let service = try GatewayService(
      configuration: configuration, logger: logger, central: central, peripheral: peripheral)
    var services: [ServiceGroupConfiguration.ServiceConfiguration] = []
    if let central {
      // First in the list, so it stops last: the gateway publishes `offline` before the
      // Bluetooth side goes away.
      services.append(.init(service: CentralService(central: central)))
    }
    if let peripheral {
      services.append(.init(service: PeripheralStackService(peripheral: peripheral)))
    }
    services.append(.init(service: service))
    let group = ServiceGroup(
      configuration: ServiceGroupConfiguration(
        services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
    try await group.run()
  }

  /// The BLE central that `bluetooth.radio` asks for, or nil for the MQTT side only.
  public static func makeCentral(_ configuration: GatewayConfiguration, logger: Logger)
    -> BlueZCentral?
  {
    switch configuration.bluetooth.radio {
    case .none:
      logger.info("Bluetooth off (bluetooth.radio: none)")
      return nil
    case .bluez:
      return BlueZCentral(configuration: BlueZCentralConfiguration(), logger: logger)
    case .auto:
      guard systemBusReachable() else {
        logger.warning(
          "no D-Bus system bus on this machine: Bluetooth roles off (set bluetooth.radio to bluez to insist, or none to silence this)"
        )
        return nil
      }
      return BlueZCentral(configuration: BlueZCentralConfiguration(), logger: logger)
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

/// Runs the BLE central until the service group shuts down.
struct CentralService: Service {
  let central: BlueZCentral

  func run() async throws {
    await cancelWhenGracefulShutdown { await central.run() }
  }
}

/// Runs the BlueZ peripheral's connection to bluetoothd until graceful shutdown (the gateway,
/// shut down first, has withdrawn the service by then).
struct PeripheralStackService: Service {
  let peripheral: BlueZPeripheral

  func run() async throws {
    await cancelWhenGracefulShutdown { await peripheral.run() }
  }
}
