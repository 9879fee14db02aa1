/// The connection half of the central-role port: connections and GATT operations on remote
/// devices, implemented by the `BlueZ` module over D-Bus and by fakes in tests.
///
/// What happens on a connection arrives as ``CentralEvent``s of the same stream as discovery:
/// ``CentralEvent/connectionChanged(_:connected:)``,
/// ``CentralEvent/servicesResolved(_:_:)``, ``CentralEvent/notification(_:_:)`` and
/// ``CentralEvent/notifyingChanged(_:_:)``.
///
/// - Important: The port does not queue: callers must not start a second operation on one
///   characteristic before the first finished (BlueZ answers `InProgress`); the gateway's
///   ``GATTBridge`` guarantees it.
public protocol GATTCentral: BLECentral {
  /// Connects to a device the stack knows (it must have been seen advertising) and waits until
  /// the link is up; GATT discovery follows on its own and ends with
  /// ``CentralEvent/servicesResolved(_:_:)``.
  ///
  /// The stack never gives up by itself: after `timeout` seconds the attempt is cancelled and
  /// ``CentralError/Code/timeout`` thrown.
  ///
  /// - Parameters:
  ///   - address: The device's address.
  ///   - timeout: The most seconds to wait.
  /// - Throws: ``CentralError``: `timeout`, `in_progress`, `not_found` (the stack does not
  ///   know the device), `out_of_slots`, `aborted`, `unavailable`, `bluez_error`.
  func connect(_ address: BluetoothAddress, timeout: Double) async throws(CentralError)

  /// Disconnects a device (also cancels a connection attempt); disconnecting a device that is
  /// not connected is not an error.
  ///
  /// - Parameter address: The device's address.
  /// - Throws: ``CentralError`` when the stack refuses.
  func disconnect(_ address: BluetoothAddress) async throws(CentralError)

  /// Reads a characteristic's value (long reads included).
  ///
  /// - Parameters:
  ///   - characteristic: The characteristic.
  ///   - timeout: The most seconds to wait.
  /// - Returns: The value.
  /// - Throws: ``CentralError``: `not_connected`, `unknown_characteristic`, `not_permitted`,
  ///   `timeout`, `in_progress`, `bluez_error` (with the ATT or BlueZ error in the detail).
  func read(_ characteristic: GATTCharacteristicID, timeout: Double) async throws(CentralError)
    -> [UInt8]

  /// Writes a characteristic's value; with response, values longer than MTU − 3 are written
  /// with a long write.
  ///
  /// - Parameters:
  ///   - characteristic: The characteristic.
  ///   - value: The bytes.
  ///   - withResponse: A write request (`true`) or a write command (`false`).
  ///   - timeout: The most seconds to wait.
  /// - Throws: ``CentralError`` as for ``read(_:timeout:)``.
  func write(
    _ characteristic: GATTCharacteristicID, value: [UInt8], withResponse: Bool, timeout: Double
  ) async throws(CentralError)

  /// Turns notifications (or indications) of a characteristic on or off.
  ///
  /// - Parameters:
  ///   - characteristic: The characteristic.
  ///   - enabled: Whether they should be on.
  ///   - method: How to turn them on (a stack with one way only ignores it).
  ///   - timeout: The most seconds to wait.
  /// - Throws: ``CentralError`` as for ``read(_:timeout:)``.
  func setNotify(
    _ characteristic: GATTCharacteristicID, enabled: Bool, method: NotifyMethod, timeout: Double
  ) async throws(CentralError)
}

extension GATTCentral {
  /// Turns notifications on or off the default way (``NotifyMethod/auto``).
  ///
  /// - Parameters:
  ///   - characteristic: The characteristic.
  ///   - enabled: Whether they should be on.
  ///   - timeout: The most seconds to wait.
  /// - Throws: ``CentralError`` as for ``read(_:timeout:)``.
  public func setNotify(_ characteristic: GATTCharacteristicID, enabled: Bool, timeout: Double)
    async throws(CentralError)
  {
    try await setNotify(characteristic, enabled: enabled, method: .auto, timeout: timeout)
  }
}
