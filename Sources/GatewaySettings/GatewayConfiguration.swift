/// The gateway's settings, after merging command-line flags, environment variables, the
/// configuration file and the built-in defaults.
///
/// `GatewayConfiguration()` is the configuration with every default; ``ConfigurationLoader``
/// builds the effective one. The keys, their types and their defaults are listed in
/// `config/gatt2mqtt.example.yaml`.
///
/// - Important: ``MQTT/password`` is a secret. `description`, `debugDescription`,
///   `dump` and ``redactedSummary()`` show it as `***`; never log the field itself.
public struct GatewayConfiguration: Sendable, Equatable {
  /// The MQTT broker connection and the topics the gateway publishes to (`mqtt.*`).
  public var mqtt: MQTT
  /// The gateway's identity and housekeeping (`gateway.*`).
  public var gateway: Gateway
  /// Logging (`log.*`).
  public var log: Log
  /// The Bluetooth side (`bluetooth.*`).
  public var bluetooth: Bluetooth
  /// The peripheral role (`peripheral.*`).
  public var peripheral: Peripheral
  /// Home Assistant discovery (`homeassistant.*`).
  public var homeAssistant: HomeAssistant
  /// The web page and metrics (`web.*`).
  public var web: Web
  /// Many gateways on one broker (`fleet.*`).
  public var fleet: Fleet

  /// Creates a configuration; every omitted part has its defaults.
  ///
  /// - Parameters:
  ///   - mqtt: The MQTT settings.
  ///   - gateway: The gateway settings.
  ///   - log: The logging settings.
  ///   - bluetooth: The Bluetooth settings.
  ///   - peripheral: The peripheral-role settings.
  ///   - homeAssistant: The Home Assistant discovery settings.
  ///   - web: The web page settings.
  ///   - fleet: The fleet settings.
  public init(
    mqtt: MQTT = MQTT(), gateway: Gateway = Gateway(), log: Log = Log(),
    bluetooth: Bluetooth = Bluetooth(), peripheral: Peripheral = Peripheral(),
    homeAssistant: HomeAssistant = HomeAssistant(), web: Web = Web(), fleet: Fleet = Fleet()
  ) {
    self.web = web
    self.fleet = fleet
    self.peripheral = peripheral
    self.homeAssistant = homeAssistant
    self.mqtt = mqtt
    self.gateway = gateway
    self.log = log
    self.bluetooth = bluetooth
  }
}
