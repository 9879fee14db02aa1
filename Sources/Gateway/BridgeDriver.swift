import BridgeCore
import Logging
import Mosquitto
import Synchronization

/// What the driver does with one output of a bridge.
enum DriverAction<Command: Sendable>: Sendable {
  /// Hand the message to the MQTT client's (bounded) queue, at once.
  case publish(MQTTMessage)
  /// Publish retained state that the client re-publishes after every reconnect (and does not
  /// queue while disconnected).
  case state(MQTTMessage)
  /// A radio call, carried out by ``BridgeDriver/runCommands(perform:)`` off the publishing
  /// path, in its lane.
  case command(Command, CommandLane)
  /// Nothing (an output that cannot be carried out; the bridge already reported why).
  case none
}

/// How the driver carries out a radio command.
enum CommandLane: Sendable {
  /// One at a time, in order (discovery start/stop, read-value updates).
  case serial
  /// Each in its own child task, at once (connections and GATT operations, whose number the
  /// bridge bounds).
  case concurrent
}

/// A pure bridge the ``BridgeDriver`` runs.
protocol DrivenBridge: Sendable {
  /// What the bridge asks for.
  associatedtype Output: Sendable
  /// The radio calls among its outputs.
  associatedtype Command: Sendable

  /// How the driver carries out one output; `qos` is the configured QoS of non-retained
  /// publications (`mqtt.qos`).
  static func action(for output: Output, qos: MQTTQoS) -> DriverAction<Command>

  /// Lets time pass (timers, retries, periodic publications).
  ///
  /// - Parameters:
  ///   - now: Monotonic time (``BridgeClock/now()``).
  ///   - wallClockOffset: What to add to `now` for the timestamps in payloads.
  /// - Returns: What to carry out.
  mutating func tick(now: Double, wallClockOffset: Double) -> [Output]
}

/// The one loop every bridge runs in: it feeds a pure bridge its events, requests and ticks,
/// and carries out what the bridge returns.
///
/// - **Publications never wait for the radio.** Each step's publications are handed to the
///   MQTT client in order while the bridge's lock is held (so the order of steps is the order
///   on the wire); the client's offline queue is the bounded queue, and what it drops is
///   counted in `health` (`mqtt.dropped`).
/// - **Radio calls run off the publishing path**: they wait, at most ``commandLimit`` of them,
///   for ``runCommands(perform:)``, which carries them out by ``CommandLane``: one at a time in
///   order (discovery start/stop) or each in its own child task (connections and GATT
///   operations, whose number the bridge already bounds). A command over the limit is dropped,
///   counted in ``droppedCommands`` and logged: it means a bridge asked for more than it
///   should, never that MQTT traffic was held back.
/// - **Time is monotonic** (``BridgeClock``): a wall-clock jump fires no timer.
final class BridgeDriver<Bridge: DrivenBridge>: Sendable {
  /// The clock the bridge runs on.
  let clock: BridgeClock
  /// The most commands waiting to be carried out.
  let commandLimit: Int

  private let bridge: Mutex<Bridge>
  private let client: MQTTClient
  private let qos: MQTTQoS
  private let logger: Logger
  private let serial: AsyncStream<Bridge.Command>
  private let serialSink: AsyncStream<Bridge.Command>.Continuation
  private let concurrent: AsyncStream<Bridge.Command>
  private let concurrentSink: AsyncStream<Bridge.Command>.Continuation
  private let waiting = Atomic<Int>(0)
  private let dropped = Atomic<UInt64>(0)

  /// Makes a driver.
  ///
  /// - Parameters:
  ///   - bridge: The configured bridge.
  ///   - clock: The clock it runs on.
  ///   - client: Where publications go.
  ///   - qos: The QoS of non-retained publications.
  ///   - commandLimit: The most commands waiting to be carried out.
  ///   - logger: Where dropped commands are logged.
  init(
    bridge: Bridge, clock: BridgeClock, client: MQTTClient, qos: MQTTQoS,
    commandLimit: Int = 1024, logger: Logger
  ) {
    self.bridge = Mutex(bridge)
    self.clock = clock
    self.client = client
    self.qos = qos
    self.commandLimit = max(1, commandLimit)
    self.logger = logger
    (serial, serialSink) = AsyncStream.makeStream(of: Bridge.Command.self)
    (concurrent, concurrentSink) = AsyncStream.makeStream(of: Bridge.Command.self)
  }

  /// Commands dropped because ``commandLimit`` were already waiting.
  var droppedCommands: UInt64 { dropped.load(ordering: .relaxed) }

  /// Commands waiting to be carried out.
  var waitingCommands: Int { waiting.load(ordering: .relaxed) }

  /// Runs one step of the bridge at the current time and carries out its outputs.
  ///
  /// - Parameter step: What to do with the bridge, given the time; returns the outputs and a
  ///   result for the caller.
  /// - Returns: The step's result.
  func feed<Result>(_ step: (inout Bridge, Double) -> ([Bridge.Output], Result)) -> Result {
    let now = clock.now()
    return bridge.withLock { bridge in
      let (outputs, result) = step(&bridge, now)
      for output in outputs { carryOut(output) }
      return result
    }
  }

  /// Runs one step of the bridge at the current time and carries out its outputs.
  ///
  /// - Parameter step: What to do with the bridge, given the time.
  func feed(_ step: (inout Bridge, Double) -> [Bridge.Output]) {
    feed { bridge, now in (step(&bridge, now), ()) }
  }

  /// Reads the bridge's state.
  ///
  /// - Parameter body: What to read.
  /// - Returns: What `body` returned.
  func read<Result>(_ body: (Bridge) -> Result) -> Result {
    bridge.withLock { body($0) }
  }

  /// Lets time pass once: refreshes the bridge's wall-clock offset and carries out what its
  /// timers produce.
  func tick() {
    let offset = clock.wallClockOffset()
    feed { bridge, now in bridge.tick(now: now, wallClockOffset: offset) }
  }

  /// Ticks every `interval` until the task is cancelled.
  ///
  /// - Parameters:
  ///   - interval: The time between two ticks.
  ///   - extra: Called after each tick (for example retries the service keeps).
  func runTicks(every interval: Duration, extra: () -> Void = {}) async {
    while !Task.isCancelled {
      tick()
      extra()
      try? await Task.sleep(for: interval)
    }
  }

  /// Feeds every element of `events` to the bridge until the sequence ends or the task is
  /// cancelled.
  ///
  /// - Parameters:
  ///   - events: The events.
  ///   - handle: What the bridge does with one event at a time.
  func consume<Events: AsyncSequence>(
    _ events: Events, _ handle: (inout Bridge, Events.Element, Double) -> [Bridge.Output]
  ) async where Events.Element: Sendable {
    do {
      for try await event in events {
        if Task.isCancelled { return }
        feed { bridge, now in handle(&bridge, event, now) }
      }
    } catch {
      logger.error("an event stream failed: \(error)")
    }
  }

  /// Carries out commands until the task is cancelled: the serial lane one at a time in order,
  /// the concurrent lane each in a child task.
  ///
  /// - Parameter perform: The radio call; it feeds its outcome back through ``feed(_:)``.
  func runCommands(perform: @escaping @Sendable (Bridge.Command) async -> Void) async {
    await withDiscardingTaskGroup { group in
      group.addTask {
        for await command in self.serial {
          self.waiting.subtract(1, ordering: .relaxed)
          await perform(command)
          if Task.isCancelled { break }
        }
      }
      for await command in concurrent {
        waiting.subtract(1, ordering: .relaxed)
        group.addTask { await perform(command) }
        if Task.isCancelled { break }
      }
      group.cancelAll()
    }
  }

  /// Queues a command as if the bridge had asked for it (for work the service schedules
  /// itself, such as retries).
  ///
  /// - Parameters:
  ///   - command: The command.
  ///   - lane: How it is carried out.
  func enqueue(_ command: Bridge.Command, lane: CommandLane) {
    let count = waiting.add(1, ordering: .relaxed).newValue
    guard count <= commandLimit else {
      waiting.subtract(1, ordering: .relaxed)
      let total = dropped.add(1, ordering: .relaxed).newValue
      logger.error(
        "radio command dropped: \(commandLimit) already waiting (\(total) dropped so far)")
      return
    }
    switch lane {
    case .serial: serialSink.yield(command)
    case .concurrent: concurrentSink.yield(command)
    }
  }

  /// Ends ``runCommands(perform:)`` once the commands already queued are handed out.
  func finish() {
    serialSink.finish()
    concurrentSink.finish()
  }

  private func carryOut(_ output: Bridge.Output) {
    switch Bridge.action(for: output, qos: qos) {
    case .publish(let message): client.enqueue(message)
    case .state(let message): client.setRetainedState(message)
    case .command(let command, let lane): enqueue(command, lane: lane)
    case .none: break
    }
  }
}
