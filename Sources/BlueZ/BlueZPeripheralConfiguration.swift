public import BridgeCore

/// Settings of a ``BlueZPeripheral``; every default is the documented configuration default.
public struct BlueZPeripheralConfiguration: Sendable, Hashable {
  /// The bus settings: those of the session the peripheral makes for itself (the gateway's
  /// shared session has the central's), and the timeout of the peripheral's own BlueZ calls
  /// (``BlueZSessionConfiguration/callTimeout``: `RegisterApplication` waits for bluetoothd to
  /// read our objects).
  public var bus: BlueZSessionConfiguration
  /// The object path below which the GATT application (`<root>/app`) and the advertisement
  /// (`<root>/advertisement0`) are exported on our connection (default `/org/gatt2mqtt`); an
  /// invalid path falls back to the default.
  public var objectRoot: String
  /// How many events each ``BlueZPeripheral/peripheralEvents()`` subscriber buffers; a consumer
  /// that falls behind loses the oldest ones (default 1024).
  public var eventBufferSize: Int
  /// The first delay before registering again after a refusal, doubled after each failure
  /// (default 1 s).
  public var retryDelay: Duration
  /// The longest delay between registration attempts (default 30 s).
  public var maxRetryDelay: Duration
  /// Whether the transfer characteristic offers bluetoothd a socket for its notifications
  /// (`NotifyAcquired`, `AcquireNotify`; `peripheral.notify_socket`, default `true`): with one
  /// central connected, chunks go through the socket at the rate bluetoothd takes them, with
  /// the central's MTU; otherwise as `PropertiesChanged` signals, paced by the caller.
  public var notifySocket: Bool
  /// What happens to the notification socket when another device connects
  /// (`peripheral.several_centrals`, default ``SeveralCentralsPath/signals``).
  public var severalCentrals: SeveralCentralsPath
  /// After another device connected while the notification socket was held, how long to wait
  /// before counting a subscription of it that BlueZ may not report (after the socket was let
  /// go of: unless one was seen meanwhile), which sends the text again (default 5 s).
  public var unseenSubscriptionGrace: Duration

  /// Makes a configuration.
  ///
  /// - Parameters:
  ///   - bus: The bus settings.
  ///   - objectRoot: Where our objects are exported.
  ///   - eventBufferSize: Events buffered per subscriber.
  ///   - retryDelay: The first delay before registering again.
  ///   - maxRetryDelay: The longest delay before registering again.
  ///   - notifySocket: Whether bluetoothd may take notifications through a socket.
  ///   - severalCentrals: What happens to the socket when another device connects.
  ///   - unseenSubscriptionGrace: How long to wait for a subscription to be seen.
  public init(
    bus: BlueZSessionConfiguration = BlueZSessionConfiguration(),
    objectRoot: String = "/org/gatt2mqtt", eventBufferSize: Int = 1024,
    retryDelay: Duration = .seconds(1), maxRetryDelay: Duration = .seconds(30),
    notifySocket: Bool = true, severalCentrals: SeveralCentralsPath = .signals,
    unseenSubscriptionGrace: Duration = .seconds(5)
  ) {
    self.bus = bus
    self.objectRoot = objectRoot
    self.eventBufferSize = eventBufferSize
    self.retryDelay = retryDelay
    self.maxRetryDelay = maxRetryDelay
    self.notifySocket = notifySocket
    self.severalCentrals = severalCentrals
    self.unseenSubscriptionGrace = unseenSubscriptionGrace
  }

}
