import BridgeCore

/// What fits in legacy (Bluetooth 4.x) advertising data, at most 31 bytes: the decision to
/// advertise the local name or to drop it. Pure.
///
/// Each AD structure costs two header bytes (length, type) plus its data: the flags take 3 bytes
/// (bluetoothd adds them for a `peripheral` advertisement), a list of service UUIDs 2 + 2 bytes per
/// 16-bit SIG UUID or 2 + 16 bytes per other UUID (bluetoothd 5.66 shortens only SIG-base UUIDs
/// whose value fits 16 bits; others, 32-bit ones included, stay 128-bit), and the complete local
/// name 2 + its UTF-8 length. A 128-bit service UUID thus leaves 31 − 3 − 18 = 10 bytes: a name of
/// at most 8 bytes. A name that does not fit is dropped whole (never shortened: a cut UTF-8
/// name could end mid-character, and a central matching names would not find it anyway).
struct LegacyAdvertisingData: Sendable, Hashable {
  /// The legacy advertising data limit.
  static let capacity = 31
  /// The flags AD structure.
  static let flagsLength = 3

  /// The service UUIDs advertised.
  let serviceUUIDs: [BluetoothUUID]
  /// The local name advertised, `nil` for none.
  let localName: String?
  /// The requested name that did not fit, `nil` when nothing was dropped.
  let droppedLocalName: String?
  /// Bytes the advertising data takes.
  let length: Int

  /// Plans the advertising data.
  ///
  /// - Parameters:
  ///   - serviceUUIDs: The service UUIDs to advertise (they always go in).
  ///   - localName: The name wanted; empty counts as none.
  init(serviceUUIDs: [BluetoothUUID], localName: String?) {
    self.serviceUUIDs = serviceUUIDs
    let base = Self.flagsLength + Self.uuidListsLength(serviceUUIDs)
    if let name = localName, !name.isEmpty {
      let named = base + 2 + name.utf8.count
      if named <= Self.capacity {
        self.localName = name
        droppedLocalName = nil
        length = named
      } else {
        self.localName = nil
        droppedLocalName = name
        length = base
      }
    } else {
      self.localName = nil
      droppedLocalName = nil
      length = base
    }
  }

  /// Bytes the service UUID lists take: one AD structure per UUID size present.
  static func uuidListsLength(_ uuids: [BluetoothUUID]) -> Int {
    let short = uuids.filter { $0.uuid16 != nil }.count
    let long = uuids.count - short
    return (short > 0 ? 2 + 2 * short : 0) + (long > 0 ? 2 + 16 * long : 0)
  }
}
