extension GatewayConfiguration {
  /// The Bluetooth side: which radio, and the discovery half of the bridge (`bluetooth.*`).
  public struct Bluetooth: Sendable, Equatable {
    /// Which BLE stack the gateway drives (`bluetooth.radio`).
    public enum Radio: String, Sendable, Equatable, CaseIterable {
      /// BlueZ when a D-Bus system bus is reachable, otherwise none (with a warning).
      case auto
      /// BlueZ over the D-Bus system bus (`DBUS_SYSTEM_BUS_ADDRESS` is honoured).
      case bluez
      /// No Bluetooth: the MQTT side only.
      case none
      /// The built-in simulated BLE world (`SimulatedRadio`): no adapter needed; the world
      /// comes from `bluetooth.simulation`, or the built-in one.
      case simulated
    }

    /// How the BlueZ radio discovers devices (`bluetooth.scan_method`).
    public enum ScanMethod: String, Sendable, Equatable, CaseIterable {
      /// Through bluetoothd (`StartDiscovery`): every advertisement is a D-Bus signal.
      case dbus
      /// Through the kernel's Bluetooth management socket, as Home Assistant reads
      /// advertisements: no D-Bus message per advertisement; needs `CAP_NET_ADMIN` (falls back
      /// to `dbus` without it). A connection to a device bluetoothd has not seen runs a short
      /// discovery of bluetoothd's own first. The kernel runs one discovery per controller,
      /// which the gateway does not share with bluetoothd's other clients.
      case management
    }

    /// Which BLE stack to drive (`bluetooth.radio`). Default `auto`.
    public var radio: Radio
    /// How the BlueZ radio discovers devices (`bluetooth.scan_method`). Default `dbus`.
    public var scanMethod: ScanMethod
    /// Seconds over which BlueZ's fast values gather (`bluetooth.batch_window`, 0 to 0.25):
    /// while the values of one acquired notification socket, or the management scanner's
    /// advertising reports, come more than once per window, that socket is read once per window
    /// (one wake-up and one bridge step for several), each value at most this much later;
    /// slower ones are read at once. 0 reads every value at once. Default 0.1.
    public var batchWindow: Double
    /// The one adapter to use, e.g. `hci0` (`bluetooth.adapter`); `nil` uses every adapter.
    public var adapter: String?
    /// The simulated world's YAML file when `radio` is `simulated` (`bluetooth.simulation`);
    /// `nil`: the built-in world (`config/simulated-world.yaml`).
    public var simulation: String?
    /// Start scanning without waiting for a `scan` request (`bluetooth.scan_on_start`).
    /// Default `true`.
    public var scanOnStart: Bool
    /// Ignore advertisements weaker than this, in dBm (`bluetooth.min_rssi`); `nil`: no floor.
    public var minRSSI: Int?
    /// Service UUIDs, one of which an advertisement must carry to be published
    /// (`bluetooth.filter.uuids`); empty: no condition. Lower case, in the form written
    /// (`180f`, `0x180f`, `0000180f`, or 128-bit with or without dashes). Default empty.
    public var filterUUIDs: [String]
    /// The pattern a device's name must match, `*` any characters and `?` one, ignoring case
    /// (`bluetooth.filter.name`); `nil`: no condition.
    public var filterName: String?
    /// The only addresses published (`bluetooth.filter.allow`), as `AA:BB:CC:DD:EE:FF`;
    /// empty: no condition. Default empty.
    public var filterAllow: [String]
    /// Addresses never published (`bluetooth.filter.deny`), as `AA:BB:CC:DD:EE:FF`; wins over
    /// ``filterAllow``. Default empty.
    public var filterDeny: [String]
    /// Friendly names, `<address>=<name>`, used as `<dev>` in the devices' topics
    /// (`bluetooth.names`). Default empty.
    public var names: [String]
    /// Re-publish an unchanged advertisement after this many seconds
    /// (`bluetooth.advertisement_interval`). Default 10.
    public var advertisementInterval: Double
    /// Never publish a device's advertisement more often than this, in seconds
    /// (`bluetooth.advertisement_min_interval`; 0: every change). Default 1.
    public var advertisementMinInterval: Double
    /// A device unseen this many seconds becomes `offline` (`bluetooth.offline_after`).
    /// Default 90.
    public var offlineAfter: Double
    /// A device unseen this many seconds is forgotten (`bluetooth.forget_after`). Default 900.
    public var forgetAfter: Double
    /// Most devices remembered; the longest-unseen are evicted first
    /// (`bluetooth.max_devices`). Default 1000.
    public var maxDevices: Int
    /// Whether published advertisements carry a `decoded` member with what the advertisement
    /// decoders (BTHome v2, iBeacon, Eddystone, Ruuvi, SIG service data) read from them
    /// (`bluetooth.decode`). Default `true`.
    public var decode: Bool
    /// Presence (row C11) settings (`bluetooth.presence.*`).
    public var presence: Presence
    /// Which devices to connect to (rows C4, C10; `bluetooth.connect.*`).
    public var connect: Connect
    /// GATT operations (rows C5–C8; `bluetooth.gatt.*`).
    public var gatt: GATT
    /// The transfer protocol's central side (row C9; `bluetooth.transfer.*`).
    public var transfer: Transfer

    /// Presence estimation from a time-weighted RSSI mean (`bluetooth.presence.*`).
    public struct Presence: Sendable, Equatable {
      /// Mean RSSI at or above which a device becomes `present`, dBm. Default -80.
      public var enterRSSI: Int
      /// Mean RSSI below which a present device becomes `away`, dBm. Default -90.
      public var leaveRSSI: Int
      /// Age in seconds at which a sample weighs half as much as a new one. Default 10.
      public var halfLife: Double
      /// Seconds without a sighting after which a device is `away`. Default 30.
      public var awayAfter: Double

      /// Creates presence settings with the documented defaults.
      public init(
        enterRSSI: Int = -80, leaveRSSI: Int = -90, halfLife: Double = 10, awayAfter: Double = 30
      ) {
        self.enterRSSI = enterRSSI
        self.leaveRSSI = leaveRSSI
        self.halfLife = halfLife
        self.awayAfter = awayAfter
      }
    }

    /// Creates Bluetooth settings with the documented defaults.
    public init(
      radio: Radio = .auto, scanMethod: ScanMethod = .dbus, batchWindow: Double = 0.1,
      adapter: String? = nil,
      simulation: String? = nil,
      scanOnStart: Bool = true,
      minRSSI: Int? = nil, advertisementInterval: Double = 10,
      advertisementMinInterval: Double = 1, offlineAfter: Double = 90,
      forgetAfter: Double = 900, maxDevices: Int = 1000, decode: Bool = true,
      presence: Presence = Presence(),
      filterUUIDs: [String] = [], filterName: String? = nil, filterAllow: [String] = [],
      filterDeny: [String] = [], names: [String] = [], connect: Connect = Connect(),
      gatt: GATT = GATT(),
      transfer: Transfer = Transfer()
    ) {
      self.connect = connect
      self.gatt = gatt
      self.transfer = transfer
      self.radio = radio
      self.scanMethod = scanMethod
      self.batchWindow = batchWindow
      self.adapter = adapter
      self.simulation = simulation
      self.scanOnStart = scanOnStart
      self.minRSSI = minRSSI
      self.advertisementInterval = advertisementInterval
      self.advertisementMinInterval = advertisementMinInterval
      self.offlineAfter = offlineAfter
      self.forgetAfter = forgetAfter
      self.maxDevices = maxDevices
      self.decode = decode
      self.presence = presence
      self.filterUUIDs = filterUUIDs
      self.filterName = filterName
      self.filterAllow = filterAllow
      self.filterDeny = filterDeny
      self.names = names
    }
  }
}
