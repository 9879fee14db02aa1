import BridgeCore

/// Literal inputs shared by the discovery tests.
enum Fixture {
  static let gateway = GatewayID("pi")
  static let topics = try! Topics(base: "gatt2mqtt", gateway: gateway)
  static let t0 = 1_700_000_000.0

  static func address(_ text: String) -> BluetoothAddress { try! BluetoothAddress(text) }

  /// A random (static) address made from a number, for rotating-address tests.
  static func randomAddress(_ index: Int) -> BluetoothAddress {
    BluetoothAddress(bytes: [
      0xC0 | UInt8(index >> 32 & 0x3F), UInt8(index >> 24 & 0xFF), UInt8(index >> 16 & 0xFF),
      UInt8(index >> 8 & 0xFF), UInt8(index & 0xFF), 0x42,
    ])!
  }

  static func advert(
    _ text: String = "A4:C1:38:1E:29:DF", name: String? = "Thermo", rssi: Int? = -60,
    uuids: [UInt16] = [], type: Advertisement.AddressType = .public
  ) -> Advertisement {
    Advertisement(
      address: address(text), addressType: type, name: name.map { Array($0.utf8) }, rssi: rssi,
      serviceUUIDs: uuids.map { BluetoothUUID(uuid16: $0) })
  }
}

extension BridgeOutput {
  /// The topic of a publish, or `nil`.
  var topic: String? {
    if case .publish(let topic, _, _) = self { return topic.rawValue }
    return nil
  }

  /// The payload of a publish as text, or `nil`.
  var text: String? {
    if case .publish(_, let payload, _) = self { return String(decoding: payload, as: UTF8.self) }
    return nil
  }

  /// The retain flag of a publish, or `nil`.
  var retain: Bool? {
    if case .publish(_, _, let retain) = self { return retain }
    return nil
  }

  /// The payload of a publish parsed as JSON, or `nil`.
  var json: JSONValue? {
    if case .publish(_, let payload, _) = self { return try? JSONValue.parse(payload) }
    return nil
  }
}

extension [BridgeOutput] {
  /// The publishes on a topic ending in `suffix`.
  func published(_ suffix: String) -> [BridgeOutput] {
    filter { $0.topic?.hasSuffix(suffix) == true }
  }

  /// The event types published on the bridge event topic, in order.
  var eventTypes: [String] {
    published("/bridge/pi/event").compactMap { $0.json?["type"]?.stringValue }
  }
}
