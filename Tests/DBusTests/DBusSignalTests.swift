import BusTestSupport
import DBus
import Testing

/// The next element of `stream`, or nil when none arrives within `timeout`.
func next<S: AsyncSequence & Sendable>(
  _ stream: S, within timeout: Duration = .seconds(5)
) async -> S.Element? where S.Element: Sendable {
  await withTaskGroup(of: S.Element?.self) { group in
    group.addTask {
      var iterator = stream.makeAsyncIterator()
      return try? await iterator.next()
    }
    group.addTask {
      try? await Task.sleep(for: timeout)
      return nil
    }
    let first = await group.next() ?? nil
    group.cancelAll()
    return first
  }
}

@Suite(
  "D-Bus signal subscriptions",
  .enabled(if: PrivateBus.isAvailable, "dbus-daemon is not installed (apt-get install dbus)"),
  .timeLimit(.minutes(1)))
struct DBusSignalTests {
  @Test(
    "a peer's signals and replies are numbered in the order it sent them: a snapshot's reply sorts what came before it from what came after"
  )
  func serialsOrderSignalsAgainstAReply() async throws {
    try await PrivateBus.with { bus in
      let server = try await bus.connect()
      try await server.export(TestService.object(), at: TestService.path)
      let client = try await bus.connect()
      let signals = try await client.signals(
        matching: DBusMatchRule(interface: "com.example.Order"))
      var received = signals.makeAsyncIterator()
      try await server.emitSignal(path: "/o", interface: "com.example.Order", member: "Before")
      let (values, replySerial) = try await client.orderedCall(
        destination: server.uniqueName, path: TestService.path,
        interface: TestService.interface, member: "Echo", arguments: [.variant(.string("x"))])
      try await server.emitSignal(path: "/o", interface: "com.example.Order", member: "After")
      #expect(values == [.variant(.string("x"))])
      let before = try #require(await received.next())
      let after = try #require(await received.next())
      #expect(before.member == "Before" && after.member == "After")
      #expect(before.serial != 0 && replySerial != 0)
      #expect(DBusSerial.isAfter(replySerial, before.serial))
      #expect(DBusSerial.isAfter(after.serial, replySerial))
      // Equality leaves the serial out.
      var copy = before
      copy.serial = before.serial &+ 1
      #expect(copy == before)
    }
  }

  @Test("serials wrap around: the nearer way round decides")
  func serialsWrapAround() {
    #expect(DBusSerial.isAfter(2, 1))
    #expect(!DBusSerial.isAfter(1, 2))
    #expect(!DBusSerial.isAfter(5, 5))
    #expect(DBusSerial.isAfter(3, UInt32.max - 2))
    #expect(!DBusSerial.isAfter(UInt32.max - 2, 3))
    // Half the range apart is the limit: further than that reads as before.
    let x: UInt32 = 1_000
    #expect(DBusSerial.isAfter(x &+ 0x7FFF_FFFF, x))
    #expect(!DBusSerial.isAfter(x &+ 0x8000_0000, x))
  }

  @Test("a subscription receives only the signals its rule matches")
  func ruleFiltersSignals() async throws {
    try await PrivateBus.with { bus in
      let emitter = try await bus.connect()
      let listener = try await bus.connect()
      let pings = try await listener.signals(
        matching: DBusMatchRule(
          interface: "com.example.Test", member: "Ping", pathNamespace: "/com/example",
          arguments: [0: "yes"]))
      let everything = try await listener.signals(
        matching: DBusMatchRule(interface: "com.example.Test"))
      try await emitter.emitSignal(
        path: "/other", interface: "com.example.Test", member: "Ping", arguments: [.string("yes")])
      try await emitter.emitSignal(
        path: "/com/example/a", interface: "com.example.Test", member: "Ping",
        arguments: [.string("no")])
      try await emitter.emitSignal(
        path: "/com/example/a", interface: "com.example.Test", member: "Ping",
        arguments: [.string("yes")])
      let received = await next(pings)
      #expect(received?.path == "/com/example/a")
      #expect(received?.arguments == [.string("yes")])
      var all = everything.makeAsyncIterator()
      let paths = [await all.next(), await all.next(), await all.next()].map { $0?.path }
      #expect(paths == ["/other", "/com/example/a", "/com/example/a"])
      // The counter is updated on the bus thread; give it a moment to settle.
      for _ in 0..<100 where listener.statistics.signalsDelivered < 4 {
        try await Task.sleep(for: .milliseconds(10))
      }
      #expect(listener.statistics.signalsDelivered == 4)
    }
  }

  @Test(
    "with a gathering interval, signals that come fast are read once per interval, in order, and a reply the connection awaits is not held back"
  )
  func gathering() async throws {
    try await PrivateBus.with { bus in
      let emitter = try await bus.connect()
      // An interval of 2 s: a reply held back to the end of one (the defect) waits a second on
      // average, far from a test task that resumes late under full-suite load.
      let gathering = try await DBusConnection(address: bus.address, gathering: .seconds(2))
      let plain = try await bus.connect()
      let rule = DBusMatchRule(interface: "com.example.Test", member: "Ping")
      let gathered = try await gathering.signals(matching: rule)
      let each = try await plain.signals(matching: rule)
      // 200 signals about 5 ms apart (a second or more), and now and then a call of the
      // gathering connection whose reply it awaits.
      var replies: [Duration] = []
      let emitting = ContinuousClock.now
      for i in 0..<200 {
        try await emitter.emitSignal(
          path: "/p", interface: "com.example.Test", member: "Ping", arguments: [.string("\(i)")])
        if i % 25 == 12 {
          let started = ContinuousClock.now
          #expect(try await gathering.nameOwner(of: "org.freedesktop.DBus") != nil)
          replies.append(ContinuousClock.now - started)
        }
        try await Task.sleep(for: .milliseconds(5))
      }
      let emitted = (ContinuousClock.now - emitting) / .seconds(1)
      func texts(_ stream: AsyncStream<DBusSignal>) async -> [String] {
        var iterator = stream.makeAsyncIterator()
        var out: [String] = []
        while out.count < 200, let signal = await iterator.next() {
          out.append(signal.arguments.first?.stringValue ?? "?")
        }
        return out
      }
      let expected = (0..<200).map { "\($0)" }
      #expect(await texts(gathered) == expected)
      #expect(await texts(each) == expected)
      let turns = gathering.statistics.signalTurns
      let plainTurns = plain.statistics.signalTurns
      // One turn per signal, or nearly, without gathering; about one per 2 s of emitting with
      // it (the emitting takes longer on a loaded machine), and a few more: the first signal,
      // two for each reply that ended one early.
      #expect(plainTurns >= 100, "\(plainTurns) turns without gathering")
      let bound = Int(emitted / 2) + 2 * replies.count + 4
      #expect(
        turns <= bound,
        "\(turns) turns with gathering over \(emitted) s, \(plainTurns) without")
      // A held reply would wait a second on average.
      let median = replies.sorted()[replies.count / 2]
      #expect(median < .milliseconds(500), "replies took \(replies)")
    }
  }

  @Test(
    "with a 0.1-s gathering interval, signals 60 ms apart (between one and two per interval) take clearly fewer turns than signals, in order"
  )
  func gatheringModerateRate() async throws {
    try await PrivateBus.with { bus in
      let gathering = try await DBusConnection(address: bus.address, gathering: .milliseconds(100))
      let rule = DBusMatchRule(interface: "com.example.Test", member: "Ping")
      let gathered = try await gathering.signals(matching: rule)
      // Paced by a shell of its own (the test pool's tasks are late by far more than 60 ms
      // when tests run in parallel); `dbus-send` itself takes a few milliseconds more.
      let loop =
        "for i in $(seq 0 29); do dbus-send --bus='\(bus.address)' --type=signal /p "
        + "com.example.Test.Ping string:$i || exit 1; sleep 0.055; done"
      let emitter = try ChildProcess("/bin/sh", ["-c", loop])
      #expect(await emitter.wait(timeout: .seconds(30)) == 0, "\(emitter.output)")
      var iterator = gathered.makeAsyncIterator()
      var texts: [String] = []
      while texts.count < 30, let signal = await iterator.next() {
        texts.append(signal.arguments.first?.stringValue ?? "?")
      }
      #expect(texts == (0..<30).map { "\($0)" })
      // About 18 turns (1.7 signals each); 30 when each signal is read as it comes.
      let turns = gathering.statistics.signalTurns
      #expect(turns <= 25, "\(turns) turns for 30 signals")
    }
  }

  @Test(
    "signal batches: 100 signals 5 ms apart to a connection gathering over 0.5 s arrive in a few batches, in order"
  )
  func batches() async throws {
    try await PrivateBus.with { bus in
      let emitter = try await bus.connect()
      let gathering = try await DBusConnection(address: bus.address, gathering: .milliseconds(500))
      let batches = try await gathering.signalBatches(
        matching: DBusMatchRule(interface: "com.example.Test", member: "Ping"))
      for i in 0..<100 {
        try await emitter.emitSignal(
          path: "/p", interface: "com.example.Test", member: "Ping", arguments: [.string("\(i)")])
        try await Task.sleep(for: .milliseconds(5))
      }
      var iterator = batches.makeAsyncIterator()
      var texts: [String] = []
      var sizes: [Int] = []
      while texts.count < 100, let batch = await iterator.next() {
        #expect(!batch.isEmpty)
        sizes.append(batch.count)
        texts += batch.map { $0.arguments.first?.stringValue ?? "?" }
      }
      #expect(texts == (0..<100).map { "\($0)" })
      // A batch per turn of the bus thread: about one per half second (100 with a stream).
      #expect(sizes.count <= 20, "batches: \(sizes)")
    }
  }

  @Test(
    "signal batches are bounded in signals: 30 signals to a buffer of 10 that nobody reads keep the first 10 and count 20 dropped"
  )
  func batchesBounded() async throws {
    try await PrivateBus.with { bus in
      let emitter = try await bus.connect()
      let listener = try await bus.connect()
      let batches = try await listener.signalBatches(
        matching: DBusMatchRule(interface: "com.example.Test", member: "Ping"), bufferSize: 10)
      for i in 0..<30 {
        try await emitter.emitSignal(
          path: "/p", interface: "com.example.Test", member: "Ping", arguments: [.string("\(i)")])
      }
      for _ in 0..<500 where listener.statistics.signalsDropped < 20 {
        try await Task.sleep(for: .milliseconds(10))
      }
      #expect(listener.statistics.signalsDropped == 20)
      var iterator = batches.makeAsyncIterator()
      let batch = await iterator.next()
      #expect(batch?.map { $0.arguments.first?.stringValue ?? "?" } == (0..<10).map { "\($0)" })
      // Room again: the next signal is delivered.
      try await emitter.emitSignal(
        path: "/p", interface: "com.example.Test", member: "Ping", arguments: [.string("next")])
      #expect(await iterator.next()?.first?.arguments.first?.stringValue == "next")
    }
  }

  @Test(
    "signal batches end after what is queued when the connection closes, and at once when the task is cancelled"
  )
  func batchesEnd() async throws {
    try await PrivateBus.with { bus in
      let listener = try await bus.connect()
      let batches = try await listener.signalBatches(
        matching: DBusMatchRule(interface: "com.example.Test", member: "Ping"))
      let waiting = Task {
        var iterator = batches.makeAsyncIterator()
        return await iterator.next()
      }
      try await Task.sleep(for: .milliseconds(100))
      waiting.cancel()
      #expect(await waiting.value == nil)

      let other = try await bus.connect()
      let closing = try await other.signalBatches(
        matching: DBusMatchRule(interface: "com.example.Test", member: "Ping"))
      let consumer = Task {
        var count = 0
        for await batch in closing { count += batch.count }
        return count
      }
      try await Task.sleep(for: .milliseconds(100))
      await other.close()
      #expect(await consumer.value == 0)
    }
  }

  @Test("a rule with a well-known sender matches the name's current owner only")
  func wellKnownSender() async throws {
    try await PrivateBus.with { bus in
      let owner = try await bus.connect()
      let stranger = try await bus.connect()
      let listener = try await bus.connect()
      #expect(try await owner.requestName("com.example.Owner") == .primaryOwner)
      let stream = try await listener.signals(
        matching: DBusMatchRule(sender: "com.example.Owner", interface: "com.example.Test"))
      let any = try await listener.signals(matching: DBusMatchRule(interface: "com.example.Test"))
      try await stranger.emitSignal(path: "/s", interface: "com.example.Test", member: "Ping")
      try await owner.emitSignal(path: "/o", interface: "com.example.Test", member: "Ping")
      let received = await next(stream)
      #expect(received?.path == "/o")
      #expect(received?.sender == owner.uniqueName)
      // Two connections: the bus may interleave them either way.
      var iterator = any.makeAsyncIterator()
      let paths = [await iterator.next()?.path, await iterator.next()?.path]
      #expect(Set(paths) == ["/s", "/o"])
    }
  }

  @Test("NameOwnerChanged reports a name being taken and its owner going away")
  func nameOwnerChanges() async throws {
    try await PrivateBus.with { bus in
      let watcher = try await bus.connect()
      let changes = try await watcher.nameOwnerChanges(of: "com.example.Coming")
      #expect(try await watcher.nameOwner(of: "com.example.Coming") == nil)
      let owner = try await bus.connect()
      let unique = owner.uniqueName
      #expect(try await owner.requestName("com.example.Coming") == .primaryOwner)
      var iterator = changes.makeAsyncIterator()
      let taken = await iterator.next()
      #expect(
        taken == DBusNameOwnerChange(name: "com.example.Coming", oldOwner: nil, newOwner: unique))
      #expect(try await watcher.nameOwner(of: "com.example.Coming") == unique)
      await owner.close()
      let gone = await iterator.next()
      #expect(
        gone == DBusNameOwnerChange(name: "com.example.Coming", oldOwner: unique, newOwner: nil))
    }
  }

  @Test("signal streams finish when the connection closes")
  func streamsFinishOnClose() async throws {
    try await PrivateBus.with { bus in
      let listener = try await bus.connect()
      let stream = try await listener.signals(matching: DBusMatchRule(interface: "com.example.X"))
      await listener.close()
      var iterator = stream.makeAsyncIterator()
      #expect(await iterator.next() == nil)
      #expect(!listener.isConnected)
    }
  }

  @Test("a full subscription buffer drops newer signals and counts them")
  func boundedBuffer() async throws {
    try await PrivateBus.with { bus in
      let emitter = try await bus.connect()
      let listener = try await bus.connect()
      let stream = try await listener.signals(
        matching: DBusMatchRule(interface: "com.example.Flood"), bufferSize: 2)
      for index in 0..<5 {
        try await emitter.emitSignal(
          path: "/f", interface: "com.example.Flood", member: "N", arguments: [.int32(Int32(index))]
        )
      }
      // The emitter's round trip puts the signals in the bus's queue to the listener before the
      // listener's own round trip, whose reply is dispatched after them.
      _ = try await emitter.nameOwner(of: listener.uniqueName)
      _ = try await listener.nameOwner(of: emitter.uniqueName)
      var iterator = stream.makeAsyncIterator()
      #expect(await iterator.next()?.arguments == [.int32(0)])
      #expect(await iterator.next()?.arguments == [.int32(1)])
      #expect(listener.statistics.signalsDropped == 3)
    }
  }
}
