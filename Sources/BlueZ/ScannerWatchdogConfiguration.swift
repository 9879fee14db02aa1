/// Settings of the scanner watchdog: while this central keeps discovery running on a powered
/// adapter and no advertisement arrives for ``restartAfter``, it stops and restarts discovery;
/// if still nothing arrives for ``powerCycleAfter`` more, it powers the adapter off and on and
/// starts discovery again.
///
/// A power cycle happens at most once per silence: after one, only restarts follow until an
/// advertisement is seen again, so an empty room does not power-cycle the adapter forever.
public struct ScannerWatchdogConfiguration: Sendable, Hashable {
  /// Whether the watchdog runs (default `true`; the gateway has no configuration key for the
  /// watchdog's settings: it runs with these defaults).
  public var enabled: Bool
  /// Silence before discovery is restarted (default 60 s).
  public var restartAfter: Duration
  /// Further silence after a restart before the adapter is power-cycled (default 120 s; zero
  /// disables power cycles).
  public var powerCycleAfter: Duration
  /// How often the watchdog looks (default 5 s: a restart comes 60-65 s into a silence; looking
  /// every second woke the gateway every second for it).
  public var checkInterval: Duration

  /// Makes watchdog settings.
  ///
  /// - Parameters:
  ///   - enabled: Whether the watchdog runs.
  ///   - restartAfter: Silence before discovery is restarted.
  ///   - powerCycleAfter: Further silence before a power cycle; zero for none.
  ///   - checkInterval: How often it looks.
  public init(
    enabled: Bool = true, restartAfter: Duration = .seconds(60),
    powerCycleAfter: Duration = .seconds(120), checkInterval: Duration = .seconds(5)
  ) {
    self.enabled = enabled
    self.restartAfter = restartAfter
    self.powerCycleAfter = powerCycleAfter
    self.checkInterval = checkInterval
  }
}
