/// Decodes the advertisement formats sensors and beacons use into named values (issue 18),
/// for the `decoded` member of `<base>/<dev>/advertisement` and for Home Assistant discovery.
///
/// | format | where | spec |
/// |---|---|---|
/// | BTHome v2 (unencrypted) | service data `fcd2` | bthome.io/format |
/// | iBeacon | manufacturer data `004c`, `02 15 …` | Apple, Proximity Beacon Specification |
/// | Eddystone UID, URL, TLM | service data `feaa` | google/eddystone protocol specification |
/// | Ruuvi RAWv2 (data format 5) | manufacturer data `0499`, `05 …` | docs.ruuvi.com, data format 5 |
/// | SIG service data | service data `180f` (battery), `2a19`, `2a6d`, `2a6e`, `2a6f` | GATT Specification Supplement |
/// | Environmental Sensing service data | service data `181a` in the ATC1441 (13 bytes) and pvvx (15 bytes) layouts | the custom firmwares of Xiaomi LYWSD03MMC thermometers |
///
/// Pure and total: malformed data gives an ``DecodedAdvertisement/errors`` entry, never a trap.
/// Encrypted BTHome is reported as such: AES-CCM would need a cryptography library the
/// gateway does not link (Foundation on Linux has none).
public enum AdvertisementDecoder {
  /// The service data UUID of BTHome.
  static let bthome = BluetoothUUID(uuid16: 0xFCD2)
  /// The service data UUID of Eddystone.
  static let eddystone = BluetoothUUID(uuid16: 0xFEAA)
  /// The Environmental Sensing service.
  static let environmentalSensing = BluetoothUUID(uuid16: 0x181A)

  /// Decodes every format `advertisement` carries.
  ///
  /// - Parameter advertisement: The advertisement.
  /// - Returns: The decoded values; ``DecodedAdvertisement/isEmpty`` when no known format is
  ///   in it.
  public static func decode(_ advertisement: Advertisement) -> DecodedAdvertisement {
    var result = DecodedAdvertisement()
    guard !advertisement.serviceData.isEmpty || !advertisement.manufacturerData.isEmpty else {
      return result
    }
    for uuid in advertisement.serviceData.keys.sorted() {
      let data = advertisement.serviceData[uuid] ?? []
      switch uuid {
      case bthome: BTHomeDecoder.decode(data, into: &result)
      case eddystone: EddystoneDecoder.decode(data, into: &result)
      case environmentalSensing: SIGServiceDataDecoder.decodeEnvironmental(data, into: &result)
      default:
        if let short = uuid.uuid16 { SIGServiceDataDecoder.decode(short, data, into: &result) }
      }
    }
    if let apple = advertisement.manufacturerData[0x004C] {
      BeaconDecoder.decodeIBeacon(apple, into: &result)
    }
    if let ruuvi = advertisement.manufacturerData[0x0499] {
      BeaconDecoder.decodeRuuvi(ruuvi, into: &result)
    }
    return result
  }
}
