public import BridgeCore
import DBus
import Logging

extension BlueZCentral: GATTCentral {
  /// Connects to a device BlueZ knows (`Device1.Connect`) and waits until BlueZ answers; for LE
  /// devices BlueZ answers once the services are resolved.
  ///
  /// BlueZ never gives up by itself: when no answer comes within `timeout` seconds, the attempt
  /// is cancelled with `Device1.Disconnect` and `timeout` thrown. A device that is already
  /// connected is success; when its services were already resolved before the call,
  /// ``CentralEvent/servicesResolved(_:_:)`` is sent again (the first one may have been sent
  /// before anybody asked for the device).
  ///
  /// - Parameters:
  ///   - address: The device's address.
  ///   - timeout: The most seconds to wait.
  /// - Throws: ``CentralError``: `unavailable`, `not_found` (BlueZ does not know the device),
  ///   `timeout`, `in_progress`, `out_of_slots`, `aborted`, `powered_off`, `bluez_error`; see
  ///   ``CentralError`` mapping of `org.bluez.Error.Failed` reasons. ``CentralError/detail``
  ///   holds the D-Bus error name.
  public func connect(_ address: BluetoothAddress, timeout: Double) async throws(CentralError) {
    // At start, a device restored from the earlier run's list may be connected before the
    // session's first snapshot: wait for it (within the attempt's time) rather than fail.
    var timeout = timeout
    if !startupSettled {
      let started = clock.now
      await settleStartup(within: min(configuration.startupWait, Self.duration(timeout)))
      if Task.isCancelled {
        throw CentralError(.aborted, message: "the connection attempt to \(address) was cancelled")
      }
      timeout = max(min(1, timeout), timeout - (clock.now - started).seconds)
    }
    var (connection, owner) = try requireStack()
    let device: BlueZDevice
    if let known = model.device(address: address) {
      device = known
    } else if scansThroughKernel {
      let started = clock.now
      device = try await learnDevice(address, timeout: timeout)
      // Learning took part of the time, and bluetoothd may have gone meanwhile.
      timeout = max(1, timeout - (clock.now - started).seconds)
      (connection, owner) = try requireStack()
      guard model.device(address: address)?.path == device.path else {
        throw CentralError(.notFound, message: "BlueZ forgot \(address) meanwhile")
      }
    } else {
      throw CentralError(.notFound, message: "BlueZ does not know \(address)")
    }
    let epoch = self.epoch
    let wasResolved = BlueZObjectModel.isResolved(device)
    do {
      _ = try await connection.call(
        destination: owner, path: device.path, interface: BlueZNames.device, member: "Connect",
        timeout: Self.duration(timeout))
    } catch {
      if error.code == .noReply || error.code == .cancelled {
        // Not cancelled with the caller: the attempt must be cancelled in BlueZ all the same.
        await Task { await cancelConnect(device.path, address: address) }.value
        if error.code == .cancelled {
          throw CentralError(
            .aborted, message: "the connection attempt to \(address) was cancelled",
            detail: error.name)
        }
        throw CentralError(
          .timeout, message: "no connection to \(address) within \(timeout) s",
          detail: error.name)
      }
      if let failure = CentralError.connectFailure(error) {
        logger.debug(
          "connection failed",
          metadata: ["ble.address": "\(address)", "dbus.error": "\(error.name)"])
        throw failure
      }
    }
    guard epoch == self.epoch else { return }
    // Connect() returned: the link is up even when bluetoothd did not emit `Connected: true`
    // (5.66 does not for every LE link).
    deliver(model.markConnected(device.path))
    guard wasResolved, let now = model.devices[device.path], let resolved = model.resolvedEvent(now)
    else { return }
    deliver([resolved])
  }

  /// Removes a device from BlueZ (`Adapter1.RemoveDevice` on the adapter that knows it), which
  /// disconnects it and forgets its cache and pairing. A device BlueZ does not know, and one
  /// it removed meanwhile, are not errors.
  ///
  /// - Parameter address: The device's address.
  /// - Throws: ``CentralError`` `unavailable` when bluetoothd is away; BlueZ's refusals.
  public func removeDevice(_ address: BluetoothAddress) async throws(CentralError) {
    let (connection, owner) = try requireStack()
    guard let device = model.device(address: address) else { return }
    do {
      _ = try await connection.call(
        destination: owner, path: device.adapter, interface: BlueZNames.adapter,
        member: "RemoveDevice", arguments: [.objectPath(device.path)],
        timeout: configuration.bus.callTimeout)
    } catch {
      if error.bluez == .doesNotExist || error.code == .unknownObject { return }
      throw CentralError.bluez(error, operation: "RemoveDevice")
    }
  }

  /// Disconnects a device (`Device1.Disconnect`), which also cancels a connection attempt.
  /// A device BlueZ does not know, one that is not connected, and bluetoothd being away are not
  /// errors.
  ///
  /// - Parameter address: The device's address.
  /// - Throws: ``CentralError`` when BlueZ refuses (`timeout`, `bluez_error`, …).
  public func disconnect(_ address: BluetoothAddress) async throws(CentralError) {
    guard synced, let connection, let owner, let device = model.device(address: address) else {
      return
    }
    do {
      _ = try await connection.call(
        destination: owner, path: device.path, interface: BlueZNames.device,
        member: "Disconnect", timeout: configuration.bus.callTimeout)
    } catch {
      if error.bluez == .notConnected || error.bluez == .doesNotExist
        || error.code == .unknownObject
      {
        return
      }
      throw CentralError.bluez(error, operation: "Disconnect")
    }
  }

  /// Reads a characteristic's value (`GattCharacteristic1.ReadValue` with no options; BlueZ does
  /// long reads by itself).
  ///
  /// - Parameters:
  ///   - characteristic: The characteristic.
  ///   - timeout: The most seconds to wait.
  /// - Returns: The value.
  /// - Throws: ``CentralError``: `unavailable`, `not_connected`, `unknown_characteristic`,
  ///   `not_permitted`, `timeout`, `in_progress`, `bluez_error` (also for a reply that is not a
  ///   byte array).
  public func read(_ characteristic: GATTCharacteristicID, timeout: Double)
    async throws(CentralError) -> [UInt8]
  {
    let reply = try await gattCall(
      characteristic, "ReadValue", [.properties([:])], timeout: timeout)
    guard reply.count == 1, let bytes = reply[0].bytesValue else {
      throw CentralError(
        .bluezError,
        message:
          "ReadValue of \(characteristic) replied '\(reply.map(\.signature.rawValue).joined())'"
          + " instead of 'ay'")
    }
    return bytes
  }

  /// Writes a characteristic's value (`GattCharacteristic1.WriteValue` with the option `type`
  /// `request` or `command`, always explicit).
  ///
  /// - Parameters:
  ///   - characteristic: The characteristic.
  ///   - value: The bytes.
  ///   - withResponse: A write request (`true`) or a write command (`false`).
  ///   - timeout: The most seconds to wait.
  /// - Throws: ``CentralError`` as for ``read(_:timeout:)``.
  public func write(
    _ characteristic: GATTCharacteristicID, value: [UInt8], withResponse: Bool, timeout: Double
  ) async throws(CentralError) {
    _ = try await gattCall(
      characteristic, "WriteValue",
      [.bytes(value), .properties(["type": .string(withResponse ? "request" : "command")])],
      timeout: timeout)
  }

  // MARK: helpers

  /// The bus connection and BlueZ's unique name, or `unavailable`.
  func requireStack() throws(CentralError) -> (DBusConnection, String) {
    guard synced, let connection, let owner else {
      throw CentralError(.unavailable, message: "bluetoothd (org.bluez) is not available")
    }
    return (connection, owner)
  }

  /// Calls a `GattCharacteristic1` method on the characteristic an id means.
  func gattCall(
    _ id: GATTCharacteristicID, _ member: String, _ arguments: [DBusValue], timeout: Double
  ) async throws(CentralError) -> [DBusValue] {
    let (connection, owner) = try requireStack()
    guard let device = model.device(address: id.address), device.connected else {
      throw CentralError(.notConnected, message: "\(id.address) is not connected")
    }
    guard let characteristic = model.characteristic(id, on: device) else {
      throw CentralError(
        .unknownCharacteristic,
        message: device.servicesResolved
          ? "\(id.address) has no characteristic \(id.characteristic.topicSegment)"
            + " in a service \(id.service.topicSegment)"
          : "the services of \(id.address) are not resolved yet")
    }
    do {
      return try await connection.call(
        destination: owner, path: characteristic.path, interface: BlueZNames.gattCharacteristic,
        member: member, arguments: arguments, timeout: Self.duration(timeout))
    } catch {
      logger.debug(
        "GATT call failed",
        metadata: [
          "ble.address": "\(id.address)", "ble.characteristic": "\(id)",
          "dbus.error": "\(error.name)", "operation": "\(member)",
        ])
      if error.code == .unknownObject {
        // The object went away under the call: the link went down, or the services changed.
        let connected = model.device(address: id.address)?.connected ?? false
        throw CentralError(
          connected ? .unknownCharacteristic : .notConnected,
          message: "\(member): the characteristic \(id) is gone", detail: error.name)
      }
      throw CentralError.gattFailure(error, operation: member)
    }
  }

  /// After a connection attempt timed out: `Disconnect` cancels it in BlueZ.
  private func cancelConnect(_ path: DBusObjectPath, address: BluetoothAddress) async {
    guard let connection, let owner else { return }
    do {
      _ = try await connection.call(
        destination: owner, path: path, interface: BlueZNames.device, member: "Disconnect",
        timeout: configuration.bus.callTimeout)
    } catch {
      logger.debug(
        "cannot cancel a connection attempt",
        metadata: ["ble.address": "\(address)", "dbus.error": "\(error.name)"])
    }
  }

  /// Seconds as a call timeout: at least 1 ms, at most a day (NaN and infinity count as a day).
  static func duration(_ seconds: Double) -> Duration {
    guard seconds.isFinite else { return .seconds(86_400) }
    return .milliseconds(Int64(min(max(seconds, 0.001), 86_400) * 1000))
  }
}
