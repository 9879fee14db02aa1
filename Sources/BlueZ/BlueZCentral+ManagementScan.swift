import BridgeCore
import DBus
import Logging

/// Discovery through the kernel's management socket (``BlueZCentralConfiguration/ScanMethod/management``).
///
/// The central starts LE discovery on the kernel's control channel (``ManagementScanner``) and
/// publishes what its reports say; bluetoothd, which has no discovery client then, ignores the
/// reports, so no D-Bus message flows per advertisement. bluetoothd makes no object for a
/// device it did not discover, though, and `Device1.Connect` needs one: a connection to a
/// device bluetoothd does not know first runs a short discovery of bluetoothd's own
/// (``learnDevice(_:timeout:)``), which pauses the kernel's for its duration (the kernel runs
/// one per controller; its reports still arrive).
extension BlueZCentral {
  /// The longest a discovery of bluetoothd's own runs to learn one device for a connection.
  static let learnLimit: Double = 10

  /// Whether discovery runs through the kernel's management socket.
  var scansThroughKernel: Bool {
    configuration.scanMethod == .management && scannerRefusal == nil
  }

  /// Starts discovery through the kernel, or gives it a new filter.
  ///
  /// - Returns: `false` when the kernel refused the gateway (no `CAP_NET_ADMIN`, no management
  ///   interface): from then on discovery goes through bluetoothd.
  /// - Throws: ``CentralError`` as ``ManagementScanner/start(index:filter:)`` otherwise.
  func startKernelDiscovery(_ id: String, _ filter: DiscoveryFilter) async throws(CentralError)
    -> Bool
  {
    guard let index = ManagementPacket.index(of: id) else {
      throw CentralError(.unknownAdapter, message: "'\(id)' is not a controller (hciN)")
    }
    let scanner: ManagementScanner
    if let existing = self.scanner {
      scanner = existing
    } else {
      let hub = self.hub
      do {
        scanner = try ManagementScanner(
          maxDevices: configuration.maxDevices, gathering: configuration.batchWindow
        ) { events in
          hub.yield(contentsOf: events)
        }
      } catch {
        refuseKernelScanning(error)
        return false
      }
      self.scanner = scanner
    }
    do {
      let running = scanner.isScanning(index: index)
      try await scanner.start(index: index, filter: filter)
      if !running { announceDiscovery(id) }
      return true
    } catch {
      switch error.code {
      case .notPermitted, .unavailable:
        refuseKernelScanning(error)
        return false
      default:
        throw error
      }
    }
  }

  /// Stops discovery through the kernel on an adapter; `false` when it was not running there.
  func stopKernelDiscovery(_ id: String) async -> Bool {
    guard let scanner, let index = ManagementPacket.index(of: id), scanner.isScanning(index: index)
    else { return false }
    await scanner.stop(index: index)
    announceDiscovery(id)
    return true
  }

  /// Reports an adapter whose discovery through the kernel started or stopped.
  private func announceDiscovery(_ id: String) {
    guard let adapter = model.adapter(id: id) else { return }
    deliver([.adapterChanged(model.info(adapter))])
  }

  /// When an advertisement was last seen on an adapter, from the scan method in use.
  func lastSighting(_ id: String, _ path: DBusObjectPath) -> ContinuousClock.Instant? {
    if scansThroughKernel, let scanner, let index = ManagementPacket.index(of: id) {
      return scanner.lastReport(index: index)
    }
    return model.lastAdvertisement[path]
  }

  /// Stops every discovery started through the kernel and closes its socket (at the end of
  /// ``run()``).
  func closeScanner() {
    guard let scanner else { return }
    scanner.stopAll()
    scanner.close()
    self.scanner = nil
  }

  private func refuseKernelScanning(_ error: CentralError) {
    scannerRefusal = error
    scanner?.close()
    scanner = nil
    logger.warning(
      "cannot scan through the kernel's management socket; scanning through bluetoothd instead",
      metadata: ["error": "\(error.message)"])
  }

  /// Makes bluetoothd learn a device heard only through the kernel, for a connection: pauses
  /// the kernel's discovery on the adapter, runs one of bluetoothd's own (LE, every
  /// advertisement) until the device's object appears or ``learnLimit`` (at most `timeout`)
  /// passed, stops it and resumes the kernel's.
  ///
  /// - Parameters:
  ///   - address: The device.
  ///   - timeout: The connection's timeout in seconds.
  /// - Returns: The device as bluetoothd now knows it.
  /// - Throws: ``CentralError`` `not_found` when bluetoothd did not see the device in time,
  ///   `aborted` when the task was cancelled, or what starting discovery threw.
  func learnDevice(_ address: BluetoothAddress, timeout: Double) async throws(CentralError)
    -> BlueZDevice
  {
    guard
      let id = configuration.adapter
        ?? sessions.keys.sorted().first ?? model.adapterInfos.first(where: \.powered)?.id
    else {
      throw CentralError(.notFound, message: "BlueZ does not know \(address)")
    }
    try await lock(id)
    defer { unlock(id) }
    if let device = model.device(address: address) { return device }
    let index = ManagementPacket.index(of: id)
    var paused = false
    if let index, let scanner { paused = await scanner.pause(index: index) }
    logger.info(
      "discovering through bluetoothd to learn a device for a connection",
      metadata: ["ble.adapter": "\(id)", "ble.address": "\(address)"])
    var learnt: BlueZDevice?
    do throws(CentralError) {
      _ = try await adapterCall(
        id, BlueZNames.adapter, "SetDiscoveryFilter", [DiscoveryFilter().bluezDictionary],
        operation: "SetDiscoveryFilter")
      _ = try await adapterCall(
        id, BlueZNames.adapter, "StartDiscovery", [], operation: "StartDiscovery")
      let deadline = clock.now + .milliseconds(Int64(min(timeout, Self.learnLimit) * 1000))
      while learnt == nil, clock.now < deadline, !Task.isCancelled {
        try? await Task.sleep(for: .milliseconds(50))
        learnt = model.device(address: address)
      }
      try? await stopCall(id, throughBluetoothd: true)
    } catch {
      if paused, let index { await scanner?.resume(index: index) }
      throw error
    }
    if paused, let index { await scanner?.resume(index: index) }
    guard let learnt else {
      if Task.isCancelled {
        throw CentralError(.aborted, message: "the connection attempt to \(address) was cancelled")
      }
      throw CentralError(
        .notFound,
        message:
          "bluetoothd did not see \(address) within \(min(timeout, Self.learnLimit)) s of its own discovery"
      )
    }
    return learnt
  }
}
