import BridgeCore
import Foundation
import Mosquitto
import Synchronization
import TestSupport
import Testing

@testable import Gateway

/// A central whose `StartDiscovery` never answers (bluetoothd busy, or a D-Bus call stuck).
private final class StuckDiscoveryCentral: BLECentral {
  let startCalls = Atomic<Int>(0)
  private let stream: AsyncStream<CentralEvent>
  private let continuation: AsyncStream<CentralEvent>.Continuation

  init() { (stream, continuation) = AsyncStream.makeStream() }

  func attach(_ sink: EventSink<CentralEvent>) -> EventSubscription { stream.pump(into: sink) }
  func emit(_ event: CentralEvent) { continuation.yield(event) }
  func adapters() async throws(CentralError) -> [AdapterInfo] {
    [AdapterInfo(id: "hci0", powered: true)]
  }
  func startDiscovery(adapter: String, filter: DiscoveryFilter) async throws(CentralError) {
    startCalls.add(1, ordering: .relaxed)
    try? await Task.sleep(for: .seconds(3600))
  }
  func stopDiscovery(adapter: String) async throws(CentralError) {}
  func setPowered(adapter: String, _ on: Bool) async throws(CentralError) {}
  func removeDevice(_ address: BluetoothAddress) async throws(CentralError) {}
}

/// A bridge that publishes one message per event and asks for one radio command per event.
private struct EchoBridge: DrivenBridge {
  var ticks = 0
  var offsets: [Double] = []
  /// The names of the threads the ticks ran on.
  var tickThreads: [String] = []
  /// Events fed by ``BridgeDriver/follow(_:prime:_:)``, by step.
  var steps: [[String]] = []

  static func action(for output: String, qos: MQTTQoS) -> DriverAction<String> {
    output.hasPrefix("cmd:")
      ? .command(output, .serial) : .publish(MQTTMessage(topic: output, payload: [], qos: qos))
  }

  mutating func tick(now: Double, wallClockOffset: Double) -> [String] {
    ticks += 1
    offsets.append(wallClockOffset)
    tickThreads.append(currentThreadName())
    return []
  }
}

/// The calling thread's name (`/proc/thread-self/comm`).
private func currentThreadName() -> String {
  ((try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? "")
    .trimmingCharacters(in: .whitespacesAndNewlines)
}

/// Both clocks of a ``BridgeClock`` under the test's control.
private final class FakeTime: Sendable {
  let monotonic = Mutex(1000.0)
  let wall = Mutex(1_700_000_000.0)

  var clock: BridgeClock {
    BridgeClock(
      monotonic: { self.monotonic.withLock { $0 } }, wall: { self.wall.withLock { $0 } })
  }

  func advance(_ seconds: Double) {
    monotonic.withLock { $0 += seconds }
    wall.withLock { $0 += seconds }
  }

  func jumpWall(_ seconds: Double) { wall.withLock { $0 += seconds } }
}

@Suite("Bridge driver: publications never wait for the radio; bounded command queue")
struct BridgeDriverTests {
  @Test("a StartDiscovery that never answers does not hold back advertisements")
  func stuckDiscoveryDoesNotDelayAdvertisements() async throws {
    let broker = try Broker()
    try await broker.start()
    defer { broker.stop() }
    let topics = try Topics(gateway: GatewayID("test"))
    let client = try await connectedClient(configuration(broker))
    defer { Task { await client.shutdown(finalMessages: [], timeout: 1) } }
    let observer = try await connectedClient(configuration(broker))
    let collector = Collector(observer)
    try await observer.subscribe("gatt2mqtt/+/advertisement", qos: .atLeastOnce)

    let central = StuckDiscoveryCentral()
    let service = CentralRoleService(
      central: central, discovery: DiscoveryBridge(topics: topics),
      gatt: GATTBridge(topics: topics), client: client, qos: .atLeastOnce,
      logger: quietLogger("discovery"))
    let running = Task { await service.run() }
    defer { running.cancel() }
    // Scanning starts at once (scan_on_start) and hangs.
    #expect(await eventually(timeout: 5) { central.startCalls.load(ordering: .relaxed) == 1 })

    let address = try BluetoothAddress("A4:C1:38:1E:29:DF")
    central.emit(.deviceAppeared(Advertisement(address: address, rssi: -60)))
    let topic = topics.advertisement(DeviceID(address: address)).rawValue
    #expect(await eventually(timeout: 5) { collector.count(topic: topic) == 1 })
  }

  @Test("commands over the limit are dropped and counted; publications still go out")
  func boundedCommandQueue() async throws {
    let broker = try Broker()
    try await broker.start()
    defer { broker.stop() }
    let client = try await connectedClient(configuration(broker))
    defer { Task { await client.shutdown(finalMessages: [], timeout: 1) } }
    let observer = try await connectedClient(configuration(broker))
    let collector = Collector(observer)
    try await observer.subscribe("echo/#", qos: .atLeastOnce)

    let driver = BridgeDriver(
      bridge: EchoBridge(), clock: .system, client: client, qos: .atLeastOnce, commandLimit: 3,
      logger: quietLogger("driver"))
    let started = Atomic<Int>(0)
    let worker = Task {
      await driver.runCommands { _ in
        started.add(1, ordering: .relaxed)
        try? await Task.sleep(for: .seconds(3600))  // a radio call that never returns
      }
    }
    defer { worker.cancel() }
    driver.feed { _, _ in ["cmd:0"] }
    #expect(await eventually(timeout: 5) { started.load(ordering: .relaxed) == 1 })
    for index in 1...5 { driver.feed { _, _ in ["echo/\(index)", "cmd:\(index)"] } }

    #expect(driver.waitingCommands == 3)
    #expect(driver.droppedCommands == 2)
    #expect(await eventually(timeout: 5) { collector.messages.count == 5 })
    #expect(collector.messages.map(\.topic) == (1...5).map { "echo/\($0)" })
  }

  @Test("follow: events before the snapshot wait for it; each batch is fed in one step, in order")
  func followHoldsUntilSnapshot() async throws {
    let client = try MQTTClient(
      configuration: MQTTClientConfiguration(host: "127.0.0.1", port: 1, clientID: "unused"),
      logger: quietLogger("unused"))
    let driver = BridgeDriver(
      bridge: EchoBridge(), clock: .system, client: client, qos: .atMostOnce,
      logger: quietLogger("driver"))
    let hub = EventHub<String>(bufferSize: 1)
    let (gate, open) = AsyncStream.makeStream(of: Void.self)
    let priming = Atomic<Bool>(false)
    let following = Task {
      await driver.follow(
        { hub.attach($0) },
        prime: {
          priming.store(true, ordering: .relaxed)
          for await _ in gate { break }
          return ["snapshot"]
        },
        { bridge, event, _ in
          if bridge.steps.isEmpty || bridge.steps[bridge.steps.count - 1].last == "end" {
            bridge.steps.append([])
          }
          bridge.steps[bridge.steps.count - 1].append(event)
          return []
        })
    }
    defer { following.cancel() }
    #expect(await eventually(timeout: 5) { priming.load(ordering: .relaxed) })
    // Batches that arrive while the snapshot is being taken are held, not fed.
    hub.yield(contentsOf: ["a", "b"])
    hub.yield(contentsOf: ["c", "end"])
    #expect(driver.read { $0.steps }.isEmpty)
    open.yield()
    #expect(await eventually(timeout: 5) { !driver.read { $0.steps }.isEmpty })
    // The snapshot first, then what was held, in one step.
    #expect(driver.read { $0.steps } == [["snapshot", "a", "b", "c", "end"]])
    // Afterwards each batch is one step, fed on the producer's thread before yield returns.
    hub.yield(contentsOf: ["d", "e", "end"])
    hub.yield(contentsOf: ["f", "end"])
    #expect(
      driver.read { $0.steps } == [
        ["snapshot", "a", "b", "c", "end"], ["d", "e", "end"], ["f", "end"],
      ])
    // The producer's end ends `follow`.
    hub.finish()
    await following.value
  }

  @Test("the clock: a wall-clock jump of +1 h or -1 h moves timestamps, not time")
  func clockIgnoresWallJumps() {
    let time = FakeTime()
    let clock = time.clock
    let start = clock.now()
    #expect(start == 1_700_000_000)
    #expect(clock.wallClockOffset() == 0)
    time.advance(10)
    time.jumpWall(3600)
    #expect(clock.now() == start + 10)
    #expect(clock.wallClockOffset() == 3600)
    time.jumpWall(-7200)
    #expect(clock.now() == start + 10)
    #expect(clock.wallClockOffset() == -3600)
  }

  @Test("ticks refresh the bridge's wall-clock offset")
  func ticksRefreshOffset() throws {
    let time = FakeTime()
    let client = try MQTTClient(
      configuration: MQTTClientConfiguration(host: "127.0.0.1", port: 1, clientID: "unused"),
      logger: quietLogger("unused"))
    let driver = BridgeDriver(
      bridge: EchoBridge(), clock: time.clock, client: client, qos: .atMostOnce,
      logger: quietLogger("driver"))
    driver.tick()
    time.jumpWall(3600)
    driver.tick()
    #expect(driver.read { $0.offsets } == [0, 3600])
  }

  @Test("ticks run on a thread of their own at the interval, and stop with the task")
  func ticksOnTheirOwnThread() async throws {
    let client = try MQTTClient(
      configuration: MQTTClientConfiguration(host: "127.0.0.1", port: 1, clientID: "unused"),
      logger: quietLogger("unused"))
    let driver = BridgeDriver(
      bridge: EchoBridge(), clock: .system, client: client, qos: .atMostOnce,
      logger: quietLogger("driver"))
    let extras = Atomic<Int>(0)
    let ticking = Task {
      await driver.runTicks(every: .milliseconds(50), thread: "test-tick") {
        extras.add(1, ordering: .relaxed)
      }
    }
    // Generous: the ticking task itself waits for a thread of the concurrency pool, which
    // other suites running alongside can keep busy for seconds on two cores.
    #expect(await eventually(timeout: 30) { driver.read { $0.ticks } >= 5 })
    ticking.cancel()
    await ticking.value
    let ticks = driver.read { $0.ticks }
    // A Task.sleep loop ticks on the pool's threads.
    #expect(Set(driver.read { $0.tickThreads }) == ["test-tick"])
    #expect(extras.load(ordering: .relaxed) == ticks)
    try await Task.sleep(for: .milliseconds(200))
    #expect(driver.read { $0.ticks } == ticks, "ticked after the task ended")
  }

  @Test(
    "a clock jump of ±1 h changes no timer: no device goes offline, no retry fires early",
    arguments: [3600.0, -3600.0])
  func clockJumpChangesNoTimer(jump: Double) throws {
    let time = FakeTime()
    let clock = time.clock
    let topics = try Topics(gateway: GatewayID("test"))
    let address = try BluetoothAddress("A4:C1:38:1E:29:DF")
    let device = DeviceID(address: address)

    // One central bridge: discovery (offline after 90 s unseen) and a connection policy.
    var bridge = CentralBridge(
      discovery: DiscoveryBridge(topics: topics, configuration: .init(devicesInterval: 0)),
      gatt: GATTBridge(
        topics: topics, configuration: .init(policy: ConnectionPolicy(addresses: [address]))))
    func tick() -> [CentralBridge.Output] {
      bridge.tick(now: clock.now(), wallClockOffset: clock.wallClockOffset())
    }
    func connects(_ outputs: [CentralBridge.Output]) -> Bool {
      outputs.contains { if case .gatt(.connect) = $0 { true } else { false } }
    }
    #expect(connects(tick()))
    let seenAt = time.wall.withLock { $0 }
    _ = bridge.handle(.deviceAppeared(Advertisement(address: address, rssi: -60)), now: clock.now())
    // The attempt fails: a retry after retry_min_delay (2 s), whatever the wall clock does.
    _ = bridge.connections(now: clock.now()) {
      $0.connectFinished(
        address, error: CentralError(.timeout, message: "no answer"), now: clock.now())
    }
    time.advance(1)
    time.jumpWall(jump)
    let outputs = tick()
    #expect(!connects(outputs))
    let offline = outputs.contains {
      if case .discovery(.publish(let topic, _, _)) = $0 {
        return topic == topics.availability(device)
      }
      return false
    }
    #expect(!offline)
    #expect(bridge.discovery.registry[address]?.online == true)
    // The devices list carries last_seen in today's wall time: the sighting, seen through the
    // jumped clock.
    let list = outputs.compactMap { output -> JSONValue? in
      guard case .discovery(.publish(let topic, let payload, _)) = output,
        topic == topics.bridgeDevices
      else { return nil }
      return try? JSONValue.parse(payload)
    }.first
    let entry: JSONValue? = list?.arrayValue?.first
    #expect(entry?["last_seen"] == .integer(Int64(((seenAt + jump) * 1000).rounded())))
    time.advance(1)
    #expect(connects(tick()))
  }
}
