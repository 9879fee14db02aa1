public import BridgeCore

/// The GATT client port: connections and operations with the world's latencies.
extension SimulatedRadio {
  /// Connects after the world's connect latency; fails with the world's failure rate.
  /// - Parameters:
  ///   - address: the device's current address.
  ///   - timeout: seconds before giving up (`timeout`).
  /// - Throws: `powered_off`, `not_found`, `in_progress`, `out_of_slots`, `aborted`,
  ///   `timeout`, `bluez_error` (a beacon does not accept connections).
  public func connect(_ address: BluetoothAddress, timeout: Double) async throws(CentralError) {
    let plan = try update { (engine: inout SimulationEngine) throws(CentralError) in
      (try engine.beginConnect(address), [])
    }
    guard let plan else { return }
    if plan.latency > timeout {
      await pause(timeout)
      try update { (engine: inout SimulationEngine) throws(CentralError) in
        engine.cancelConnect(plan)
        return []
      }
      throw CentralError(.timeout, message: "no connection to \(address) within \(timeout) s")
    }
    await pause(plan.latency)
    try update { (engine: inout SimulationEngine) throws(CentralError) in
      try engine.finishConnect(plan)
    }
  }

  /// Disconnects (nothing happens for a device that is not connected).
  /// - Parameter address: the device.
  /// - Throws: never: the port allows errors, the simulated world has none here.
  public func disconnect(_ address: BluetoothAddress) async throws(CentralError) {
    try update { (engine: inout SimulationEngine) throws(CentralError) in
      engine.disconnect(address)
    }
  }

  /// Removes a device from the simulated stack's cache, disconnecting it first; it appears
  /// again with its next advertisement.
  /// - Parameter address: the device.
  /// - Throws: never: an unknown device is not an error.
  public func removeDevice(_ address: BluetoothAddress) async throws(CentralError) {
    try update { (engine: inout SimulationEngine) throws(CentralError) in
      engine.removeDevice(address)
    }
  }

  /// Reads a characteristic after the world's GATT latency.
  /// - Parameters:
  ///   - characteristic: what to read.
  ///   - timeout: unused (the simulated world always answers).
  /// - Returns: Its value.
  /// - Throws: `not_found`, `not_connected`, `unknown_characteristic`, `not_permitted`,
  ///   `in_progress`.
  public func read(_ characteristic: GATTCharacteristicID, timeout: Double)
    async throws(CentralError) -> [UInt8]
  {
    try await operation(on: characteristic) {
      (engine: inout SimulationEngine) throws(CentralError) in
      (try engine.read(characteristic), [])
    }
  }

  /// Writes a characteristic after the world's GATT latency.
  /// - Parameters:
  ///   - characteristic: what to write.
  ///   - value: the bytes.
  ///   - withResponse: the write type (the characteristic's flags must allow it).
  ///   - timeout: unused.
  /// - Throws: as ``read(_:timeout:)``, and `bluez_error` above 512 bytes.
  public func write(
    _ characteristic: GATTCharacteristicID, value: [UInt8], withResponse: Bool, timeout: Double
  ) async throws(CentralError) {
    try await operation(on: characteristic) {
      (engine: inout SimulationEngine) throws(CentralError) in
      ((), try engine.write(characteristic, value: value, withResponse: withResponse))
    }
  }

  /// Turns notifications on or off after the world's GATT latency. Values reach the bridge in
  /// the same batches whatever the method (the simulated stack has one way).
  /// - Parameters:
  ///   - characteristic: what to switch.
  ///   - enabled: on or off.
  ///   - method: unused.
  ///   - timeout: unused.
  /// - Throws: as ``read(_:timeout:)``.
  public func setNotify(
    _ characteristic: GATTCharacteristicID, enabled: Bool, method: NotifyMethod, timeout: Double
  ) async throws(CentralError) {
    try await operation(on: characteristic) {
      (engine: inout SimulationEngine) throws(CentralError) in
      ((), try engine.setNotify(characteristic, enabled: enabled))
    }
  }

  /// One operation on a characteristic: checked and marked busy, then after the latency
  /// carried out (a concurrent one on the same characteristic gets `in_progress`).
  private func operation<T>(
    on characteristic: GATTCharacteristicID,
    _ body: (inout SimulationEngine) throws(CentralError) -> (T, [SimulationEngine.Effect])
  ) async throws(CentralError) -> T {
    try update { (engine: inout SimulationEngine) throws(CentralError) in
      _ = try engine.connectedDevice(for: characteristic)
      try engine.beginOperation(characteristic)
      return ((), [])
    }
    await pause(world.gattLatency)
    return try update { (engine: inout SimulationEngine) throws(CentralError) in
      engine.endOperation(characteristic)
      return try body(&engine)
    }
  }
}
