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

  /// The bus settings: those of the session the central makes for itself (the gateway shares
  /// one session between its roles, made with these), and the timeout of the central's own
  /// BlueZ calls (``BlueZSessionConfiguration/callTimeout``).
  public var bus: BlueZSessionConfiguration
  /// The most devices the object model keeps; beyond it the longest-unseen ones that are not
  /// connected are forgotten (default 4096; the gateway passes `bluetooth.max_devices`).
  public var maxDevices: Int
  /// How long ``BlueZCentral/adapters()``, and a connection asked for at start, wait for the
  /// first snapshot after ``BlueZCentral/run()`` starts (default 5 s).
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
  /// While the values of one acquired notification socket, or the management scanner's
  /// advertising reports, come more than once per this interval, their reader thread takes that
  /// socket once per interval: one wake-up and one bridge step for several, each held back at
  /// most this long (`bluetooth.batch_window`; ``DatagramReader``'s gathering, paced per
  /// socket). What comes slower is read at once. `.zero`: every value at once. Default 100 ms;
  /// keep it short enough for bluetoothd's end of a socket (~278 short values) to hold a
  /// window's worth.
  public var batchWindow: Duration

  /// Makes a configuration.
  ///
  /// - Parameters:
  ///   - bus: The bus settings.
  ///   - maxDevices: The most devices the model keeps.
  ///   - startupWait: How long `adapters()` waits for the first snapshot.
  ///   - watchdog: The scanner watchdog's settings.
  ///   - adapter: The one adapter whose devices are seen; `nil` for every adapter.
  ///   - scanMethod: How to discover devices.
  ///   - batchWindow: The interval over which fast values and reports gather.
  public init(
    bus: BlueZSessionConfiguration = BlueZSessionConfiguration(), maxDevices: Int = 4096,
    startupWait: Duration = .seconds(5),
    watchdog: ScannerWatchdogConfiguration = ScannerWatchdogConfiguration(),
    adapter: String? = nil, scanMethod: ScanMethod = .dbus,
    batchWindow: Duration = .milliseconds(100)
  ) {
    self.bus = bus
    self.maxDevices = maxDevices
    self.startupWait = startupWait
    self.watchdog = watchdog
    self.adapter = adapter
    self.scanMethod = scanMethod
    self.batchWindow = batchWindow
  }

}
