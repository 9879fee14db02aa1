import BridgeCore
import Logging
import LoopSupport
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
  /// Hand these to the MQTT client in order (claims published once, retained state
  /// forgotten).
  case handOffs([MQTTHandOff])
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
      var messages: [MQTTHandOff] = []
      for output in outputs {
        switch Bridge.action(for: output, qos: qos) {
        case .publish(let message): messages.append(.enqueue(message))
        case .state(let message): messages.append(.retainedState(message))
        case .command(let command, let lane): enqueue(command, lane: lane)
        case .handOffs(let handOffs): messages += handOffs
        case .none: break
        }
      }
      // One hand-off (one wake-up of the MQTT loop) per step, in the order of the steps.
      if !messages.isEmpty { client.send(messages) }
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

  /// Ticks every `interval` until the task is cancelled, on a thread of its own
  /// (`LoopSupport.DeadlineThread`, named `thread`): one wake-up of that thread per tick. A
  /// `Task.sleep` loop cost about five context switches per tick (a timer on libdispatch's
  /// manager thread, its wake-up, the hand-off to a pool thread; `Benchmarks/simulated idle`:
  /// 7.0 wake-ups a second of an idle gateway, 5 of them the central role's tick). Without a
  /// thread (none to be had) it ticks from the task as before.
  ///
  /// - Parameters:
  ///   - interval: The time between two ticks.
  ///   - thread: The ticking thread's name (in `top -H`, `perf`).
  ///   - extra: Called after each tick (for example retries the service keeps).
  func runTicks(
    every interval: Duration, thread: String = "bridge-tick",
    extra: @escaping @Sendable () -> Void = {}
  ) async {
    let seconds = interval.seconds
    let ticker: DeadlineThread
    do throws(LoopError) {
      ticker = try DeadlineThread(name: thread) { [self] in
        tick()
        extra()
        return seconds
      }
      // Cancelled already: no tick (the handler below stops it before it would start).
      if !Task.isCancelled { try ticker.start() }
    } catch {
      logger.warning("no thread for the bridge's ticks (\(error)); ticking from a task")
      while !Task.isCancelled {
        tick()
        extra()
        try? await Task.sleep(for: interval)
      }
      return
    }
    await withTaskCancellationHandler {
      await ticker.ended()
    } onCancel: {
      ticker.stop()
    }
  }

  /// Feeds a producer's events to the bridge on the producer's thread, one step per batch,
  /// until the producer finishes or the task is cancelled: the fast path, with no task or
  /// thread hop between a radio and the MQTT client's mailbox.
  ///
  /// Attaches first, then runs `prime` (a snapshot, such as the adapters the stack knows now),
  /// and holds the events that arrive meanwhile back until the snapshot's have been fed, so
  /// that nothing falls between the two and nothing older overtakes something newer.
  ///
  /// - Parameters:
  ///   - attach: Attaches a sink to the producer.
  ///   - prime: The snapshot, fed before any event.
  ///   - handle: What the bridge does with one event.
  func follow<Event: Sendable>(
    _ attach: (EventSink<Event>) -> EventSubscription,
    prime: () async -> [Event],
    _ handle: @escaping @Sendable (inout Bridge, Event, Double) -> [Bridge.Output]
  ) async {
    // `nil` once the snapshot is in; the lock also keeps batches in order at that moment.
    let held = HeldEvents<Event>()
    let (ended, end) = AsyncStream.makeStream(of: Void.self)
    let step: @Sendable ([Event]) -> Void = { [self] batch in
      feed { bridge, now in
        var outputs: [Bridge.Output] = []
        for event in batch { outputs += handle(&bridge, event, now) }
        return outputs
      }
    }
    let subscription = attach(
      EventSink(
        receive: { batch in
          held.events.withLock { held in
            if held != nil { held!.append(contentsOf: batch) } else { step(batch) }
          }
        },
        finish: { end.finish() }))
    let snapshot = await prime()
    held.events.withLock { held in
      step(snapshot + (held ?? []))
      held = nil
    }
    for await _ in ended {}  // until the producer finishes or the task is cancelled
    subscription.cancel()
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

}

/// Events a ``BridgeDriver/follow(_:prime:_:)`` holds back until its snapshot is in.
private final class HeldEvents<Event: Sendable>: Sendable {
  let events = Mutex<[Event]?>([])
}
