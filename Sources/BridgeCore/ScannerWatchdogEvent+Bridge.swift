extension ScannerWatchdogEvent {
  /// The `<base>/bridge/<gw>/event` this watchdog step is reported as:
  /// `scanner_restarted`, `adapter_power_cycled`, `scanner_recovered` or
  /// `scanner_watchdog_failed`, with the adapter and the silence that triggered it.
  public var bridgeEvent: (type: String, data: JSONObject) {
    func seconds(_ duration: Duration) -> JSONValue {
      .number((duration / .seconds(1) * 10).rounded() / 10)
    }
    switch self {
    case .discoveryRestarted(let adapter, let silence):
      return ("scanner_restarted", ["adapter": .string(adapter), "silence_s": seconds(silence)])
    case .adapterPowerCycled(let adapter, let silence):
      return ("adapter_power_cycled", ["adapter": .string(adapter), "silence_s": seconds(silence)])
    case .recovered(let adapter):
      return ("scanner_recovered", ["adapter": .string(adapter)])
    case .stepFailed(let adapter, let step, let error):
      return (
        "scanner_watchdog_failed",
        [
          "adapter": .string(adapter), "step": .string(step.rawValue),
          "error": .string(error.code.rawValue), "message": .string("\(error)"),
        ]
      )
    }
  }
}
