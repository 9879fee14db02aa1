@_spi(Fuzzing) import BlueZ
import BridgeCore
@_spi(Fuzzing) import DBus
import Foundation
@_spi(Fuzzing) import GatewaySettings
import SimulatedRadio

/// One function per fuzz target: each takes arbitrary bytes the way the gateway takes them
/// from outside (MQTT payloads and topics, notifications, files, D-Bus messages) and checks
/// what must hold for any input. A crash, a failed precondition or (under ASan) a memory error
/// is a finding.
enum FuzzTargets {
  static let all = [
    "json", "requests", "values", "transfer", "world", "config", "dbus", "adverts", "mgmt",
  ]

  static let gateway = GatewayID("fuzz")
  static let topics = try! Topics(gateway: gateway)
  static let sensor = try! BluetoothAddress("A4:C1:38:1E:29:DF")

  /// A GATT bridge with one connected device whose services are resolved (battery level
  /// read+notify, heart rate notify, a writable command and a write-without-response stream).
  static let readyBridge: GATTBridge = {
    var bridge = GATTBridge(
      topics: topics, configuration: .init(policy: ConnectionPolicy(addresses: [sensor])))
    _ = bridge.handle(.connectionChanged(sensor, connected: true), now: 1)
    let tree = GATTTree(services: [
      .init(
        uuid: BluetoothUUID(uuid16: 0x180F),
        characteristics: [.init(uuid: BluetoothUUID(uuid16: 0x2A19), flags: ["read", "notify"])]),
      .init(
        uuid: BluetoothUUID(uuid16: 0x180D),
        characteristics: [.init(uuid: BluetoothUUID(uuid16: 0x2A37), flags: ["notify"])]),
      .init(
        uuid: BluetoothUUID(uuid16: 0xFFF0),
        characteristics: [
          .init(uuid: BluetoothUUID(uuid16: 0xFFF1), flags: ["read", "write"]),
          .init(uuid: BluetoothUUID(uuid16: 0xFFF2), flags: ["write-without-response"]),
        ]),
    ])
    _ = bridge.handle(.servicesResolved(sensor, tree), now: 1)
    return bridge
  }()

  /// Where the `adverts` target puts its data: service data under these UUIDs, then
  /// manufacturer data under these companies.
  static let advertSlots: [UInt16] = [0xFCD2, 0xFEAA, 0x181A, 0x180F, 0x2A6E, 0x2A6F, 0x2A6D]
  static let advertCompanies: [UInt16] = [0x004C, 0x0499]

  /// Advertisement data (a slot byte, then the data): the decoders never trap, what they make
  /// is JSON that parses again, and the Home Assistant configs it leads to are valid topics
  /// with JSON payloads.
  static func adverts(_ bytes: [UInt8]) {
    guard let slot = bytes.first else { return }
    let data = Array(bytes.dropFirst())
    let index = Int(slot) % (advertSlots.count + advertCompanies.count)
    var advertisement = Advertisement(address: sensor, rssi: -60)
    if index < advertSlots.count {
      advertisement.serviceData = [BluetoothUUID(uuid16: advertSlots[index]): data]
    } else {
      advertisement.manufacturerData = [advertCompanies[index - advertSlots.count]: data]
    }
    let decoded = AdvertisementDecoder.decode(advertisement)
    precondition(
      (try? JSONValue.parse(decoded.json.serializedBytes())) != nil, "decoded JSON does not parse")
    let payload = advertisement.jsonBytes(gateway: gateway, time: 1, decoded: decoded)
    precondition((try? JSONValue.parse(payload)) != nil, "advertisement JSON does not parse")
    var discovery = HomeAssistantDiscovery(topics: topics)
    let record = DeviceRecord(
      id: DeviceID(address: sensor), address: sensor, addressType: .public, name: nil,
      rssi: -60, firstSeen: 0, lastSeen: 0)
    for output in discovery.observed(record, decoded: decoded) {
      guard case .publish(let topic, let config, _) = output else { continue }
      precondition((try? TopicName(topic.rawValue)) != nil, "invalid config topic")
      precondition((try? JSONValue.parse(config)) != nil, "config does not parse")
    }
  }

  /// JSON: parsing never crashes; what parses serialises to text that parses to the same value.
  static func json(_ bytes: [UInt8]) {
    guard let value = try? JSONValue.parse(bytes) else { return }
    let again = try? JSONValue.parse(value.serializedBytes())
    precondition(again.map { same($0, value) } == true, "JSON round trip changed the value")
  }

  /// Equal as JSON: numbers by value (`2.5e3` serialises as `2500`, an integer).
  static func same(_ a: JSONValue, _ b: JSONValue) -> Bool {
    switch (a, b) {
    case (.integer(let x), .number(let y)), (.number(let y), .integer(let x)): Double(x) == y
    case (.number(let x), .number(let y)): x == y || (x.isNaN && y.isNaN)
    case (.array(let x), .array(let y)): x.count == y.count && zip(x, y).allSatisfy(same)
    case (.object(let x), .object(let y)):
      x.count == y.count && x.allSatisfy { key, value in y[key].map { same(value, $0) } == true }
    default: a == b
    }
  }

  /// A topic and a payload (split at the first NUL) as an inbound MQTT message: parsed as a
  /// request and served by the bridge verbs' router or by a GATT bridge with a ready device.
  /// Every answer is valid UTF-8 JSON.
  static func requests(_ bytes: [UInt8]) {
    let split = bytes.firstIndex(of: 0) ?? bytes.endIndex
    let topicBytes = Array(bytes[..<split])
    let payload = split < bytes.endIndex ? Array(bytes[(split + 1)...]) : []
    guard let topic = try? TopicName(validating: topicBytes) else { return }
    guard let request = topics.parseRequest(topic) else {
      _ = topics.deviceRequestProblem(topic)
      return
    }
    switch request {
    case .bridge(let verb):
      var discovery = DiscoveryBridge(topics: topics)
      var gatt = readyBridge
      let route = BridgeRequestRouter().route(
        verb: verb, payload: payload, health: { HealthReport(uptime: 1) },
        scan: { discovery.apply($0).response },
        device: { connect, body in gatt.deviceRequest(connect: connect, body: body, now: 2).response
        },
        remove: { discovery.remove($0).response }, peripheral: true)
      if case .answer(let response) = route { checkJSON(response.json.serializedBytes()) }
    case .peripheralText:
      var peripheral = PeripheralBridge(
        topics: topics,
        service: PeripheralService(
          service: BluetoothUUID(uuid16: 0xFE10), characteristic: BluetoothUUID(uuid16: 0xFE11)),
        maxTextBytes: 4096)
      for output in peripheral.setText(payload, now: 2) {
        if case .publish(_, let body, _) = output { checkJSON(body) }
      }
    default:
      var gatt = readyBridge
      for output in gatt.request(
        request, payload: payload, reply: ReplyAddress(topic: "fuzz/reply"), now: 2)
      {
        if case .publish(let topic, let body, _) = output, topic.rawValue.hasSuffix("/result") {
          checkJSON(body)
        }
      }
    }
  }

  /// A result or response body: JSON that parses.
  static func checkJSON(_ body: [UInt8]) {
    precondition((try? JSONValue.parse(body)) != nil, "an answer is not JSON")
  }

  /// Value formats: the first byte picks a format; decoding what encoding produced gives the
  /// bytes back (hex, base64); decoding arbitrary payloads and the SIG decoder never crash.
  static func values(_ bytes: [UInt8]) {
    guard let first = bytes.first else { return }
    let formats = ValueFormat.allCases
    let format = formats[Int(first) % formats.count]
    let rest = Array(bytes.dropFirst())
    _ = try? format.decode(rest)
    _ = try? WriteRequest(parsing: rest, format: format)
    _ = try? ReadRequest(parsing: rest)
    _ = try? NotifyRequest(parsing: rest)
    _ = try? ConnectionRequest(parsing: rest)
    for uuid: UInt16 in [0x2A19, 0x2A37, 0x2A6E, 0x2A6F, 0x2A6D, 0x2A1C, 0x2A00, 0x2A29] {
      if let object = SIGValueDecoder.decode(rest, characteristic: BluetoothUUID(uuid16: uuid)) {
        checkJSON(JSONValue.object(object).serializedBytes())
      }
    }
    if let encoded = try? format.encode(rest, timestamp: 1, gateway: gateway) {
      if format == .hex || format == .base64 {
        precondition((try? format.decode(encoded)) == rest, "\(format) did not round-trip")
      }
    }
  }

  /// The transfer reassembler: chunks (each a length byte and that many bytes) never produce
  /// more than the limit, and a complete text is what was appended before `EOM`.
  static func transfer(_ bytes: [UInt8]) {
    var reassembler = TransferReassembler(maxBytes: 512)
    var index = 0
    var pending: [UInt8] = []
    var discarding = false
    while index < bytes.count {
      let length = Int(bytes[index])
      index += 1
      let chunk = Array(bytes[index..<min(bytes.count, index + length)])
      index += chunk.count
      switch reassembler.append(chunk) {
      case nil:
        if chunk == Array("EOM".utf8) {
          precondition(discarding, "EOM without a text or a dropped one")
          discarding = false
        } else if !discarding {
          pending += chunk
        }
      case .complete(let text):
        precondition(!discarding && Array(text) == pending, "a text is not its chunks")
        pending = []
      case .tooLong(let count):
        precondition(count > 512 && !discarding, "too long below the limit, or twice")
        pending = []
        discarding = true
      }
      precondition(reassembler.pendingBytes <= 512, "more pending than the limit")
    }
  }

  /// The simulated world's YAML: any text gives a world or an error, never a crash.
  static func world(_ bytes: [UInt8]) {
    _ = try? SimulatedWorld.parse(yaml: String(decoding: bytes, as: UTF8.self))
  }

  /// The configuration: the bytes as a YAML file's text, and split at NULs as command-line
  /// arguments; a configuration or a ``ConfigurationError`` with a message, never a crash.
  static func config(_ bytes: [UInt8]) {
    let text = String(decoding: bytes, as: UTF8.self)
    let arguments = bytes.split(separator: 0, omittingEmptySubsequences: false).map {
      String(decoding: $0, as: UTF8.self)
    }
    for (yaml, args) in [(text, [String]()), ("", arguments)] {
      if let problem = ConfigurationLoader.problem(yaml: yaml, arguments: args) {
        precondition(!problem.description.isEmpty, "an error without a message")
      }
    }
  }

  /// D-Bus: arbitrary bytes as a message off the wire; what libdbus accepts becomes values
  /// that pass our own validation's type rules (signatures from the values parse).
  /// Packets of the kernel's Bluetooth control socket (a length byte, then the packet, each):
  /// the management scanner's parsing never traps, and every advertisement it makes of Device
  /// Found reports publishes as JSON that parses.
  static func mgmt(_ bytes: [UInt8]) {
    var packets: [[UInt8]] = []
    var rest = bytes[...]
    while let length = rest.first {
      rest = rest.dropFirst()
      packets.append(Array(rest.prefix(Int(length))))
      rest = rest.dropFirst(Int(length))
    }
    for advertisement in ManagementFuzzing.advertisements(packets) {
      let payload = advertisement.jsonBytes(
        gateway: gateway, time: 1, decoded: AdvertisementDecoder.decode(advertisement))
      precondition((try? JSONValue.parse(payload)) != nil, "advertisement JSON does not parse")
    }
  }

  static func dbus(_ bytes: [UInt8]) {
    guard let values = DBusFuzzing.decodeMessage(bytes) else { return }
    for value in values {
      precondition(
        (try? DBusSignature(value.signature.rawValue)) != nil, "a value with a bad signature")
    }
  }
}
