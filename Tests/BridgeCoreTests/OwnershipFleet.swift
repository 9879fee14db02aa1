import BridgeCore

/// Several ``OwnershipArbiter``s on one simulated broker: retained topics, one global order of
/// delivery to every subscriber (as one mosquitto gives), last wills.
struct OwnershipFleet {
  struct Member {
    var arbiter: OwnershipArbiter
    var instance: GatewayInstance
    var alive = true
    var gained: [BluetoothAddress: Int] = [:]
    var lost: [BluetoothAddress: Int] = [:]
  }

  let base = "t"
  var members: [Member] = []
  var retained: [String: [UInt8]] = [:]
  var queue: [(topic: String, payload: [UInt8])] = []
  /// Every claim publication, in order.
  var claims: [(topic: String, payload: [UInt8])] = []
  var invalidClaims = 0
  /// Whether the devices want a connection (as `bluetooth.connect` says for them).
  var wantsConnection = false

  init(
    gateways: [String], configuration: OwnershipArbiter.Configuration = .init(),
    freeSlots: Int = 5
  ) {
    for (index, name) in gateways.enumerated() {
      let topics = try! Topics(base: base, gateway: GatewayID(name))
      let instance = GatewayInstance(id: "run\(index)", started: Double(index))
      members.append(
        Member(
          arbiter: OwnershipArbiter(
            topics: topics, instance: instance.id, freeSlots: freeSlots,
            configuration: configuration),
          instance: instance))
    }
  }

  func topics(_ index: Int) -> Topics { members[index].arbiter.topics }

  /// Starts gateway `index`: it subscribes (and gets every retained message), then publishes
  /// its `online` state.
  mutating func start(_ index: Int, now: Double) {
    members[index].alive = true
    for (topic, payload) in retained.sorted(by: { $0.key < $1.key }) {
      route(index, topic, payload, now: now)
    }
    publish(topics(index).bridgeState.rawValue, members[index].instance.statePayload(online: true))
    deliver(now: now)
  }

  /// Kills gateway `index`: its last will says `offline`.
  mutating func kill(_ index: Int, now: Double) {
    members[index].alive = false
    publish(topics(index).bridgeState.rawValue, members[index].instance.statePayload(online: false))
    deliver(now: now)
  }

  /// Restarts gateway `index` as a new run (new instance, new arbiter).
  mutating func restart(_ index: Int, now: Double, configuration: OwnershipArbiter.Configuration) {
    let topics = topics(index)
    let instance = GatewayInstance(id: "run\(index)-\(Int(now))", started: now)
    members[index].arbiter = OwnershipArbiter(
      topics: topics, instance: instance.id, freeSlots: members[index].arbiter.freeSlots,
      configuration: configuration)
    members[index].instance = instance
    start(index, now: now)
  }

  mutating func publish(_ topic: String, _ payload: [UInt8]) {
    queue.append((topic, payload))
  }

  /// Delivers every queued message, in order, to every live gateway (their answers too).
  mutating func deliver(now: Double) {
    while !queue.isEmpty {
      let message = queue.removeFirst()
      if message.payload.isEmpty {
        retained[message.topic] = nil
      } else {
        retained[message.topic] = message.payload
      }
      for index in members.indices where members[index].alive {
        route(index, message.topic, message.payload, now: now)
      }
    }
  }

  mutating func observe(_ index: Int, _ address: BluetoothAddress, rssi: Int, now: Double) {
    guard members[index].alive else { return }
    let outputs = members[index].arbiter.observed(
      address, rssi: rssi, wantsConnection: wantsConnection, now: now)
    take(index, outputs)
    deliver(now: now)
  }

  mutating func tick(now: Double) {
    for index in members.indices where members[index].alive {
      take(index, members[index].arbiter.tick(now: now))
    }
    deliver(now: now)
  }

  /// The live gateways that own `address`.
  func owners(of address: BluetoothAddress) -> [Int] {
    members.indices.filter { members[$0].alive && members[$0].arbiter.owns(address) }
  }

  private mutating func route(_ index: Int, _ topic: String, _ payload: [UInt8], now: Double) {
    switch topics(index).parseFleet(topic) {
    case .owner(let address):
      take(index, members[index].arbiter.claimReceived(address, payload: payload, now: now))
    case .state(let gateway):
      take(index, members[index].arbiter.stateReceived(gateway, payload: payload, now: now))
    case .name, nil:
      break
    }
  }

  private mutating func take(_ index: Int, _ outputs: [OwnershipArbiter.Output]) {
    for output in outputs {
      switch output {
      case .publish(let topic, let payload):
        queue.append((topic.rawValue, payload))
        claims.append((topic.rawValue, payload))
      case .gained(let address, _, _): members[index].gained[address, default: 0] += 1
      case .lost(let address, _, _): members[index].lost[address, default: 0] += 1
      case .invalidClaim: invalidClaims += 1
      case .resumed, .peersFull: break
      }
    }
  }
}
