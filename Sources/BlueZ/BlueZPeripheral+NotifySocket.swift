import BridgeCore
import DBus
import Logging
import LoopSupport

/// The transfer characteristic's notifications through a socket (`NotifyAcquired`,
/// `AcquireNotify`; BlueZ `doc/org.bluez.GattCharacteristic.rst`).
///
/// When a central subscribes and bluetoothd holds no socket of ours, BlueZ 5.66 calls
/// `AcquireNotify` with the central's device and MTU (`ccc_write_cb`, `append_options`); we
/// answer one end of a `SOCK_SEQPACKET` pair, and from then on every datagram we write is one
/// notification to every subscribed central (`sock_io_read`), each cut at that central's
/// MTU − 3. A full socket makes ``notify(_:)`` wait: that is the back-pressure the signal path
/// lacks. bluetoothd closes its end when its count of subscriptions drops to zero (no
/// `StopNotify` then), which ends every subscription here.
///
/// The catch (BlueZ 5.66): while it holds the socket, bluetoothd tells us nothing about a
/// **second** central that subscribes (its count goes up silently) — not that it is there,
/// not its MTU — so a chunk cut for the first central's MTU could reach it truncated. Hence:
/// - the socket is granted only while at most one device is connected through the adapter
///   (refused with `NotSupported` otherwise: bluetoothd then calls `StartNotify`, and the
///   value path is the signal one, where each subscription is seen);
/// - when another device connects while the socket is held, we wait until bluetoothd has read
///   every datagram queued and hang up ("retire" the socket): from then on values go as
///   signals, and the next central that subscribes is seen (`AcquireNotify`, refused, then
///   `StartNotify`). The new device may have subscribed unseen already (bluetoothd emits its
///   `Connected` change at idle priority, late while it is busy): when no subscription is seen
///   soon after, the text goes again to every subscriber. A central that subscribed in the
///   middle of a transfer gets that transfer's tail first (the protocol has no start marker,
///   on either path).
/// That is `peripheral.several_centrals: signals`, the default. With `socket` the socket is
/// granted and kept whoever is connected, and each other connected device counts as a
/// subscriber (MTU 23 unless told; ``presumeSubscribers()``); Benchmarks/README.md
/// (peripheral-two-centrals) measures both.
/// Devices connected by the central role count too (BlueZ does not say which side a link is):
/// with both roles on one adapter the socket is used only while nothing else is connected.
extension BlueZPeripheral {
  /// The socket bluetoothd holds, and which subscription it came with.
  struct AcquiredNotify: Sendable {
    let sender: DatagramSender
    /// The duplicate the hang-up watcher polls.
    let watched: Int32
    let central: BluetoothAddress?
    /// The central's object path, from `AcquireNotify`'s `device` option.
    let devicePath: DBusObjectPath?
    let mtu: Int
    let serial: Int
  }

  /// `AcquireNotify(a{sv}) → (h fd, q mtu)`: a socket for the notifications, when the
  /// configuration allows it and at most one device is connected through the adapter; reports
  /// ``PeripheralEvent/subscribed(central:mtu:)`` with the central and its MTU.
  ///
  /// - Throws: `org.bluez.Error.NotSupported` to make bluetoothd fall back to `StartNotify`
  ///   (never `Failed`, after which BlueZ 5.66 neither falls back nor counts the subscription),
  ///   `org.bluez.Error.NotAuthorized` for a caller that is not bluetoothd.
  func acquireNotify(_ call: DBusMethodCall) throws(DBusError) -> [DBusValue] {
    try checkCaller(call)
    // bluetoothd calls AcquireNotify only while it holds no socket of ours: one we still hold
    // was closed on its side, its hang-up not handled yet.
    if let socket = acquired { socketHungUp(socket.serial) }
    let options = PeripheralRequestOptions(call.arguments.first)
    if let reason = socketRefusal(options) {
      logger.debug("notifications go as signals", metadata: ["reason": "\(reason)"])
      throw BlueZError.notSupported.reply(reason)
    }
    let watcher: DatagramReader
    let pair: (sender: DatagramSender, peer: Int32)
    do {
      watcher = try hangUpWatcher ?? DatagramReader(name: "periph-hangup")
      hangUpWatcher = watcher
      // The default buffer (about 270 chunks): bluetoothd reads it eagerly, one datagram per
      // turn of its main loop. A 32 KiB one (for a quicker drain before the socket is let go
      // of) cost a third of the rate in the lab: the sender waited far more often.
      pair = try DatagramSender.makePair()
    } catch {
      throw BlueZError.notSupported.reply("no socket: \(error)")
    }
    let peer = DBusFileDescriptor(taking: pair.peer)
    guard let watched = pair.sender.duplicate() else {
      throw BlueZError.notSupported.reply("no socket: dup failed")
    }
    acquisitions += 1
    let serial = acquisitions
    let mtu = options.mtu ?? TransferChunker.defaultMTU
    watcher.add(
      watched, receive: { _ in },
      closed: { [weak self] in
        Task { await self?.socketHungUp(serial) }
      })
    subscriptionsSeen += 1
    acquired = AcquiredNotify(
      sender: pair.sender, watched: watched, central: options.central,
      devicePath: options.devicePath.flatMap { try? DBusObjectPath($0) }, mtu: mtu,
      serial: serial)
    subscribed.append(options.central)
    if let central = options.central { knownMTU[central] = mtu }
    logger.info(
      "a central subscribed; notifications go through a socket",
      metadata: [
        "ble.address": "\(options.central.map { "\($0)" } ?? "unknown")", "ble.mtu": "\(mtu)",
      ])
    hub.yield(.subscribed(central: options.central, mtu: mtu))
    presumeSubscribers()
    return [.unixFD(peer), .uint16(UInt16(clamping: mtu))]
  }

  /// Why the socket is not granted now, `nil` when it is.
  private func socketRefusal(_ options: PeripheralRequestOptions) -> String? {
    guard configuration.notifySocket else { return "peripheral.notify_socket is off" }
    guard let registration else { return "the service is not registered" }
    let own = options.devicePath.flatMap { try? DBusObjectPath($0) }
    guard
      configuration.severalCentrals == .socket
        || !otherDeviceConnected(than: own, on: registration.adapter)
    else {
      return "\(adapters.connectedCount(on: registration.adapter)) devices are connected"
    }
    if let allowed = definition?.allowedCentrals, !allowed.isEmpty {
      guard let central = options.central, allowed.contains(central) else {
        return "the central is not on the allow-list"
      }
    }
    return nil
  }

  /// Writes one value into the acquired socket, waiting while it is full.
  ///
  /// - Returns: ``NotificationPath/flowControlled``, or `nil` when the socket was retired
  ///   meanwhile (the value then goes as a signal).
  /// - Throws: `not_connected` when bluetoothd hung up (every central left), `timeout` when the
  ///   socket stayed full for the call timeout.
  func send(_ value: [UInt8], through socket: AcquiredNotify) async throws(CentralError)
    -> NotificationPath?
  {
    let giveUp = clock.now + configuration.bus.callTimeout
    while true {
      guard acquired?.serial == socket.serial else { return nil }
      switch socket.sender.send(value) {
      case .sent:
        counters.notifications += 1
        return .flowControlled
      case .closed:
        guard acquired?.serial == socket.serial else { return nil }
        socketHungUp(socket.serial)
        throw CentralError(.notConnected, message: "no central is subscribed")
      case .refused(let code):
        throw CentralError(
          .bluezError, message: "the notification socket refused the value (errno \(code))")
      case .full:
        guard !Task.isCancelled else {
          throw CentralError(.aborted, message: "the notification was cancelled")
        }
        guard clock.now < giveUp else {
          throw CentralError(.timeout, message: "bluetoothd took no notification for too long")
        }
        _ = await socket.sender.waitWritable(timeout: .milliseconds(250))
      }
    }
  }

  /// bluetoothd closed its end: its count of subscriptions dropped to zero (or it exited).
  func socketHungUp(_ serial: Int) {
    guard acquired?.serial == serial else { return }
    logger.info("bluetoothd closed the notification socket: no central is subscribed")
    endSubscriptions()
  }

  /// Lets go of the acquired socket (the hang-up watcher shuts it down, bluetoothd sees the
  /// end); the subscriptions stay counted.
  func releaseSocket() {
    guard let socket = acquired else { return }
    acquired = nil
    hangUpWatcher?.remove(socket.watched)
    socket.sender.close()
  }

  /// A device disconnected: a subscription of that central (known from `AcquireNotify`) ends
  /// now. bluetoothd itself ends it only once it has failed to send everything it queued for
  /// the dead link, which takes as long as the transfer keeps feeding it. The socket stays
  /// until bluetoothd hangs up or (`several_centrals: signals`) another device connects. A
  /// device counted as a subscriber of the shared socket is handled alike. (Bonded devices
  /// are not reported here: their subscription outlives the link.)
  func centralDisconnected(_ path: DBusObjectPath) {
    presumed.remove(path)
    // (a read after it comes back reports its MTU again)
    if let central = BlueZDevice.address(fromPath: path) { knownMTU[central] = nil }
    guard let central = BlueZDevice.address(fromPath: path),
      let index = subscribed.firstIndex(of: central)
    else { return }
    subscribed.remove(at: index)
    logger.info("a subscribed central disconnected", metadata: ["ble.address": "\(central)"])
    hub.yield(.unsubscribed(central: central))
  }

  /// Another device connected through the adapter while the socket is held: once bluetoothd
  /// has read what is queued, hang up so that the next subscription is seen (see above).
  ///
  /// The device may have subscribed already, unseen: bluetoothd emits `PropertiesChanged` at
  /// idle priority, so while it is busy (a transfer streaming into a link, or into a dead one
  /// it keeps failing to write to) a connection reaches us seconds after the central's
  /// subscription reached bluetoothd. A central that subscribes after the hang-up is seen
  /// (`StartNotify`); so when no subscription is seen within
  /// ``BlueZPeripheralConfiguration/unseenSubscriptionGrace`` after it, and bluetoothd's count
  /// did not drop to zero meanwhile, one subscription of unknown origin is counted, and the
  /// text goes again, as signals, to every subscriber (a device that never subscribed costs
  /// one repeated transfer). `StopNotify` ends it with the others.
  func retireSocketIfShared() async {
    guard configuration.severalCentrals == .signals, !retiring, let socket = acquired,
      let registration,
      otherDeviceConnected(than: socket.devicePath, on: registration.adapter)
    else { return }
    retiring = true
    defer { retiring = false }
    let giveUp = clock.now + .seconds(2)
    while socket.sender.unsent > 0, clock.now < giveUp {
      try? await Task.sleep(for: .milliseconds(2))
    }
    guard acquired?.serial == socket.serial else { return }
    if socket.sender.unsent > 0 {
      logger.warning(
        "bluetoothd did not read the notification socket for 2 s; letting go of it anyway",
        metadata: ["ble.unsent_bytes": "\(socket.sender.unsent)"])
    }
    releaseSocket()
    logger.info(
      "another device connected; notifications go as signals from now on",
      metadata: ["ble.connected": "\(adapters.connectedCount(on: registration.adapter))"])
    let seen = subscriptionsSeen
    let ends = subscriptionEnds
    let epoch = self.epoch
    Task { [weak self, grace = configuration.unseenSubscriptionGrace] in
      try? await Task.sleep(for: grace)
      await self?.countUnseenSubscription(ifNoneSince: seen, ends: ends, epoch: epoch)
    }
  }

  /// Counts one subscription of unknown origin unless one was seen, or every one ended, since
  /// the socket was let go of.
  func countUnseenSubscription(ifNoneSince seen: Int, ends: Int, epoch: Int) {
    guard subscriptionsSeen == seen, subscriptionEnds == ends, epoch == self.epoch,
      registration != nil
    else { return }
    logger.info("no subscription seen since another device connected; sending the text again")
    subscribed.append(nil)
    hub.yield(.subscribed(central: nil, mtu: nil))
  }

  /// `several_centrals: socket`: the socket stays when other devices connect, and BlueZ 5.66
  /// reports neither their subscriptions nor their MTUs. So every other device connected
  /// through the adapter while the socket is held (the socket's own central too, once it left
  /// and came back) counts as a subscriber once it has stayed connected for
  /// ``BlueZPeripheralConfiguration/unseenSubscriptionGrace`` (time to subscribe before the
  /// text goes again), with the MTU its read or write told, else none (the bridge then cuts
  /// chunks for MTU 23), until it disconnects or bluetoothd hangs up. A device that never
  /// subscribes costs a repeated transfer (per socket) and smaller chunks while it stays.
  func presumeSubscribers() {
    guard configuration.severalCentrals == .socket, let socket = acquired, let registration
    else { return }
    // (once it left, the socket's own central subscribes unseen like any other when it comes
    // back)
    let ownStays = socket.central.map { subscribed.contains($0) } ?? true
    let others = otherDevices(
      than: ownStays ? socket.devicePath : nil, on: registration.adapter, ownKnown: !ownStays)
    for path in others where !presumed.contains(path) && presuming[path] != socket.serial {
      presuming[path] = socket.serial
      Task { [weak self, grace = configuration.unseenSubscriptionGrace, serial = socket.serial] in
        try? await Task.sleep(for: grace)
        await self?.presumeSubscriber(path, serial: serial)
      }
    }
  }

  /// Counts `path` as a subscriber with the MTU its read or write told (else none) if it is
  /// still connected and the socket it shares is still held (see ``presumeSubscribers()``).
  func presumeSubscriber(_ path: DBusObjectPath, serial: Int) {
    if presuming[path] == serial { presuming[path] = nil }
    guard acquired?.serial == serial, adapters.connected.contains(path), !presumed.contains(path)
    else { return }
    presumed.insert(path)
    let central = BlueZDevice.address(fromPath: path)
    subscribed.append(central)
    logger.info(
      "a device connected while the notification socket is shared: counted as a subscriber",
      metadata: ["dbus.path": "\(path)"])
    hub.yield(.subscribed(central: central, mtu: central.flatMap { knownMTU[$0] }))
  }

  /// Whether a device other than `own` (the socket's central; `nil`: unknown) is connected
  /// through `adapter`.
  func otherDeviceConnected(than own: DBusObjectPath?, on adapter: DBusObjectPath) -> Bool {
    !otherDevices(than: own, on: adapter).isEmpty
  }

  /// The devices connected through `adapter` other than `own`, in path order. With `own`
  /// `nil` and `ownKnown` false (bluetoothd did not say which device took the socket: one of
  /// them did), all but one.
  func otherDevices(than own: DBusObjectPath?, on adapter: DBusObjectPath, ownKnown: Bool = false)
    -> [DBusObjectPath]
  {
    let prefix = adapter.rawValue + "/"
    let connected = adapters.connected.filter { $0.rawValue.hasPrefix(prefix) && $0 != own }
      .sorted { $0.rawValue < $1.rawValue }
    return own == nil && !ownKnown ? Array(connected.dropFirst()) : connected
  }
}
