import BusTestSupport
import DBus
import Synchronization
import Testing

@Suite(
  "D-Bus method calls",
  .enabled(if: PrivateBus.isAvailable, "dbus-daemon is not installed (apt-get install dbus)"),
  .timeLimit(.minutes(1)))
struct DBusMethodCallTests {
  @Test("a call returns the handler's values")
  func callReturnsValues() async throws {
    try await PrivateBus.with { bus in
      let (server, client) = try await TestService.pair(bus)
      let sum = try await TestService.call(
        client, server.uniqueName, "Add", [.int32(2), .int32(40)])
      #expect(sum == [.int32(42)])
      let me = try await TestService.call(client, server.uniqueName, "WhoAmI")
      #expect(me == [.string(client.uniqueName)])
    }
  }

  @Test("the call observer sees each call: its method, duration and outcome")
  func callObserver() async throws {
    try await PrivateBus.with { bus in
      let (server, client) = try await TestService.pair(bus)
      let records = Mutex<[DBusCallRecord]>([])
      client.observeCalls { record in records.withLock { $0.append(record) } }
      _ = try await TestService.call(client, server.uniqueName, "Add", [.int32(2), .int32(40)])
      _ = try? await TestService.call(
        client, server.uniqueName, "Sleep", [.uint32(20_000)], timeout: .milliseconds(100))
      client.observeCalls(nil)
      _ = try await TestService.call(client, server.uniqueName, "Add", [.int32(1), .int32(1)])
      let seen = records.withLock { $0 }
      #expect(seen.map(\.member) == ["Add", "Sleep"])
      #expect(seen.map(\.succeeded) == [true, false])
      #expect(seen[1].seconds >= 0.09 && seen[1].seconds < 8)
    }
  }

  @Test("a call without a reply in time fails with NoReply, and soon")
  func callTimesOut() async throws {
    try await PrivateBus.with { bus in
      let (server, client) = try await TestService.pair(bus)
      let start = ContinuousClock.now
      let error = await #expect(throws: DBusError.self) {
        _ = try await TestService.call(
          client, server.uniqueName, "Sleep", [.uint32(20_000)], timeout: .milliseconds(200))
      }
      let elapsed = ContinuousClock.now - start
      #expect(error?.code == .noReply)
      #expect(error?.name == "org.freedesktop.DBus.Error.NoReply")
      // Well before the reply would come (20 s), with room for a loaded 2-core machine.
      #expect(elapsed >= .milliseconds(150) && elapsed < .seconds(15), "took \(elapsed)")
      // The connection still works afterwards.
      let sum = try await TestService.call(
        client, server.uniqueName, "Add", [.int32(1), .int32(1)])
      #expect(sum == [.int32(2)])
    }
  }

  @Test("an error thrown by a handler reaches the caller with its D-Bus name and message")
  func errorReplyKeepsName() async throws {
    try await PrivateBus.with { bus in
      let (server, client) = try await TestService.pair(bus)
      let error = await #expect(throws: DBusError.self) {
        _ = try await TestService.call(client, server.uniqueName, "Fail")
      }
      #expect(error?.name == "com.example.Error.Boom")
      #expect(error?.message == "it went boom")
      #expect(error?.code == .remote)
    }
  }

  @Test("unknown methods, objects, services and wrong arguments map to their codes")
  func standardErrors() async throws {
    try await PrivateBus.with { bus in
      let (server, client) = try await TestService.pair(bus)
      let unknownMethod = await #expect(throws: DBusError.self) {
        _ = try await TestService.call(client, server.uniqueName, "Nope")
      }
      #expect(unknownMethod?.code == .unknownMethod)
      #expect(unknownMethod?.name == "org.freedesktop.DBus.Error.UnknownMethod")

      let unknownObject = await #expect(throws: DBusError.self) {
        _ = try await client.call(
          destination: server.uniqueName, path: "/nowhere", interface: TestService.interface,
          member: "Add", arguments: [.int32(1), .int32(2)])
      }
      #expect(unknownObject?.code == .unknownObject)

      let wrongArguments = await #expect(throws: DBusError.self) {
        _ = try await TestService.call(client, server.uniqueName, "Add", [.string("1")])
      }
      #expect(wrongArguments?.code == .invalidArgs)

      let wrongReply = await #expect(throws: DBusError.self) {
        _ = try await TestService.call(client, server.uniqueName, "WrongReply")
      }
      #expect(wrongReply?.code == .failed)

      let noService = await #expect(throws: DBusError.self) {
        _ = try await TestService.call(client, "com.example.Missing", "Add")
      }
      #expect(noService?.code == .serviceUnknown)
    }
  }

  @Test("invalid names and values are refused before anything is sent")
  func localValidation() async throws {
    try await PrivateBus.with { bus in
      let client = try await bus.connect()
      let badMember = await #expect(throws: DBusError.self) {
        _ = try await client.call(
          destination: "org.example.X", path: "/", interface: "org.example.X", member: "no-dash")
      }
      #expect(badMember?.code == .invalidArgument)
      let badValue = await #expect(throws: DBusError.self) {
        _ = try await client.call(
          destination: "org.example.X", path: "/", interface: nil, member: "M",
          arguments: [.array("s", [.int32(1)])])
      }
      #expect(badValue?.code == .invalidArgument)
      #expect(client.statistics.pendingCalls == 0)
    }
  }

  @Test("cancelling the calling task ends the call with cancelled")
  func cancellation() async throws {
    try await PrivateBus.with { bus in
      let (server, client) = try await TestService.pair(bus)
      let name = server.uniqueName
      let task = Task { () async throws(DBusError) -> [DBusValue] in
        try await TestService.call(client, name, "Sleep", [.uint32(5000)])
      }
      try await Task.sleep(for: .milliseconds(100))
      task.cancel()
      let result = await task.result
      guard case .failure(let error) = result else {
        Issue.record("call was not cancelled")
        return
      }
      #expect((error as? DBusError)?.code == .cancelled)
      #expect(client.statistics.pendingCalls == 0)
    }
  }

  @Test("a closed connection refuses calls and a lost bus fails pending calls")
  func disconnection() async throws {
    try await PrivateBus.with { bus in
      let (server, client) = try await TestService.pair(bus)
      let name = server.uniqueName
      let pending = Task { () async throws(DBusError) -> [DBusValue] in
        try await TestService.call(client, name, "Sleep", [.uint32(10_000)])
      }
      try await Task.sleep(for: .milliseconds(100))
      await bus.stop()
      await client.closed()
      #expect(!client.isConnected)
      guard case .failure(let error) = await pending.result else {
        Issue.record("pending call succeeded after the bus stopped")
        return
      }
      let code = (error as? DBusError)?.code
      #expect(code == .disconnected || code == .noReply)
      let refused = await #expect(throws: DBusError.self) {
        _ = try await TestService.call(client, name, "Add", [.int32(1), .int32(1)])
      }
      #expect(refused?.code == .disconnected)
    }
  }
}
