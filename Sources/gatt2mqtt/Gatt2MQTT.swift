import ArgumentParser
import Foundation
import Gateway
import GatewaySettings
import Logging

/// The `gatt2mqtt` command line.
@main
struct Gatt2MQTT: AsyncParsableCommand {
  static let configuration = CommandConfiguration(
    commandName: "gatt2mqtt",
    abstract: "Bridge Bluetooth Low Energy (BlueZ) and MQTT.",
    discussion: """
      Configuration comes from a YAML file (--config, or $GATT2MQTT_CONFIG), environment \
      variables (GATT2MQTT_MQTT_HOST, …) and options (--mqtt.host broker.lan, …), in that \
      order of increasing precedence. config/gatt2mqtt.example.yaml lists every key.
      """,
    version: GatewayVersion.current,
    subcommands: [Run.self, CheckConfig.self, Scan.self],
    defaultSubcommand: Run.self)
}

/// Options shared by the commands that read the configuration.
struct ConfigurationOptions: ParsableArguments {
  @Option(
    name: .long,
    help: ArgumentHelp(
      "YAML configuration file (default: $GATT2MQTT_CONFIG; none: built-in defaults).",
      valueName: "file"))
  var config: String?

  @Argument(
    parsing: .allUnrecognized,
    help: ArgumentHelp(
      "Configuration overrides such as --mqtt.host broker.lan or --gateway.id=kitchen.",
      valueName: "--key value"))
  var overrides: [String] = []

  /// Loads the layered configuration.
  func load(file explicit: String? = nil) async throws(ConfigurationError) -> GatewayConfiguration {
    let environment = ProcessInfo.processInfo.environment
    let file = explicit ?? config ?? environment[ConfigurationLoader.configFileEnvironmentVariable]
    return try await ConfigurationLoader.load(
      file: file.flatMap { $0.isEmpty ? nil : $0 }, environment: environment, arguments: overrides)
  }
}

/// Prints a configuration error the way people read it and exits non-zero.
func exitWithConfigurationError(_ error: ConfigurationError) -> ExitCode {
  FileHandle.standardError.write(Data("gatt2mqtt: configuration error: \(error)\n".utf8))
  return ExitCode(78)  // EX_CONFIG
}

extension Gatt2MQTT {
  /// `gatt2mqtt run`: the gateway.
  struct Run: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
      abstract: "Run the gateway until SIGTERM or SIGINT (the default command).")

    @OptionGroup var options: ConfigurationOptions
    @OptionGroup var radio: RadioOptions

    func run() async throws {
      var options = self.options
      options.overrides += radio.overrides
      let loaded: GatewayConfiguration
      do {
        loaded = try await options.load()
      } catch {
        throw exitWithConfigurationError(error)
      }
      let level = Logger.Level(rawValue: loaded.log.level.rawValue) ?? .info
      LoggingSystem.bootstrap { label in
        // Names, values and topics come from outside: no control character reaches the log.
        var handler = EscapingLogHandler(StreamLogHandler.standardError(label: label))
        handler.logLevel = level
        return handler
      }
      let logger = Logger(label: "gatt2mqtt")
      do {
        try await GatewayRunner.run(configuration: loaded, logger: logger)
      } catch let error as GatewayError {
        logger.critical("\(error.exitCode == 78 ? "cannot start" : "stopping"): \(error)")
        throw ExitCode(error.exitCode)
      }
    }
  }

  /// `gatt2mqtt check-config`: validate a configuration and print its effective values.
  struct CheckConfig: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
      commandName: "check-config",
      abstract: "Check a configuration file (plus environment and options) and print it.",
      discussion: """
        Usage: gatt2mqtt check-config [FILE] [--key value …]. Exits 0 when the configuration         is valid; otherwise prints the offending key with its source and exits 78.
        """)

    @OptionGroup var options: ConfigurationOptions
    @OptionGroup var radio: RadioOptions

    func run() async throws {
      // `check-config FILE [--key value …]`: a leading word is the file to check.
      var options = self.options
      options.overrides += radio.overrides
      var file: String?
      if let first = options.overrides.first, !first.hasPrefix("-") {
        file = first
        options.overrides.removeFirst()
      }
      let loaded: GatewayConfiguration
      do {
        loaded = try await options.load(file: file)
      } catch {
        throw exitWithConfigurationError(error)
      }
      // What `run` checks before it starts, so that "valid" means "starts".
      let warnings: [String]
      do {
        warnings = try GatewayRunner.preflight(loaded)
      } catch {
        FileHandle.standardError.write(Data("error: \(error)\n".utf8))
        throw ExitCode(78)
      }
      for warning in warnings { print("warning: \(warning)") }
      print("configuration is valid")
      for entry in loaded.redactedSummary() {
        print("  \(entry.key): \(entry.value ?? "(unset)")")
      }
    }
  }
}

/// `--radio` and `--world`, the short forms of `--bluetooth.radio` and `--bluetooth.simulation`
/// that `run` and `check-config` both take.
struct RadioOptions: ParsableArguments {
  @Option(
    help: ArgumentHelp(
      "Which BLE stack: auto, bluez, none or simulated (same as --bluetooth.radio).",
      valueName: "radio"))
  var radio: String?

  @Option(
    help: ArgumentHelp(
      "The simulated world's YAML file, with --radio simulated (same as --bluetooth.simulation).",
      valueName: "file"))
  var world: String?

  /// The same settings as configuration options.
  var overrides: [String] {
    (radio.map { ["--bluetooth.radio", $0] } ?? [])
      + (world.map { ["--bluetooth.simulation", $0] } ?? [])
  }
}
