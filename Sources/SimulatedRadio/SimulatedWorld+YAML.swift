import YAMLSupport
import Yams

extension SimulatedWorld {
  /// A world file that cannot be used: the key's path and what is wrong with it.
  public struct Error: Swift.Error, Sendable, Hashable, CustomStringConvertible {
    /// Where in the file (`devices[2].kind`; empty for the whole document).
    public var path: String
    /// What is wrong.
    public var message: String

    /// Creates an error.
    /// - Parameters:
    ///   - path: the key's path.
    ///   - message: what is wrong.
    public init(path: String, message: String) {
      self.path = path
      self.message = message
    }

    /// `path: message`.
    public var description: String { path.isEmpty ? message : "\(path): \(message)" }
  }

  /// Reads a world from YAML. Unknown keys and bad values are errors naming the key's path;
  /// absent keys take the defaults of ``SimulatedWorld/init(seed:adapters:advertisingInterval:connectLatency:connectFailureRate:gattLatency:maxConnections:devices:centrals:)``.
  ///
  /// - Parameter yaml: the document.
  /// - Returns: The world.
  /// - Throws: ``Error`` with the path of the first offending key.
  public static func parse(yaml: String) throws(Error) -> SimulatedWorld {
    let root: Node?
    do {
      root = try BoundedYAML.compose(yaml: yaml)
    } catch let error as BoundedYAML.Refusal {
      throw Error(path: "", message: error.description)
    } catch {
      throw Error(path: "", message: "not YAML: \(error)")
    }
    guard let root else { return SimulatedWorld() }
    let top = try Fields(root, path: "")
    var world = SimulatedWorld()
    world.seed = try top.integer("seed", default: 1, in: 0...Int.max).map { UInt64($0) } ?? 1
    if let adapters = try top.sequence("adapters") {
      world.adapters = []
      for fields in adapters { world.adapters.append(try adapter(fields)) }
      guard !world.adapters.isEmpty else {
        throw Error(path: "adapters", message: "at least one adapter")
      }
      let ids = world.adapters.map(\.id)
      if Set(ids).count != ids.count {
        throw Error(path: "adapters", message: "adapter ids must be distinct")
      }
    }
    world.advertisingInterval =
      try top.number("advertising_interval", in: 0.001...3600) ?? world.advertisingInterval
    world.connectLatency = try top.number("connect_latency", in: 0...60) ?? world.connectLatency
    world.connectFailureRate =
      try top.number("connect_failure_rate", in: 0...1) ?? world.connectFailureRate
    world.gattLatency = try top.number("gatt_latency", in: 0...10) ?? world.gattLatency
    world.maxConnections =
      try top.integer("max_connections", in: 1...1000) ?? world.maxConnections
    world.eventInterval = try top.number("event_interval", in: 0.0005...1) ?? world.eventInterval
    world.devices = []
    for fields in try top.sequence("devices") ?? [] {
      world.devices.append(try deviceGroup(fields))
    }
    world.centrals = []
    for fields in try top.sequence("centrals") ?? [] {
      world.centrals.append(try centralGroup(fields))
    }
    try top.rejectUnknown()
    return world
  }

  private static func adapter(_ fields: Fields) throws(Error) -> Adapter {
    let adapter = Adapter(
      id: try fields.string("id", required: true) ?? "hci0",
      powered: try fields.bool("powered") ?? true,
      powerCycleEvery: try fields.number("power_cycle_every", in: 0...86_400) ?? 0,
      offFor: try fields.number("off_for", in: 0.01...3600) ?? 2)
    try fields.rejectUnknown()
    return adapter
  }

  private static func deviceGroup(_ fields: Fields) throws(Error) -> DeviceGroup {
    let kindText = try fields.string("kind", required: true) ?? ""
    guard let kind = Kind(rawValue: kindText) else {
      throw Error(
        path: fields.path + ".kind",
        message: "must be one of \(Kind.allCases.map(\.rawValue).joined(separator: ", "))")
    }
    var group = DeviceGroup(kind: kind)
    group.count = try fields.integer("count", in: 1...100_000) ?? 1
    group.name = try fields.string("name")
    group.rssi = try fields.integer("rssi", in: -127...20) ?? group.rssi
    group.advertisingInterval = try fields.number("advertising_interval", in: 0.001...3600)
    group.notifyRate = try fields.number("notify_rate", in: 0.001...100_000) ?? group.notifyRate
    group.text = try fields.string("text") ?? group.text
    group.textInterval = try fields.number("text_interval", in: 0...86_400) ?? group.textInterval
    group.mtu = try fields.integer("mtu", in: 23...517) ?? group.mtu
    group.rotate = try fields.number("rotate", in: 0...86_400) ?? 0
    group.disconnectAfter = try fields.number("disconnect_after", in: 0...86_400) ?? 0
    group.numbered = try fields.bool("numbered") ?? false
    try fields.rejectUnknown()
    return group
  }

  private static func centralGroup(_ fields: Fields) throws(Error) -> CentralGroup {
    var group = CentralGroup()
    group.count = try fields.integer("count", in: 1...1000) ?? 1
    group.mtu = try fields.integer("mtu", in: 23...517) ?? group.mtu
    group.subscribeAfter =
      try fields.number("subscribe_after", in: 0...86_400) ?? group.subscribeAfter
    group.stay = try fields.number("stay", in: 0...86_400) ?? 0
    group.pause = try fields.number("pause", in: 0.01...86_400) ?? group.pause
    group.echo = try fields.bool("echo") ?? false
    try fields.rejectUnknown()
    return group
  }
}

/// The keys of one YAML mapping, read once each; what is left over is an unknown key.
private final class Fields {
  let path: String
  private var values: [(key: String, node: Node)]
  private var used: Set<String> = []

  init(_ node: Node, path: String) throws(SimulatedWorld.Error) {
    guard let mapping = node.mapping else {
      throw SimulatedWorld.Error(path: path, message: "must be a mapping of keys to values")
    }
    self.path = path
    values = mapping.map { (key: $0.key.string ?? "", node: $0.value) }
  }

  private func child(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

  private func scalar(_ key: String) throws(SimulatedWorld.Error) -> String? {
    used.insert(key)
    guard let node = values.first(where: { $0.key == key })?.node else { return nil }
    guard let scalar = node.scalar else {
      throw SimulatedWorld.Error(path: child(key), message: "must be a single value")
    }
    return scalar.string
  }

  func string(_ key: String, required: Bool = false) throws(SimulatedWorld.Error) -> String? {
    let value = try scalar(key)
    if required, value == nil || value?.isEmpty == true {
      throw SimulatedWorld.Error(path: child(key), message: "is required")
    }
    return value
  }

  func bool(_ key: String) throws(SimulatedWorld.Error) -> Bool? {
    guard let text = try scalar(key) else { return nil }
    switch text.lowercased() {
    case "true", "yes", "on": return true
    case "false", "no", "off": return false
    default: throw SimulatedWorld.Error(path: child(key), message: "must be true or false")
    }
  }

  func number(_ key: String, in range: ClosedRange<Double>) throws(SimulatedWorld.Error)
    -> Double?
  {
    guard let text = try scalar(key) else { return nil }
    guard let value = Double(text), value.isFinite, range.contains(value) else {
      throw SimulatedWorld.Error(
        path: child(key),
        message: "must be a number from \(range.lowerBound) to \(range.upperBound), not \(text)")
    }
    return value
  }

  func integer(_ key: String, default: Int? = nil, in range: ClosedRange<Int>)
    throws(SimulatedWorld.Error) -> Int?
  {
    guard let text = try scalar(key) else { return `default` }
    guard let value = Int(text), range.contains(value) else {
      throw SimulatedWorld.Error(
        path: child(key),
        message:
          "must be a whole number from \(range.lowerBound) to \(range.upperBound), not \(text)"
      )
    }
    return value
  }

  func sequence(_ key: String) throws(SimulatedWorld.Error) -> [Fields]? {
    used.insert(key)
    guard let node = values.first(where: { $0.key == key })?.node else { return nil }
    guard let items = node.sequence else {
      throw SimulatedWorld.Error(path: child(key), message: "must be a list")
    }
    var result: [Fields] = []
    for (index, item) in items.enumerated() {
      result.append(try Fields(item, path: "\(child(key))[\(index)]"))
    }
    return result
  }

  func rejectUnknown() throws(SimulatedWorld.Error) {
    if let unknown = values.first(where: { !used.contains($0.key) }) {
      throw SimulatedWorld.Error(
        path: child(unknown.key),
        message: "unknown key (known here: \(used.sorted().joined(separator: ", ")))")
    }
  }
}
