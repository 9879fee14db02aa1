/// What a device advertised, as the stack reports it after each advertisement: the device's
/// current properties (BlueZ `org.bluez.Device1`), not only the fields that changed.
public struct Advertisement: Sendable, Hashable {
  /// Whether the address is the device's fixed public address or a random one.
  public enum AddressType: String, Sendable, Hashable, CaseIterable {
    /// An IEEE-assigned public address.
    case `public`
    /// A random address (static or resolvable/non-resolvable private).
    case random
  }

  /// The device's address.
  public var address: BluetoothAddress
  /// The address type.
  public var addressType: AddressType
  /// The advertised local name as received, which may be any bytes; `nil` when none was seen.
  public var name: [UInt8]?
  /// The signal strength of the last advertisement in dBm; `nil` when none was received (a
  /// device the stack only remembers from its cache). A value outside ``measurableRSSI`` (HCI's
  /// 127, "not available") says the device was heard at an unknown strength.
  public var rssi: Int?

  /// The RSSI values HCI can measure, in dBm; 127 means "not available" (reported by some
  /// controllers, and by the lab's virtual ones, for every advertisement).
  public static let measurableRSSI: ClosedRange<Int> = -127...20
  /// The advertised transmit power in dBm, when advertised.
  public var txPower: Int?
  /// Manufacturer-specific data by company identifier (`0x004C` is Apple).
  public var manufacturerData: [UInt16: [UInt8]]
  /// Service data by service UUID.
  public var serviceData: [BluetoothUUID: [UInt8]]
  /// The advertised service UUIDs.
  public var serviceUUIDs: [BluetoothUUID]

  /// Makes an advertisement.
  ///
  /// - Parameters:
  ///   - address: The device's address.
  ///   - addressType: The address type.
  ///   - name: The advertised name's bytes.
  ///   - rssi: The signal strength in dBm.
  ///   - txPower: The advertised transmit power in dBm.
  ///   - manufacturerData: Manufacturer data by company identifier.
  ///   - serviceData: Service data by service UUID.
  ///   - serviceUUIDs: The advertised service UUIDs.
  public init(
    address: BluetoothAddress, addressType: AddressType = .public, name: [UInt8]? = nil,
    rssi: Int? = nil, txPower: Int? = nil, manufacturerData: [UInt16: [UInt8]] = [:],
    serviceData: [BluetoothUUID: [UInt8]] = [:], serviceUUIDs: [BluetoothUUID] = []
  ) {
    self.address = address
    self.addressType = addressType
    self.name = name
    self.rssi = rssi
    self.txPower = txPower
    self.manufacturerData = manufacturerData
    self.serviceData = serviceData
    self.serviceUUIDs = serviceUUIDs
  }

  /// The name as text: the bytes decoded as UTF-8, each invalid sequence replaced by U+FFFD.
  public var nameText: String? { name.map { String(decoding: $0, as: UTF8.self) } }

  /// Whether the advertisement carries the same information as `other`, apart from the RSSI.
  ///
  /// Service UUIDs compare as sets, so a reordered list is no change.
  ///
  /// - Parameter other: Another advertisement.
  /// - Returns: `true` when only the RSSI (or the order of the service UUIDs) differs.
  public func hasSameContent(as other: Advertisement) -> Bool {
    address == other.address && addressType == other.addressType && name == other.name
      && txPower == other.txPower && manufacturerData == other.manufacturerData
      && serviceData == other.serviceData
      && (serviceUUIDs == other.serviceUUIDs || Set(serviceUUIDs) == Set(other.serviceUUIDs))
  }

  /// The payload of `<base>/<dev>/advertisement` (TOPICS.md, C2).
  ///
  /// `{"id":"A4:C1:38:1E:29:DF","addr_type":"public","name":"Thermo","rssi":-71,"txpower":4,
  /// "manufacturerdata":{"004c":"0215…"},"servicedata":{"fcd2":"40…"},"uuids":["180f"],
  /// "gw":"pi","ts":1700000000000}`
  ///
  /// - `id` (address with colons), `addr_type`, `gw` and `ts` are always there; every other key is
  ///   left out when unknown or empty (never `null`), so consumers test for presence.
  /// - `name` is the raw name; when its bytes are not valid UTF-8 it holds them decoded with
  ///   U+FFFD replacements and `name_hex` follows with the exact bytes in hex.
  /// - `manufacturerdata`: keys are the company id as four lower-case hex digits, values the
  ///   data in lower-case hex, keys in ascending order.
  /// - `servicedata`: keys are ``BluetoothUUID/shortForm``, values lower-case hex, keys in
  ///   ascending UUID order; `uuids` likewise, sorted and without repeats.
  /// - `decoded`, when given and not empty: what ``AdvertisementDecoder`` made of the data
  ///   (``DecodedAdvertisement/json``).
  /// - `ts` is milliseconds since the Unix epoch, as in the `json` value format.
  ///
  /// - Parameters:
  ///   - gateway: This gateway.
  ///   - time: When it was received, in seconds since the Unix epoch.
  ///   - decoded: The decoded values, if decoding is on.
  /// - Returns: The JSON value.
  public func json(gateway: GatewayID, time: Double, decoded: DecodedAdvertisement? = nil)
    -> JSONValue
  {
    (try? JSONValue.parse(jsonBytes(gateway: gateway, time: time, decoded: decoded))) ?? .null
  }

  /// The same payload as ``json(gateway:time:)``, as the bytes to publish, written directly
  /// (no ``JSONValue`` tree): the advertisement path builds one per published advertisement.
  ///
  /// - Parameters:
  ///   - gateway: This gateway.
  ///   - time: When it was received, in seconds since the Unix epoch.
  ///   - decoded: The decoded values, if decoding is on.
  /// - Returns: The compact JSON text, as ``JSONValue/serializedBytes()`` would write it.
  public func jsonBytes(gateway: GatewayID, time: Double, decoded: DecodedAdvertisement? = nil)
    -> [UInt8]
  {
    var writer = JSONWriter()
    writer.beginObject()
    writer.key("id")
    writer.address(address)
    writer.key("addr_type")
    writer.string(addressType.rawValue)
    if let name {
      writer.key("name")
      if UTF8Rules.firstInvalidOffset(name) == nil {
        writer.utf8String(name)
      } else {
        writer.string(String(decoding: name, as: UTF8.self))
        writer.key("name_hex")
        writer.hexString(name)
      }
    }
    if let rssi {
      writer.key("rssi")
      writer.integer(Int64(rssi))
    }
    if let txPower {
      writer.key("txpower")
      writer.integer(Int64(txPower))
    }
    if !manufacturerData.isEmpty {
      writer.key("manufacturerdata")
      writer.beginObject()
      for company in manufacturerData.keys.sorted() {
        writer.hexKey(company)
        writer.hexString(manufacturerData[company] ?? [])
      }
      writer.endObject()
    }
    if !serviceData.isEmpty {
      writer.key("servicedata")
      writer.beginObject()
      for uuid in serviceData.keys.sorted() {
        writer.dynamicKey(uuid.shortForm)
        writer.hexString(serviceData[uuid] ?? [])
      }
      writer.endObject()
    }
    if !serviceUUIDs.isEmpty {
      writer.key("uuids")
      writer.beginArray()
      for uuid in Set(serviceUUIDs).sorted() { writer.string(uuid.shortForm) }
      writer.endArray()
    }
    if let decoded, !decoded.isEmpty {
      writer.key("decoded")
      decoded.write(to: &writer)
    }
    writer.key("gw")
    writer.string(gateway.rawValue)
    writer.key("ts")
    writer.integer(Timestamps.milliseconds(time))
    writer.endObject()
    return writer.bytes
  }
}
