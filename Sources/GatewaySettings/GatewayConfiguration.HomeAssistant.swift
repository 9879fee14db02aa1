extension GatewayConfiguration {
  /// Home Assistant MQTT discovery (`homeassistant.*`).
  public struct HomeAssistant: Sendable, Equatable {
    /// Whether the gateway publishes discovery configs for itself and its devices
    /// (`homeassistant.enabled`). Default `true`.
    public var enabled: Bool
    /// The discovery prefix Home Assistant listens on, and where its `status` (birth) message
    /// comes from (`homeassistant.prefix`). Default `homeassistant`.
    public var prefix: String
    /// Writable characteristics that get a `button`, `switch` or `text` entity, as rules
    /// `<dev>/<svc>/<chr>=<control>` (`homeassistant.controls`). Default none.
    public var controls: [String]

    /// Creates the settings with the documented defaults.
    ///
    /// - Parameters:
    ///   - enabled: Whether discovery is published.
    ///   - prefix: The discovery prefix.
    ///   - controls: The control rules.
    public init(enabled: Bool = true, prefix: String = "homeassistant", controls: [String] = []) {
      self.enabled = enabled
      self.prefix = prefix
      self.controls = controls
    }
  }
}
