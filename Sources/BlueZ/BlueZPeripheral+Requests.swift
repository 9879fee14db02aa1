import BridgeCore
import DBus
import Logging

/// What bluetoothd asks of our exported objects: reads, writes, notification sessions and the
/// advertisement's release. Handlers hold the peripheral weakly (the connection's exported
/// objects must not keep it alive).
extension BlueZPeripheral {
  private static let gone = BlueZError.failed.reply(
    "the peripheral role has shut down")

  /// The handlers of the exported methods.
  func makeHandlers() -> PeripheralHandlers {
    PeripheralHandlers(
      read: { [weak self] call in
        guard let self else { throw Self.gone }
        return [.bytes(try await self.serveRead(call))]
      },
      write: { [weak self] call in
        guard let self else { throw Self.gone }
        try await self.serveWrite(call)
        return []
      },
      startNotify: { [weak self] call in
        guard let self else { throw Self.gone }
        try await self.startNotify(call)
        return []
      },
      stopNotify: { [weak self] call in
        guard let self else { throw Self.gone }
        try await self.stopNotify(call)
        return []
      },
      acquireNotify: { [weak self] call in
        guard let self else { throw Self.gone }
        return try await self.acquireNotify(call)
      },
      release: { [weak self] call in
        guard let self else { throw Self.gone }
        try await self.release(call)
        return []
      })
  }

  /// `ReadValue(a{sv}) → ay`: the read value from the requested offset.
  ///
  /// - Throws: `org.bluez.Error.InvalidOffset` past the end, `org.bluez.Error.NotAuthorized`
  ///   for a central that is not allowed or a caller that is not bluetoothd.
  func serveRead(_ call: DBusMethodCall) throws(DBusError) -> [UInt8] {
    try checkCaller(call)
    let options = PeripheralRequestOptions(call.arguments.first)
    try admit(options)
    guard options.offset <= readValue.count else {
      throw BlueZError.invalidOffset.reply(
        "offset \(options.offset) is past the end of the \(readValue.count)-byte value")
    }
    return Array(readValue[options.offset...])
  }

  /// `WriteValue(ay, a{sv})` on the writable characteristic → ``PeripheralEvent/written(central:value:)``.
  ///
  /// - Throws: `org.bluez.Error.NotSupported` for a write at an offset (a long write: the
  ///   port has no way to tell where a long value ends), `org.bluez.Error.NotAuthorized` as for
  ///   reads.
  func serveWrite(_ call: DBusMethodCall) throws(DBusError) {
    try checkCaller(call)
    let options = PeripheralRequestOptions(call.arguments.count > 1 ? call.arguments[1] : nil)
    try admit(options)
    guard options.offset == 0 else {
      throw BlueZError.notSupported.reply("writes at an offset are not supported")
    }
    hub.yield(.written(central: options.central, value: call.arguments.first?.bytesValue ?? []))
  }

  /// `StartNotify()`: BlueZ 5.66 calls it for every CCC write that enables notifications
  /// (`ccc_write_cb`: "Always call StartNotify for an incoming enable"), with no options, so
  /// the central and its MTU are unknown here.
  func startNotify(_ call: DBusMethodCall) throws(DBusError) {
    try checkCaller(call)
    // bluetoothd calls StartNotify only while it holds no socket of ours: one we still hold
    // was closed on its side, its hang-up not handled yet.
    if let socket = acquired { socketHungUp(socket.serial) }
    subscribed.append(nil)
    subscriptionsSeen += 1
    hub.yield(.subscribed(central: nil, mtu: nil))
  }

  /// `StopNotify()`: BlueZ 5.66 calls it only when its count of subscriptions drops to zero
  /// (the **last** central unsubscribed or disconnected; a bonded central's subscription
  /// outlives its link), so every subscription still counted ends here.
  func stopNotify(_ call: DBusMethodCall) throws(DBusError) {
    try checkCaller(call)
    knownMTU = [:]
    endSubscriptions()
  }

  /// Reports one ``PeripheralEvent/unsubscribed(central:)`` per subscription still counted and
  /// lets go of an acquired socket.
  func endSubscriptions() {
    releaseSocket()
    subscriptionEnds += 1
    let ended = subscribed
    subscribed = []
    presumed = []
    for central in ended { hub.yield(.unsubscribed(central: central)) }
  }

  /// `LEAdvertisement1.Release()`: bluetoothd dropped the advertisement (timeout, adapter
  /// gone, shutting down); it is registered again if the target still wants it.
  func release(_ call: DBusMethodCall) throws(DBusError) {
    try checkCaller(call)
    counters.releases += 1
    logger.warning("bluetoothd released the advertisement")
    if registration?.advertisementRegistered == true {
      registration?.advertisementRegistered = false
      kick()
    }
  }

  /// Only the current owner of `org.bluez` may call our methods.
  func checkCaller(_ call: DBusMethodCall) throws(DBusError) {
    guard let owner, call.sender == owner else {
      throw BlueZError.notAuthorized.reply("only bluetoothd may call \(call.member)")
    }
  }

  /// Applies the allow-list, then reports a new MTU of the central.
  private func admit(_ options: PeripheralRequestOptions) throws(DBusError) {
    if let allowed = definition?.allowedCentrals, !allowed.isEmpty {
      guard let central = options.central, allowed.contains(central) else {
        counters.refused += 1
        if let central = options.central {
          logger.notice("refused a central", metadata: ["ble.address": "\(central)"])
          hub.yield(.refused(central: central))
        }
        throw BlueZError.notAuthorized.reply("this central is not allowed")
      }
    }
    if let central = options.central, let mtu = options.mtu, knownMTU[central] != mtu {
      knownMTU[central] = mtu
      hub.yield(.mtu(central: central, mtu: mtu))
    }
  }
}
