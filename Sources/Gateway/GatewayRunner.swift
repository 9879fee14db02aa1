public import Logging
import ServiceLifecycle

/// Runs a ``GatewayService`` in a `ServiceGroup` until SIGTERM or SIGINT.
public enum GatewayRunner {
  /// Runs the gateway; returns after a graceful shutdown (`offline` published, clean
  /// disconnect).
  /// - Throws: ``GatewayError`` when the gateway cannot start.
  public static func run(configuration: GatewayConfiguration, logger: Logger) async throws {
    let service = try GatewayService(configuration: configuration, logger: logger)
    let group = ServiceGroup(
      configuration: ServiceGroupConfiguration(
        services: [.init(service: service)],
        gracefulShutdownSignals: [.sigterm, .sigint],
        logger: logger))
    try await group.run()
  }
}
