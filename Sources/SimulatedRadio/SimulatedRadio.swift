public import BridgeCore
import LoopSupport
import Synchronization

/// An in-process BLE world behind the same ports as BlueZ: adapters, advertising and
/// connectable peripherals (``SimulatedWorld``) for the central role, and simulated centrals
/// that subscribe to the gateway's transfer service for the peripheral role.
///
/// Use it to run the gateway on a machine without Bluetooth (`gatt2mqtt run --radio
/// simulated`), for fast end-to-end tests of the bridge and for benchmarks. Call ``run()``
/// (in a `Service`) to let time pass; port calls are answered at once or after the world's
/// latencies.
///
/// - Important: Events of both ports are delivered in the order the world produced them;
///   each subscriber buffers the newest ``eventBufferSize`` events.
public final class SimulatedRadio: GATTCentral, BLEPeripheral, Sendable {
  /// Events buffered per subscriber.
  public static let eventBufferSize = 65_536

  /// The events of the source with the most in `effects`: each notifying characteristic is a
  /// source, all advertisements one, every other event one of its own.
  static func busiestSource(_ effects: [SimulationEngine.Effect]) -> Int {
    var advertisements = 0
    var others = 0
    var notifications: [GATTCharacteristicID: Int] = [:]
    for effect in effects {
      switch effect {
      case .central(.deviceAppeared), .central(.deviceUpdated): advertisements += 1
      case .central(.notification(let characteristic, _)):
        notifications[characteristic, default: 0] += 1
      default: others = 1
      }
    }
    return max(advertisements, others, notifications.values.max() ?? 0)
  }

  /// What the world did so far.
  public struct Statistics: Sendable, Hashable {
    /// Advertisements reported to the gateway.
    public var advertisements: Int
    /// Notifications sent to the gateway.
    public var notifications: Int
    /// Random addresses replaced.
    public var rotations: Int
    /// Complete texts the simulated centrals received from the gateway.
    public var textsReceivedByCentrals: Int
    /// Notifications from the gateway longer than a central's MTU−3 (must stay 0).
    public var oversizedChunks: Int
    /// Events dropped because a subscriber was too slow.
    public var droppedEvents: Int
    /// Connections the simulated devices accepted.
    public var connections: Int
    /// Writes the simulated devices carried out.
    public var writes: Int

    /// The figures for the gateway's health (`simulation`):
    /// `{"advertisements":…,"notifications":…,"connections":…,"writes":…}`.
    public var json: JSONObject {
      [
        "advertisements": .integer(Int64(advertisements)),
        "notifications": .integer(Int64(notifications)),
        "connections": .integer(Int64(connections)), "writes": .integer(Int64(writes)),
      ]
    }
  }

  private struct State {
    var engine: SimulationEngine
    var notifying = false
  }

  /// The world being simulated.
  public let world: SimulatedWorld
  private let state: Mutex<State>
  private let centralHub = EventHub<CentralEvent>(bufferSize: SimulatedRadio.eventBufferSize)
  private let peripheralHub = EventHub<PeripheralEvent>(
    bufferSize: SimulatedRadio.eventBufferSize)
  private let start = ContinuousClock.now
  /// Turns of the world so far (for tests: whether ``run()`` let time pass at all).
  let turns = Atomic<Int>(0)
  /// The thread ``run()`` lets time pass on, while it runs.
  private let worldThread = Mutex<DeadlineThread?>(nil)

  /// How the world thread paces its deliveries while events come fast (``GatheringPace``),
  /// and when its last turn that delivered any was.
  private let pace: Mutex<(pace: GatheringPace, lastDelivery: Double)>
  /// Whether the world gathers at all (a window above 0): without, no turn counts sources.
  private let gathers: Bool

  /// The most events of one source a window may hold for the world to gather. A source is
  /// one notifying characteristic (one `AcquireNotify` socket) or all advertisements (the
  /// management scanner's socket). BlueZ's readers keep gathering at any rate (after a read of
  /// about 64-70 items they read once more at once); the world instead stops gathering while
  /// one source's window would hold 256 events or more (beyond about 2,500 of its events a
  /// second at the default window), and hands its events over as they fall due, every
  /// ``SimulatedWorld/eventInterval``: at the flat-out rates of the simulated benchmarks,
  /// which no radio reaches, windows of thousands of publications would come in bursts larger
  /// than the MQTT client's in-flight window drains.
  static let sourceLimit = 256

  /// The most events one turn of the world thread hands over (a job's effects all count, so
  /// one job can go beyond): what is due beyond them goes in the next turn, at once.
  static let batchLimit = 1024

  /// Creates the world (nothing happens until ``run()``).
  /// - Parameters:
  ///   - world: what to simulate.
  ///   - gathering: Seconds over which fast events gather (`bluetooth.batch_window`, as
  ///     BlueZ's notification sockets, management scanner and bus connection gather them):
  ///     while the world's events come more than once per interval, the world thread hands
  ///     them over once per interval, each held back at most that long; slower events are
  ///     handed over as they fall due (every ``SimulatedWorld/eventInterval`` at most). One
  ///     pace for the whole world, where the readers pace each socket: a slow source's event
  ///     can wait up to an interval while another source streams. See ``sourceLimit``. `0`:
  ///     every turn at once.
  public init(world: SimulatedWorld, gathering: Double = 0) {
    self.world = world
    state = Mutex(State(engine: SimulationEngine(world: world)))
    pace = Mutex((GatheringPace(interval: gathering, ceiling: Self.batchLimit), -.infinity))
    gathers = gathering > 0
  }

  /// Lets time pass until the task is cancelled: advertisements, notifications, address
  /// rotations, power cycles and the centrals' subscriptions happen as scheduled. Ends every
  /// event stream when it returns.
  ///
  /// The world runs on a thread of its own (`sim-world`), which hands each due batch of
  /// events to the ports' subscribers, as BlueZ's notification sockets are read on a thread of
  /// the central's: the bridge's fast path runs on it, and the simulated benchmarks measure
  /// that path rather than a task's timer.
  public func run() async {
    var started: DeadlineThread?
    do {
      let thread = try DeadlineThread(name: "sim-world") { [self] in turn() }
      // Known before it starts: a port call from now on wakes it (a call between its first
      // turn and this would otherwise leave it waiting for a job it does not know of).
      worldThread.withLock { $0 = thread }
      try thread.start()
      started = thread
    } catch {
      worldThread.withLock { $0 = nil }
    }
    guard let thread = started else {
      // No pipe for the thread's wake-ups (out of descriptors) or no thread: the same turns in
      // this task, at least every 20 ms for jobs scheduled by port calls.
      while !Task.isCancelled {
        try? await Task.sleep(for: .seconds(min(turn() ?? 0.02, max(0.02, world.eventInterval))))
      }
      centralHub.finish()
      peripheralHub.finish()
      return
    }
    await withTaskCancellationHandler {
      await thread.ended()
    } onCancel: {
      thread.stop()
    }
    worldThread.withLock { $0 = nil }
    centralHub.finish()
    peripheralHub.finish()
  }

  /// One turn of the world: delivers what fell due. Returns the seconds until the next job
  /// (at least one event interval, and while events come fast the rest of the gathering
  /// interval: what falls due in between is delivered together), `nil` when none is
  /// scheduled (a port call that schedules one wakes the thread).
  private func turn() -> Double? {
    turns.add(1, ordering: .relaxed)
    let now = elapsed()
    let (delivered, busiest, next) = state.withLock { state in
      let effects = state.engine.advance(to: now, limit: Self.batchLimit)
      deliver(effects)
      return (effects.count, gathers ? Self.busiestSource(effects) : 0, state.engine.nextDue)
    }
    let moreWaiting = next.map { $0 <= now } ?? false
    let gatherUntil = pace.withLock { state -> Double? in
      if delivered > 0 {
        // The events of the busiest source one window would hold at this turn's rate.
        let span = max(world.eventInterval, now - state.lastDelivery)
        let perWindow = Double(busiest) * state.pace.interval / span
        state.lastDelivery = now
        state.pace.record(
          delivered, at: now, moreWaiting: moreWaiting || perWindow >= Double(Self.sourceLimit))
      }
      return state.pace.gathers(at: now) ? state.pace.gatherUntil : nil
    }
    if moreWaiting { return 0 }
    guard let next else { return nil }
    let wait = max(world.eventInterval, next - elapsed())
    guard let gatherUntil else { return wait }
    return max(wait, gatherUntil - elapsed())
  }

  /// What the world did so far.
  public var statistics: Statistics {
    let counters = state.withLock { $0.engine.counters }
    return Statistics(
      advertisements: counters.advertisements, notifications: counters.notifications,
      rotations: counters.rotations, textsReceivedByCentrals: counters.textsReceivedByCentrals,
      oversizedChunks: counters.oversizedChunks,
      droppedEvents: centralHub.dropped + peripheralHub.dropped,
      connections: counters.connections, writes: counters.writes)
  }

  /// Seconds since the radio was created.
  private func elapsed() -> Double {
    (ContinuousClock.now - start).seconds
  }

  /// Hands effects to the ports' subscribers (called under the state lock, so events keep
  /// the world's order).
  private func deliver(_ effects: [SimulationEngine.Effect]) {
    guard !effects.isEmpty else { return }
    var central: [CentralEvent] = []
    var peripheral: [PeripheralEvent] = []
    for effect in effects {
      switch effect {
      case .central(let event): central.append(event)
      case .peripheral(let event): peripheral.append(event)
      }
    }
    centralHub.yield(contentsOf: central)
    peripheralHub.yield(contentsOf: peripheral)
  }

  /// Runs `body` on the engine at the current time and delivers its effects.
  func update<T>(
    _ body: (inout SimulationEngine) throws(CentralError) -> (T, [SimulationEngine.Effect])
  ) throws(CentralError) -> T {
    let result: Result<T, CentralError> = state.withLock { state in
      deliver(state.engine.advance(to: elapsed()))
      do throws(CentralError) {
        let (value, effects) = try body(&state.engine)
        deliver(effects)
        return .success(value)
      } catch {
        return .failure(error)
      }
    }
    // The call may have scheduled a job sooner than the world thread's wait ends.
    worldThread.withLock { $0 }?.wake()
    return try result.get()
  }

  /// Runs `body` on the engine at the current time and delivers its effects.
  func update(_ body: (inout SimulationEngine) throws(CentralError) -> [SimulationEngine.Effect])
    throws(CentralError)
  {
    try update {
      (engine: inout SimulationEngine) throws(CentralError) -> ((), [SimulationEngine.Effect]) in
      ((), try body(&engine))
    }
  }

  /// Sleeps `seconds` of simulated latency (none when 0).
  func pause(_ seconds: Double) async {
    guard seconds > 0 else { return }
    try? await Task.sleep(for: .seconds(seconds))
  }

  // MARK: BLECentral

  /// Events of the central ports from now on.
  /// - Returns: A stream of adapter, device, connection and GATT events.
  public func attach(_ sink: EventSink<CentralEvent>) -> EventSubscription {
    centralHub.attach(sink)
  }

  /// A new subscription to the peripheral port's events.
  func peripheralHubStream() -> AsyncStream<PeripheralEvent> { peripheralHub.subscribe() }

  /// The simulated adapters.
  /// - Returns: Their current state.
  public func adapters() async throws(CentralError) -> [AdapterInfo] {
    state.withLock { $0.engine.adapters }
  }

  /// Starts discovery; advertisements that pass `filter` are reported from now on.
  /// - Parameters:
  ///   - adapter: the adapter's id.
  ///   - filter: service UUIDs and RSSI floor.
  /// - Throws: `unknown_adapter`, `powered_off`.
  public func startDiscovery(adapter: String, filter: DiscoveryFilter) async throws(CentralError) {
    try update { (engine: inout SimulationEngine) throws(CentralError) in
      try engine.startDiscovery(adapter: adapter, filter: filter)
    }
  }

  /// Stops discovery.
  /// - Parameter adapter: the adapter's id.
  /// - Throws: `unknown_adapter`.
  public func stopDiscovery(adapter: String) async throws(CentralError) {
    try update { (engine: inout SimulationEngine) throws(CentralError) in
      try engine.stopDiscovery(adapter: adapter)
    }
  }

  /// Powers an adapter on or off.
  /// - Parameters:
  ///   - adapter: the adapter's id.
  ///   - on: the new state.
  /// - Throws: `unknown_adapter`.
  public func setPowered(adapter: String, _ on: Bool) async throws(CentralError) {
    try update { (engine: inout SimulationEngine) throws(CentralError) in
      try engine.setPowered(adapter: adapter, on)
    }
  }
}

extension SimulatedRadio: LinkQualityReader {
  /// A connected simulated device's link: its RSSI as last advertised or reported.
  public func linkQuality(
    of address: BluetoothAddress, type: Advertisement.AddressType, adapter: String
  ) async throws(CentralError) -> LinkQuality {
    try state.withLock { state throws(CentralError) in try state.engine.linkQuality(of: address) }
  }
}

extension SimulatedRadio {
  /// The devices' first addresses by name (the same in every run of the same world: tests and
  /// configurations can name them in advance).
  public var addressesByName: [String: BluetoothAddress] {
    state.withLock { state in
      Dictionary(
        state.engine.devices.map { ($0.name, $0.address) }, uniquingKeysWith: { first, _ in first })
    }
  }
}
