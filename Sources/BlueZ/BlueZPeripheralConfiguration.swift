public import BridgeCore

/// Settings of a ``BlueZPeripheral``; every default is the documented configuration default.
public struct BlueZPeripheralConfiguration: Sendable, Hashable {
  /// The D-Bus address of the system bus, or `nil` for `DBUS_SYSTEM_BUS_ADDRESS` or else
  /// `unix:path=/run/dbus/system_bus_socket` (used when the peripheral makes its own session).
  public var busAddress: String?
  /// The object path below which the GATT application (`<root>/app`) and the advertisement
  /// (`<root>/advertisement0`) are exported on our connection (default `/org/gatt2mqtt`); an
  /// invalid path falls back to the default.
  public var objectRoot: String
  /// How many events each ``BlueZPeripheral/peripheralEvents()`` subscriber buffers; a consumer
  /// that falls behind loses the oldest ones (default 1024).
  public var eventBufferSize: Int
  /// How many BlueZ signals (adapter changes) the connection buffers (default 1024).
  public var signalBufferSize: Int
  /// How long a BlueZ method call may take (`RegisterApplication` waits for bluetoothd to read
  /// our objects; default 10 s).
  public var callTimeout: Duration
  /// The first delay before registering again after a refusal, doubled after each failure
  /// (default 1 s).
  public var retryDelay: Duration
  /// The longest delay between registration attempts (default 30 s).
  public var maxRetryDelay: Duration
  /// The first delay before reconnecting to a lost bus, doubled after each failure
  /// (default 0.5 s).
  public var reconnectDelay: Duration
  /// The longest delay between reconnection attempts (default 30 s).
  public var maxReconnectDelay: Duration
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
  ///   - busAddress: The system bus address; `nil` for the default.
  ///   - objectRoot: Where our objects are exported.
  ///   - eventBufferSize: Events buffered per subscriber.
  ///   - signalBufferSize: BlueZ signals buffered by the connection.
  ///   - callTimeout: How long a BlueZ call may take.
  ///   - retryDelay: The first delay before registering again.
  ///   - maxRetryDelay: The longest delay before registering again.
  ///   - reconnectDelay: The first reconnection delay.
  ///   - maxReconnectDelay: The longest reconnection delay.
  ///   - notifySocket: Whether bluetoothd may take notifications through a socket.
  ///   - severalCentrals: What happens to the socket when another device connects.
  ///   - unseenSubscriptionGrace: How long to wait for a subscription to be seen.
  public init(
    busAddress: String? = nil, objectRoot: String = "/org/gatt2mqtt", eventBufferSize: Int = 1024,
    signalBufferSize: Int = 1024, callTimeout: Duration = .seconds(10),
    retryDelay: Duration = .seconds(1), maxRetryDelay: Duration = .seconds(30),
    reconnectDelay: Duration = .milliseconds(500), maxReconnectDelay: Duration = .seconds(30),
    notifySocket: Bool = true, severalCentrals: SeveralCentralsPath = .signals,
    unseenSubscriptionGrace: Duration = .seconds(5)
  ) {
    self.busAddress = busAddress
    self.objectRoot = objectRoot
    self.eventBufferSize = eventBufferSize
    self.signalBufferSize = signalBufferSize
    self.callTimeout = callTimeout
    self.retryDelay = retryDelay
    self.maxRetryDelay = maxRetryDelay
    self.reconnectDelay = reconnectDelay
    self.maxReconnectDelay = maxReconnectDelay
    self.notifySocket = notifySocket
    self.severalCentrals = severalCentrals
    self.unseenSubscriptionGrace = unseenSubscriptionGrace
  }

  /// The bus settings of a session the peripheral makes for itself.
  var session: BlueZSessionConfiguration {
    BlueZSessionConfiguration(
      busAddress: busAddress, signalBufferSize: signalBufferSize, callTimeout: callTimeout,
      reconnectDelay: reconnectDelay, maxReconnectDelay: maxReconnectDelay)
  }
}
