import Backoff
import BridgeCore
import DBus
import Logging
import LoopSupport

extension BlueZPeripheral {
  /// Why a registration attempt stopped.
  struct RegistrationFailure: Error, Sendable, CustomStringConvertible {
    var description: String
    /// The target changed under the attempt (stack, adapter or definition): not a refusal, so
    /// the next round starts at once.
    var stale = false

    static let outdated = RegistrationFailure(description: "the target changed", stale: true)
  }

  /// Runs one registration round per wake-up ( ``kick()``), or when a retry is due.
  func registrationLoop() async {
    var wakeUps = kicks.makeAsyncIterator()
    while !Task.isCancelled {
      await reconcile()
      guard await nextWakeUp(&wakeUps) else { break }
    }
  }

  /// Waits for a wake-up or, when a retry is scheduled, for its time; false when cancelled.
  private func nextWakeUp(_ wakeUps: inout AsyncStream<Void>.Iterator) async -> Bool {
    guard let deadline = retryAt else { return await wakeUps.next(isolation: self) != nil }
    async let timer: Void = Self.wake(kicker, at: deadline)
    let woken = await wakeUps.next(isolation: self) != nil
    _ = await timer
    return woken
  }

  private static func wake(
    _ kicker: AsyncStream<Void>.Continuation, at deadline: ContinuousClock.Instant
  ) async {
    try? await Task.sleep(until: deadline, clock: .continuous)
    if !Task.isCancelled { kicker.yield() }
  }

  /// What should be registered now.
  func currentTarget() -> Target {
    guard let definition else { return .stopped }
    guard connection != nil else { return .unavailable("no connection to the system bus") }
    guard owner != nil else { return .unavailable("bluetoothd (org.bluez) is not running") }
    guard synced else { return .unavailable("waiting for bluetoothd's adapters") }
    switch adapters.choose(requested: definition.adapter, current: registration?.adapter) {
    case .adapter(let path):
      return .publish(RegistrationKey(definition), adapter: path, epoch: epoch)
    case .unavailable(let reason):
      return .unavailable(reason)
    }
  }

  /// One round: undo a registration that no longer serves the target, then register what is
  /// missing (unless a retry is not due yet), and report the state.
  func reconcile() async {
    await lock()
    defer { unlock() }
    let target = currentTarget()
    if target != lastTarget {
      lastTarget = target
      failures = 0
      retryAt = nil
    }
    if let registration, !registration.serves(target) {
      await teardown(registration)
      self.registration = nil
    }
    switch target {
    case .stopped:
      setState(.stopped)
    case .unavailable(let reason):
      setState(.unavailable(reason: reason))
    case .publish(let key, let adapter, let epoch):
      if registration?.complete == true {
        setState(.advertising)
        return
      }
      if let retryAt, clock.now < retryAt { return }
      retryAt = nil
      do throws(RegistrationFailure) {
        try await register(key, adapter: adapter, epoch: epoch, target: target)
        failures = 0
        setState(.advertising)
      } catch {
        if let registration {
          await teardown(registration)
          self.registration = nil
        }
        if error.stale {
          kick()
          return
        }
        failures += 1
        counters.failedRegistrations += 1
        let delay = retryDelay(after: failures)
        retryAt = clock.now + delay
        logger.warning(
          "peripheral registration failed",
          metadata: [
            "ble.adapter": "\(BlueZAdapter.id(of: adapter))", "dbus.error": "\(error)",
            "retry_in": "\(Self.describe(delay))",
          ])
        setState(
          .unavailable(reason: "\(error.description); retrying in \(Self.describe(delay))"))
      }
    }
  }

  /// The delay before the next attempt after `failures` failures in a row.
  func retryDelay(after failures: Int) -> Duration {
    let backoff = Backoff(
      minimum: configuration.retryDelay.seconds, maximum: configuration.maxRetryDelay.seconds)
    return .seconds(backoff.nominalDelay(afterFailures: failures - 1))
  }

  /// `2 s`, `500 ms`.
  static func describe(_ delay: Duration) -> String {
    let milliseconds = delay.milliseconds
    return milliseconds % 1000 == 0 ? "\(milliseconds / 1000) s" : "\(milliseconds) ms"
  }

  /// Registers what is missing of `key` on `adapter`: exports the application's objects,
  /// `RegisterApplication`, exports the advertisement, `RegisterAdvertisement`. Each step is
  /// recorded in ``registration`` so a failure undoes exactly what was done.
  private func register(
    _ key: RegistrationKey, adapter: DBusObjectPath, epoch: Int, target: Target
  ) async throws(RegistrationFailure) {
    guard let connection, let owner else { throw .outdated }
    if registration == nil {
      registration = Registration(epoch: epoch, adapter: adapter, key: key, connection: connection)
    }
    let definition = key.definition
    let handlers = makeHandlers()

    if registration?.exported.isEmpty == true {
      var objects = [
        (paths.service, PeripheralObjects.service(definition)),
        (
          paths.characteristic,
          PeripheralObjects.characteristic(
            definition, paths: paths, handlers: handlers,
            notifySocket: configuration.notifySocket)
        ),
      ]
      if let write = definition.writeCharacteristic {
        objects.append(
          (
            paths.writeCharacteristic,
            PeripheralObjects.writeCharacteristic(
              write, definition, paths: paths, handlers: handlers)
          ))
      }
      for (path, object) in objects {
        try await export(object, at: path, on: connection)
        registration?.exported.append(path)
      }
      try checkCurrent(target)
    }

    if registration?.applicationRegistered == false {
      try await callManager(
        connection, owner, adapter, BlueZNames.gattManager, "RegisterApplication",
        paths.application
      ) { registration?.applicationRegistered = true }
      registration?.applicationRegistered = true
      counters.applicationRegistrations += 1
      logger.info(
        "GATT application registered",
        metadata: ["ble.adapter": "\(BlueZAdapter.id(of: adapter))"])
      try checkCurrent(target)
    }

    let data = LegacyAdvertisingData(
      serviceUUIDs: [definition.service], localName: definition.localName)
    if registration?.advertisementExported == false {
      if let dropped = data.droppedLocalName {
        logger.warning(
          "the local name does not fit the 31-byte advertising data; advertising without it",
          metadata: [
            "ble.local_name": "\(dropped)", "ble.advertising_bytes": "\(data.length)",
          ])
      }
      try await export(
        PeripheralObjects.advertisement(data, handlers: handlers), at: paths.advertisement,
        on: connection)
      registration?.advertisementExported = true
      try checkCurrent(target)
    }

    if registration?.advertisementRegistered == false {
      try await callManager(
        connection, owner, adapter, BlueZNames.advertisingManager, "RegisterAdvertisement",
        paths.advertisement
      ) { registration?.advertisementRegistered = true }
      registration?.advertisementRegistered = true
      counters.advertisementRegistrations += 1
      counters.advertisedLocalName = data.localName
      counters.droppedLocalName = data.droppedLocalName
      logger.info(
        "LE advertisement registered",
        metadata: [
          "ble.adapter": "\(BlueZAdapter.id(of: adapter))",
          "ble.local_name": "\(data.localName ?? "")",
        ])
      try checkCurrent(target)
    }
  }

  /// Throws ``RegistrationFailure/outdated`` when the target moved on during an await.
  private func checkCurrent(_ target: Target) throws(RegistrationFailure) {
    guard currentTarget() == target, registration?.serves(target) == true else {
      throw .outdated
    }
  }

  private func export(
    _ object: DBusExportedObject, at path: DBusObjectPath, on connection: DBusConnection
  ) async throws(RegistrationFailure) {
    // A leftover of an interrupted round would make the export fail.
    try? await connection.unexport(at: path)
    do {
      try await connection.export(object, at: path)
    } catch {
      throw RegistrationFailure(description: "cannot export \(path): \(error)")
    }
  }

  /// Calls `RegisterApplication` / `RegisterAdvertisement` (`o`, empty options) on the adapter.
  /// `AlreadyExists` means bluetoothd holds a registration of ours (from an interrupted
  /// round): `alreadyRegistered` records it so that the undo unregisters it before the retry.
  private func callManager(
    _ connection: DBusConnection, _ owner: String, _ adapter: DBusObjectPath,
    _ interface: String, _ member: String, _ path: DBusObjectPath,
    alreadyRegistered: () -> Void
  ) async throws(RegistrationFailure) {
    do {
      _ = try await connection.call(
        destination: owner, path: adapter, interface: interface, member: member,
        arguments: [.objectPath(path), .properties([:])], timeout: configuration.bus.callTimeout)
    } catch {
      if error.bluez == .alreadyExists { alreadyRegistered() }
      throw RegistrationFailure(description: "\(member): \(error.name): \(error.message)")
    }
  }

  /// Undoes `registration`: unregisters from the stack it was made with (when that stack is
  /// still the current one), unexports from the connection it was made on, and ends the
  /// subscription state.
  func teardown(_ registration: Registration) async {
    let connection = registration.connection
    if registration.epoch == epoch, let owner, connection === self.connection {
      if registration.advertisementRegistered {
        await unregister(
          connection, owner, registration.adapter, BlueZNames.advertisingManager,
          "UnregisterAdvertisement", paths.advertisement)
      }
      if registration.applicationRegistered {
        await unregister(
          connection, owner, registration.adapter, BlueZNames.gattManager,
          "UnregisterApplication", paths.application)
      }
    }
    if connection.isConnected {
      if registration.advertisementExported {
        try? await connection.unexport(at: paths.advertisement)
      }
      for path in registration.exported.reversed() {
        try? await connection.unexport(at: path)
      }
    }
    counters.advertisedLocalName = nil
    endSubscriptions()
    knownMTU = [:]
  }

  /// Best effort: bluetoothd answers `DoesNotExist` when it dropped the registration already.
  private func unregister(
    _ connection: DBusConnection, _ owner: String, _ adapter: DBusObjectPath,
    _ interface: String, _ member: String, _ path: DBusObjectPath
  ) async {
    do {
      _ = try await connection.call(
        destination: owner, path: adapter, interface: interface, member: member,
        arguments: [.objectPath(path)], timeout: configuration.bus.callTimeout)
    } catch {
      logger.debug(
        "unregistration refused", metadata: ["dbus.member": "\(member)", "dbus.error": "\(error)"])
    }
  }
}
