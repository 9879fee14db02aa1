extension GatewayConfiguration {
  /// Many gateways on one broker (`fleet.*`).
  public struct Fleet: Sendable, Equatable {
    /// One owner per device (`fleet.ownership.*`; docs/FLEET.md).
    public var ownership: Ownership

    /// Creates the settings with the documented defaults.
    ///
    /// - Parameter ownership: The ownership settings.
    public init(ownership: Ownership = Ownership()) {
      self.ownership = ownership
    }
  }

  /// Device ownership across the gateways of a fleet (`fleet.ownership.*`): each device has
  /// one owner that publishes its state and values, answers its requests and connects to it.
  public struct Ownership: Sendable, Equatable {
    /// Whether ownership is arbitrated (`fleet.ownership.enabled`). Default `false`: a lone
    /// gateway owns every device it hears. Turn it on on **every** gateway sharing a base
    /// topic.
    public var enabled: Bool
    /// How many dB stronger a gateway must hear a device to take it from its owner
    /// (`fleet.ownership.margin`). Default 10.
    public var margin: Double
    /// Seconds the challenger must stay that much stronger (`fleet.ownership.dwell`).
    /// Default 30.
    public var dwell: Double
    /// Seconds without an advertisement after which a gateway no longer hears a device and
    /// another may take it at once (`fleet.ownership.stale_after`). Default 15; keep it below
    /// `bluetooth.presence.away_after`.
    public var staleAfter: Double
    /// The longest delay, in seconds, before claiming an unowned device; the strongest
    /// gateway claims first (`fleet.ownership.claim_delay`). Default 5.
    public var claimDelay: Double
    /// Failed connection attempts in a row after which the owner gives a device up
    /// (`fleet.ownership.give_up_after`). Default 3.
    public var giveUpAfter: Int
    /// Seconds a gateway leaves a device it gave up to the others
    /// (`fleet.ownership.cooldown`). Default 120.
    public var cooldown: Double

    /// Creates the settings with the documented defaults.
    ///
    /// - Parameters:
    ///   - enabled: Whether ownership is arbitrated.
    ///   - margin: The dB a challenger must be stronger by.
    ///   - dwell: Seconds it must stay so.
    ///   - staleAfter: Seconds after which a device is no longer heard.
    ///   - claimDelay: The longest ranked claim delay.
    ///   - giveUpAfter: Failed attempts in a row before giving a device up.
    ///   - cooldown: Seconds a given-up device is left to others.
    public init(
      enabled: Bool = false, margin: Double = 10, dwell: Double = 30, staleAfter: Double = 15,
      claimDelay: Double = 5, giveUpAfter: Int = 3, cooldown: Double = 120
    ) {
      self.enabled = enabled
      self.margin = margin
      self.dwell = dwell
      self.staleAfter = staleAfter
      self.claimDelay = claimDelay
      self.giveUpAfter = giveUpAfter
      self.cooldown = cooldown
    }
  }
}
