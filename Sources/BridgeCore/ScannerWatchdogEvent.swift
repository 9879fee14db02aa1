/// A step of the scanner watchdog (``ScannerWatchdogConfiguration``), for the bridge to publish
/// as a `bridge/<gw>/event`.
public enum ScannerWatchdogEvent: Sendable, Hashable {
  /// A recovery step.
  public enum Step: String, Sendable, Hashable, CaseIterable {
    /// Stop and start discovery.
    case restartDiscovery = "restart_discovery"
    /// Power the adapter off and on, then start discovery.
    case powerCycle = "power_cycle"
  }

  /// No advertisement for `silence`: discovery was stopped and started again.
  case discoveryRestarted(adapter: String, silence: Duration)
  /// Still nothing after a restart: the adapter was powered off and on and discovery started.
  case adapterPowerCycled(adapter: String, silence: Duration)
  /// Advertisements arrive again after a step.
  case recovered(adapter: String)
  /// A step failed; the watchdog tries again after the next interval.
  case stepFailed(adapter: String, step: Step, error: CentralError)

  /// The adapter concerned.
  public var adapter: String {
    switch self {
    case .discoveryRestarted(let adapter, _), .adapterPowerCycled(let adapter, _),
      .recovered(let adapter), .stepFailed(let adapter, _, _):
      adapter
    }
  }
}
