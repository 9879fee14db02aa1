/// What a ``SimulatedRadio`` simulates: adapters, peripherals to discover and connect to, and
/// centrals that subscribe to the gateway's transfer service. Read from YAML with
/// ``SimulatedWorld/parse(yaml:)``; `config/simulated-world.yaml` is the built-in world
/// (``SimulatedWorld/builtIn``) written out.
///
/// Everything random (addresses, RSSI, failures) comes from generators seeded by ``seed``: one
/// world with one seed always produces the same devices and the same sequence of values.
public struct SimulatedWorld: Sendable, Hashable {
  /// A simulated Bluetooth adapter.
  public struct Adapter: Sendable, Hashable {
    /// Its name (`hci0`).
    public var id: String
    /// Powered at start.
    public var powered: Bool
    /// Seconds between two simulated power cycles (0: never).
    public var powerCycleEvery: Double
    /// Seconds an adapter stays off in a power cycle.
    public var offFor: Double

    /// Creates an adapter description.
    /// - Parameters:
    ///   - id: its name.
    ///   - powered: powered at start.
    ///   - powerCycleEvery: seconds between power cycles (0: never).
    ///   - offFor: seconds off in a power cycle.
    public init(id: String, powered: Bool = true, powerCycleEvery: Double = 0, offFor: Double = 2) {
      self.id = id
      self.powered = powered
      self.powerCycleEvery = powerCycleEvery
      self.offFor = offFor
    }
  }

  /// The kinds of simulated peripherals.
  public enum Kind: String, Sendable, Hashable, CaseIterable {
    /// Battery service (180F): level readable and notifying, falling slowly.
    case battery
    /// Heart-rate service (180D): measurements notified at ``DeviceGroup/notifyRate``.
    case heartRate = "heart_rate"
    /// A custom actuator: a command (write), a stream (write without response) and a status
    /// (read, notify) that reflects every write.
    case actuator
    /// Apple's "BTLE Transfer" service: sends ``DeviceGroup/text`` as `EOM`-terminated chunks
    /// while notifications are on.
    case transfer
    /// A non-connectable beacon whose manufacturer data changes with every advertisement.
    case beacon
    /// A non-connectable BTHome v2 thermometer (service data `fcd2`, unencrypted): packet id,
    /// battery, temperature and humidity, the temperature wandering with every advertisement.
    case thermometer
  }

  /// A group of identical peripherals.
  public struct DeviceGroup: Sendable, Hashable {
    /// What they are.
    public var kind: Kind
    /// How many.
    public var count: Int
    /// Local name (a number is appended when `count` > 1); nil: `sim-<kind>`.
    public var name: String?
    /// Mean RSSI in dBm; each advertisement wanders ±6 dB around it.
    public var rssi: Int
    /// Seconds between advertisements; nil: the world's ``SimulatedWorld/advertisingInterval``.
    public var advertisingInterval: Double?
    /// Heart-rate notifications per second (heart_rate), battery notifications per second
    /// (battery).
    public var notifyRate: Double
    /// The text a transfer peripheral sends.
    public var text: String
    /// Seconds between two texts of a transfer peripheral while notifications are on (0: only
    /// when they are turned on).
    public var textInterval: Double
    /// ATT MTU of the link (a transfer peripheral's chunks are MTU−3 bytes).
    public var mtu: Int
    /// Seconds a random address lives before the device takes a new one (0: a fixed public
    /// address).
    public var rotate: Double
    /// Seconds after which the peripheral drops a connection by itself (0: never).
    public var disconnectAfter: Double
    /// Whether heart-rate measurements carry their number (0, 1, 2, … per device, as a 16-bit
    /// Energy Expended field: flags 0x08), so that an observer can tell a lost or repeated
    /// notification, as the lab's sensor does.
    public var numbered = false

    /// Creates a device group.
    /// - Parameters:
    ///   - kind: what they are.
    ///   - count: how many.
    ///   - name: local name; nil for `sim-<kind>`.
    ///   - rssi: mean RSSI in dBm.
    ///   - advertisingInterval: seconds between advertisements; nil for the world's.
    ///   - notifyRate: notifications per second (heart_rate, battery).
    ///   - text: what a transfer peripheral sends.
    ///   - textInterval: seconds between texts (0: once per subscription).
    ///   - mtu: ATT MTU of the link.
    ///   - rotate: seconds an address lives (0: fixed public address).
    ///   - disconnectAfter: seconds after which the peripheral drops a link (0: never).
    public init(
      kind: Kind, count: Int = 1, name: String? = nil, rssi: Int = -60,
      advertisingInterval: Double? = nil, notifyRate: Double = 1,
      text: String = SimulatedWorld.defaultText, textInterval: Double = 30, mtu: Int = 23,
      rotate: Double = 0, disconnectAfter: Double = 0
    ) {
      self.kind = kind
      self.count = count
      self.name = name
      self.rssi = rssi
      self.advertisingInterval = advertisingInterval
      self.notifyRate = notifyRate
      self.text = text
      self.textInterval = textInterval
      self.mtu = mtu
      self.rotate = rotate
      self.disconnectAfter = disconnectAfter
    }
  }

  /// A group of centrals that subscribe to the gateway's transfer service (the peripheral
  /// role) once it advertises.
  public struct CentralGroup: Sendable, Hashable {
    /// How many.
    public var count: Int
    /// Their ATT MTU (chunks must not exceed MTU−3).
    public var mtu: Int
    /// Seconds after the service is advertised before they subscribe.
    public var subscribeAfter: Double
    /// Seconds they stay subscribed before unsubscribing (0: for good).
    public var stay: Double
    /// Seconds unsubscribed before subscribing again (after ``stay``).
    public var pause: Double
    /// Write back, on the writable characteristic if the gateway offers one, a line
    /// describing each text received (`received <bytes> bytes in <chunks> chunks, largest
    /// <n>, mtu <m>: <text, when short>`).
    public var echo: Bool

    /// Creates a central group.
    /// - Parameters:
    ///   - count: how many.
    ///   - mtu: their ATT MTU.
    ///   - subscribeAfter: seconds after advertising starts before they subscribe.
    ///   - stay: seconds subscribed (0: for good).
    ///   - pause: seconds unsubscribed between two stays.
    ///   - echo: write back a line about each text received.
    public init(
      count: Int = 1, mtu: Int = 185, subscribeAfter: Double = 1, stay: Double = 0,
      pause: Double = 5, echo: Bool = false
    ) {
      self.count = count
      self.mtu = mtu
      self.subscribeAfter = subscribeAfter
      self.stay = stay
      self.pause = pause
      self.echo = echo
    }
  }

  /// Seed of every random choice.
  public var seed: UInt64
  /// The adapters (at least one).
  public var adapters: [Adapter]
  /// Default seconds between two advertisements of a device.
  public var advertisingInterval: Double
  /// Seconds a connection takes.
  public var connectLatency: Double
  /// Fraction (0…1) of connection attempts that fail (`aborted`).
  public var connectFailureRate: Double
  /// Seconds a read, write or notify switch takes.
  public var gattLatency: Double
  /// Links the adapter allows at once (`out_of_slots` beyond).
  public var maxConnections: Int
  /// Seconds between two deliveries of events: what falls due in between is delivered
  /// together, as a controller delivers the notifications of one connection event together
  /// (default 5 ms; BLE's shortest connection interval is 7.5 ms).
  public var eventInterval: Double
  /// The peripherals.
  public var devices: [DeviceGroup]
  /// The centrals.
  public var centrals: [CentralGroup]

  /// Creates a world.
  /// - Parameters:
  ///   - seed: seed of every random choice.
  ///   - adapters: the adapters.
  ///   - advertisingInterval: default seconds between advertisements.
  ///   - connectLatency: seconds a connection takes.
  ///   - connectFailureRate: fraction of connection attempts that fail.
  ///   - gattLatency: seconds a GATT operation takes.
  ///   - maxConnections: links allowed at once.
  ///   - eventInterval: seconds between two deliveries of events.
  ///   - devices: the peripherals.
  ///   - centrals: the centrals.
  public init(
    seed: UInt64 = 1, adapters: [Adapter] = [Adapter(id: "hci0")],
    advertisingInterval: Double = 1, connectLatency: Double = 0.05,
    connectFailureRate: Double = 0, gattLatency: Double = 0.002, maxConnections: Int = 7,
    eventInterval: Double = 0.005, devices: [DeviceGroup] = [], centrals: [CentralGroup] = []
  ) {
    self.seed = seed
    self.adapters = adapters
    self.advertisingInterval = advertisingInterval
    self.connectLatency = connectLatency
    self.connectFailureRate = connectFailureRate
    self.gattLatency = gattLatency
    self.maxConnections = maxConnections
    self.eventInterval = eventInterval
    self.devices = devices
    self.centrals = centrals
  }

  /// The text transfer peripherals send by default (multi-byte UTF-8 that straddles chunks).
  public static let defaultText =
    "Here's to the crazy ones. Grüße aus der Simulation: ünïcödé ✓ 東京 🚀 — sent in chunks."

  /// The world the gateway simulates when no file is given: one peripheral of each kind and
  /// one central for the peripheral role.
  public static let builtIn = SimulatedWorld(
    seed: 1,
    devices: [
      DeviceGroup(kind: .battery, name: "sim-battery"),
      DeviceGroup(kind: .heartRate, name: "sim-heart-rate", notifyRate: 1),
      DeviceGroup(kind: .actuator, name: "sim-actuator"),
      DeviceGroup(kind: .transfer, name: "sim-transfer", textInterval: 20),
      DeviceGroup(kind: .beacon, count: 3, name: "sim-beacon", rssi: -75, rotate: 30),
      DeviceGroup(kind: .thermometer, name: "sim-thermometer", rssi: -65),
    ],
    centrals: [CentralGroup(mtu: 185, subscribeAfter: 2, stay: 20, pause: 10)])
}
