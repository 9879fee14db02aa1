public import BridgeCore

/// The peripheral port: the gateway's transfer service, served to the simulated centrals.
extension SimulatedRadio {
  /// Events of the peripheral port from now on.
  /// - Returns: State changes, subscriptions, MTUs and writes of the simulated centrals.
  public func peripheralEvents() -> AsyncStream<PeripheralEvent> { peripheralHubStream() }

  /// Publishes the service; it is advertised while an adapter is powered.
  /// - Parameter service: what to publish.
  /// - Throws: `unknown_adapter` for an adapter the world does not have.
  public func startPeripheral(_ service: PeripheralService) async throws(CentralError) {
    try update { (engine: inout SimulationEngine) throws(CentralError) in
      try engine.startPeripheral(service)
    }
  }

  /// Withdraws the service.
  public func stopPeripheral() async {
    try? update { (engine: inout SimulationEngine) throws(CentralError) in
      engine.stopPeripheral()
    }
  }

  /// Sets what reads of the transfer characteristic return.
  /// - Parameter value: the bytes.
  public func setReadValue(_ value: [UInt8]) async {
    try? update { (engine: inout SimulationEngine) throws(CentralError) in
      engine.setReadValue(value)
      return []
    }
  }

  /// Sends one notification to every subscribed simulated central.
  /// - Parameter value: the bytes (at most the smallest MTU−3; longer ones are cut and
  ///   counted in ``Statistics/oversizedChunks``).
  /// - Returns: ``NotificationPath/unpaced``: the simulated stack, like BlueZ's signal path,
  ///   gives no back-pressure.
  /// - Throws: `unavailable` when the service is not advertised.
  @discardableResult
  public func notify(_ value: [UInt8]) async throws(CentralError) -> NotificationPath {
    try update { (engine: inout SimulationEngine) throws(CentralError) in
      try engine.notifyCentrals(value)
    }
    return .unpaced
  }
}
