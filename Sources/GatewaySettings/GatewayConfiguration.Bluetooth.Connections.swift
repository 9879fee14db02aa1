public import BridgeCore

extension GatewayConfiguration.Bluetooth {
  /// Which devices the gateway connects to by itself, and how (`bluetooth.connect.*`).
  public struct Connect: Sendable, Equatable {
    /// Devices to connect to and keep connected, as `AA:BB:CC:DD:EE:FF`
    /// (`bluetooth.connect.addresses`). Default empty.
    public var addresses: [String]
    /// Device-name patterns of devices to connect to (`bluetooth.connect.names`). Default empty.
    public var names: [String]
    /// Advertised service UUIDs of devices to connect to (`bluetooth.connect.uuids`). Default
    /// empty.
    public var uuids: [String]
    /// Devices never connected by the policy, whatever their name or UUIDs
    /// (`bluetooth.connect.exclude`; `devices: <address>: connect: false`). Requests still
    /// connect them. Default empty.
    public var exclude: [String]
    /// The most simultaneous connections (`bluetooth.connect.max_connections`). Default 5.
    public var maxConnections: Int
    /// Seconds per connection attempt (`bluetooth.connect.timeout`). Default 20.
    public var timeout: Double
    /// The first delay before retrying a failed or lost connection, in seconds
    /// (`bluetooth.connect.retry_min_delay`). Default 2.
    public var retryMinDelay: Double
    /// The longest delay between retries, in seconds (`bluetooth.connect.retry_max_delay`).
    /// Default 120.
    public var retryMaxDelay: Double
    /// Whether connected devices' RSSI is read from the link (the kernel's management
    /// interface, which needs `CAP_NET_ADMIN`; `bluetooth.connect.rssi`). Default `true`.
    public var rssi: Bool
    /// Seconds between two readings of each connected device's RSSI
    /// (`bluetooth.connect.rssi_interval`). Default 10.
    public var rssiInterval: Double

    /// Creates connection settings with the documented defaults.
    public init(
      addresses: [String] = [], names: [String] = [], uuids: [String] = [],
      exclude: [String] = [], maxConnections: Int = 5, timeout: Double = 20,
      retryMinDelay: Double = 2,
      retryMaxDelay: Double = 120, rssi: Bool = true, rssiInterval: Double = 10
    ) {
      self.rssi = rssi
      self.rssiInterval = rssiInterval
      self.addresses = addresses
      self.names = names
      self.uuids = uuids
      self.exclude = exclude
      self.maxConnections = maxConnections
      self.timeout = timeout
      self.retryMinDelay = retryMinDelay
      self.retryMaxDelay = retryMaxDelay
    }
  }

  /// GATT operations on connected devices (`bluetooth.gatt.*`).
  public struct GATT: Sendable, Equatable {
    /// Seconds per read, write or notification change (`bluetooth.gatt.timeout`). Default 15.
    public var timeout: Double
    /// The value format of characteristics no rule names (`bluetooth.gatt.format`). Default
    /// `hex`.
    public var format: ValueFormat
    /// Value formats per characteristic, `<dev>/<svc>/<chr>=<format>`; the first match wins
    /// (`bluetooth.gatt.formats`). Default empty.
    public var formats: [String]
    /// Characteristics whose notifications are turned on at every connection,
    /// `<dev>/<svc>/<chr>` (`bluetooth.gatt.notify`). Default empty.
    public var notify: [String]
    /// How notifications are turned on where no rule says otherwise: `auto` (a socket from
    /// BlueZ's `AcquireNotify` where granted, else `StartNotify`), `acquire` or `start`
    /// (`bluetooth.gatt.notify_method`). Default `auto`.
    public var notifyMethod: NotifyMethod
    /// Notify methods per characteristic, `<dev>/<svc>/<chr>=<method>`; the first match wins
    /// (`bluetooth.gatt.notify_methods`). Default empty.
    public var notifyMethods: [String]
    /// When not empty, the only characteristics that may be written (`bluetooth.gatt.writable`).
    /// Default empty: every characteristic whose flags allow it.
    public var writable: [String]
    /// The most operations waiting per characteristic (`bluetooth.gatt.queue_limit`). Default
    /// 64.
    public var queueLimit: Int

    /// Creates GATT settings with the documented defaults.
    public init(
      timeout: Double = 15, format: ValueFormat = .hex, formats: [String] = [],
      notify: [String] = [], notifyMethod: NotifyMethod = .auto, notifyMethods: [String] = [],
      writable: [String] = [], queueLimit: Int = 64
    ) {
      self.timeout = timeout
      self.format = format
      self.formats = formats
      self.notify = notify
      self.notifyMethod = notifyMethod
      self.notifyMethods = notifyMethods
      self.writable = writable
      self.queueLimit = queueLimit
    }
  }

  /// The transfer protocol's central side (row C9, `bluetooth.transfer.*`).
  public struct Transfer: Sendable, Equatable {
    /// The transfer service's UUID (`bluetooth.transfer.service`). Default Apple's
    /// "BTLE Transfer" `e20a39f4-73f5-4bc4-a12f-17d1ad07a961`.
    public var service: String
    /// The transfer characteristic's UUID (`bluetooth.transfer.characteristic`). Default
    /// `08590f7e-db05-467e-8757-72f6faeb13d4`.
    public var characteristic: String
    /// The longest reassembled text in bytes (`bluetooth.transfer.max_bytes`). Default 1 MiB.
    public var maxBytes: Int

    /// Creates transfer settings with the documented defaults.
    public init(
      service: String = "e20a39f4-73f5-4bc4-a12f-17d1ad07a961",
      characteristic: String = "08590f7e-db05-467e-8757-72f6faeb13d4", maxBytes: Int = 1_048_576
    ) {
      self.service = service
      self.characteristic = characteristic
      self.maxBytes = maxBytes
    }
  }
}
