/// One device in the ``DeviceRegistry``: everything the gateway knows about it right now.
public struct DeviceRecord: Sendable, Hashable {
  /// The device's id, the `<dev>` level of its topics.
  public var id: DeviceID
  /// The device's address.
  public var address: BluetoothAddress
  /// The address type.
  public var addressType: Advertisement.AddressType
  /// The advertised name's bytes, when one was seen (kept when later advertisements lack it).
  public var name: [UInt8]?
  /// The RSSI of the last advertisement, in dBm.
  public var rssi: Int?
  /// When the device was first seen, in seconds since the Unix epoch.
  public var firstSeen: Double
  /// When the device was last seen (advertisement or connection activity).
  public var lastSeen: Double
  /// The connection state.
  public var connection: ConnectionState
  /// Whether the device counts as reachable (`<base>/<dev>/availability`).
  public var online: Bool
  /// Whether the device was taken back from an earlier run's devices list and what that run
  /// left for it is still to be cleared (``DiscoveryBridge/restore(previous:now:)``); listed
  /// as `"restored":true`, so that a run after this one takes it back too.
  public var restored = false
  /// Set while the device is a central subscribed to this gateway's transfer characteristic
  /// (the peripheral role); such a device is never offline, forgotten or evicted.
  public var subscriber: Subscriber?

  /// A central subscribed to the gateway's transfer characteristic.
  public struct Subscriber: Sendable, Hashable {
    /// Its ATT MTU, when the stack told it.
    public var mtu: Int?

    /// Makes a subscriber.
    ///
    /// - Parameter mtu: Its ATT MTU, when known.
    public init(mtu: Int?) { self.mtu = mtu }
  }

  /// Whether the device is connected, being connected or subscribed to the gateway's
  /// peripheral: never offline, forgotten or evicted.
  public var isLive: Bool { connection.isLive || subscriber != nil }

  /// Makes a record.
  ///
  /// - Parameters:
  ///   - id: The device's id.
  ///   - address: The device's address.
  ///   - addressType: The address type.
  ///   - name: The advertised name's bytes.
  ///   - rssi: The last RSSI.
  ///   - firstSeen: When it was first seen.
  ///   - lastSeen: When it was last seen.
  ///   - connection: The connection state.
  ///   - online: Whether it counts as reachable.
  public init(
    id: DeviceID, address: BluetoothAddress, addressType: Advertisement.AddressType,
    name: [UInt8]?, rssi: Int?, firstSeen: Double, lastSeen: Double,
    connection: ConnectionState = .disconnected, online: Bool = true
  ) {
    self.id = id
    self.address = address
    self.addressType = addressType
    self.name = name
    self.rssi = rssi
    self.firstSeen = firstSeen
    self.lastSeen = lastSeen
    self.connection = connection
    self.online = online
  }

  /// The payload of `<base>/<dev>/availability`: `{"state":"online"}` or `{"state":"offline"}`.
  public var availabilityJSON: JSONValue {
    ["state": .string(online ? "online" : "offline")]
  }

  /// The device's entry in `<base>/bridge/<gw>/devices`:
  /// `{"id":"A4C1381E29DF","address":"A4:C1:38:1E:29:DF","addr_type":"public","name":"Thermo",
  /// "rssi":-71,"connection":"disconnected","availability":"online","owner":"pi","last_seen":…}`;
  /// `"subscriber":{"mtu":185}` for a central subscribed to the gateway's peripheral;
  /// `name` and `rssi` are left out when unknown, `name_hex` added as in
  /// ``Advertisement/json(gateway:time:)``, `last_seen` in milliseconds since the Unix epoch.
  ///
  /// - Parameters:
  ///   - owner: The gateway that owns the device (this one).
  ///   - wallClockOffset: Seconds to add to the bridge's (monotonic) time to get wall time
  ///     (see ``DiscoveryBridge/wallClockOffset``).
  /// - Returns: The JSON value.
  public func json(owner: GatewayID, wallClockOffset: Double = 0) -> JSONValue {
    var object: JSONObject = [
      "id": .string(id.rawValue), "address": .string(address.description),
      "addr_type": .string(addressType.rawValue),
    ]
    if let name {
      object["name"] = .string(String(decoding: name, as: UTF8.self))
      if UTF8Rules.firstInvalidOffset(name) != nil {
        object["name_hex"] = .string(Hex.encode(name))
      }
    }
    if let rssi { object["rssi"] = .integer(Int64(rssi)) }
    object["connection"] = .string(connection.rawValue)
    object["availability"] = .string(online ? "online" : "offline")
    if restored { object["restored"] = true }
    if let subscriber {
      var member: JSONObject = [:]
      if let mtu = subscriber.mtu { member["mtu"] = .integer(Int64(mtu)) }
      object["subscriber"] = .object(member)
    }
    object["owner"] = .string(owner.rawValue)
    object["last_seen"] = .integer(Timestamps.milliseconds(lastSeen + wallClockOffset))
    return .object(object)
  }
}
