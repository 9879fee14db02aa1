/// Settings of a ``BlueZCentral``; every default is the documented configuration default.
public struct BlueZCentralConfiguration: Sendable, Hashable {
  /// How the central discovers devices (`bluetooth.scan_method`).
  public enum ScanMethod: String, Sendable, Hashable, CaseIterable {
    /// Through bluetoothd (`StartDiscovery`): each advertisement arrives as a D-Bus signal.
    case dbus
    /// Through the kernel's Bluetooth management socket (``ManagementScanner``): discovery is
    /// started there and each advertising report read from it, with no D-Bus message per
    /// advertisement. Needs `CAP_NET_ADMIN`; without it the central falls back to `dbus`.
    case management
  }

  /// The D-Bus address of the system bus, or `nil` for `DBUS_SYSTEM_BUS_ADDRESS` or else
  /// `unix:path=/run/dbus/system_bus_socket` (the gateway's configuration has no key for it:
  /// the environment variable chooses another bus).
  public var busAddress: String?
  /// How many BlueZ signals the connection buffers while the central is busy (default 8192).
  public var signalBufferSize: Int
  /// The most devices the object model keeps; beyond it the longest-unseen ones that are not
  /// connected are forgotten (default 4096; the gateway passes `bluetooth.max_devices`).
  public var maxDevices: Int
  /// How long a BlueZ method call may take (default 10 s).
  public var callTimeout: Duration
  /// The first delay before reconnecting to a lost bus, doubled after each failure
  /// (default 0.5 s).
  public var reconnectDelay: Duration
  /// The longest delay between reconnection attempts (default 30 s).
  public var maxReconnectDelay: Duration
  /// How long ``BlueZCentral/adapters()`` waits for the first snapshot after ``BlueZCentral/run()``
  /// starts (default 5 s).
  public var startupWait: Duration
  /// The scanner watchdog.
  public var watchdog: ScannerWatchdogConfiguration
  /// The one adapter whose devices the central sees and acts on (`bluetooth.adapter`, for
  /// example `hci1`), or `nil` (the default) for every adapter. With two adapters on one
  /// bluetoothd each has its own object for the same address: a central bound to one adapter
  /// must neither report nor disconnect the other adapter's link.
  public var adapter: String?
  /// How to discover devices (default ``ScanMethod/dbus``).
  public var scanMethod: ScanMethod

  /// Makes a configuration.
  ///
  /// - Parameters:
  ///   - busAddress: The system bus address; `nil` for the default.
  ///   - signalBufferSize: BlueZ signals buffered by the connection.
  ///   - maxDevices: The most devices the model keeps.
  ///   - callTimeout: How long a BlueZ call may take.
  ///   - reconnectDelay: The first reconnection delay.
  ///   - maxReconnectDelay: The longest reconnection delay.
  ///   - startupWait: How long `adapters()` waits for the first snapshot.
  ///   - watchdog: The scanner watchdog's settings.
  ///   - adapter: The one adapter whose devices are seen; `nil` for every adapter.
  ///   - scanMethod: How to discover devices.
  public init(
    busAddress: String? = nil, signalBufferSize: Int = 8192,
    maxDevices: Int = 4096, callTimeout: Duration = .seconds(10),
    reconnectDelay: Duration = .milliseconds(500), maxReconnectDelay: Duration = .seconds(30),
    startupWait: Duration = .seconds(5),
    watchdog: ScannerWatchdogConfiguration = ScannerWatchdogConfiguration(),
    adapter: String? = nil, scanMethod: ScanMethod = .dbus
  ) {
    self.busAddress = busAddress
    self.signalBufferSize = signalBufferSize
    self.maxDevices = maxDevices
    self.callTimeout = callTimeout
    self.reconnectDelay = reconnectDelay
    self.maxReconnectDelay = maxReconnectDelay
    self.startupWait = startupWait
    self.watchdog = watchdog
    self.adapter = adapter
    self.scanMethod = scanMethod
  }

  /// The bus settings of a session the central makes for itself, and of the one the gateway
  /// shares between its roles.
  public var session: BlueZSessionConfiguration {
    BlueZSessionConfiguration(
      busAddress: busAddress, signalBufferSize: signalBufferSize, callTimeout: callTimeout,
      reconnectDelay: reconnectDelay, maxReconnectDelay: maxReconnectDelay)
  }
}
