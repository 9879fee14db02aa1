import BusTestSupport
import DBus
import Glibc
import Testing

@Suite(
  "D-Bus values round-trip through a real bus",
  .enabled(if: PrivateBus.isAvailable, "dbus-daemon is not installed (apt-get install dbus)"),
  .timeLimit(.minutes(1)))
struct DBusRoundTripTests {
  static let samples: [DBusValue] = [
    .byte(0), .byte(255), .bool(true), .bool(false),
    .int16(.min), .uint16(.max), .int32(-42), .uint32(.max), .int64(.min), .uint64(.max),
    .double(3.25), .double(-1e300),
    .string(""), .string("héllo ✓ 😀 'quoted' <xml>"),
    .objectPath("/org/bluez/hci0/dev_AA_BB_CC_DD_EE_FF"), .signature("a{sv}(ii)"),
    .bytes([0, 1, 127, 255]), .bytes([]), .bytes((0..<512).map { UInt8($0 & 0xFF) }),
    .array("ay", [.bytes([1]), .bytes([]), .bytes([2, 3])]), .array("s", []),
    .strings(["a", "b", ""]),
    .array("a{sv}", []), .array("ai", [.array("i", [.int32(1), .int32(2)]), .array("i", [])]),
    .properties(["RSSI": .int16(-60), "Name": .string("x"), "Nested": .variant(.variant(.byte(1)))]
    ),
    .dictionary(
      key: "u", value: "as", [(.uint32(1), .strings(["x"])), (.uint32(0), .strings([]))]),
    .dictionary(
      key: "q", value: "v", [(.uint16(0x004C), .variant(.bytes([2, 21])))]),
    .dictionary(
      key: "o", value: "a{sa{sv}}",
      [
        (
          .objectPath("/org/bluez/hci0"),
          .dictionary(
            key: "s", value: "a{sv}",
            [(.string("org.bluez.Adapter1"), .properties(["Powered": .bool(true)]))])
        )
      ]),
    .structure([.int32(1)]),
    .structure([
      .string("x"), .array("(yv)", [.structure([.byte(1), .variant(.bool(true))])]),
      .structure([.double(0.5), .objectPath("/")]),
    ]),
    .variant(.variant(.variant(.uint16(7)))),
    .variant(.properties(["deep": .properties(["deeper": .strings(["z"])])])),
  ]

  @Test("every type survives a method call inside a variant, both ways")
  func echoThroughVariant() async throws {
    try await PrivateBus.with { bus in
      let (server, client) = try await TestService.pair(bus)
      for value in Self.samples {
        let reply = try await TestService.call(client, server.uniqueName, "Echo", [.variant(value)])
        #expect(reply == [.variant(value)], "\(value.signature)")
      }
      await client.close()
      await server.close()
    }
  }

  @Test("every type survives as top-level signal arguments")
  func topLevelArguments() async throws {
    try await PrivateBus.with { bus in
      let sender = try await bus.connect()
      let receiver = try await bus.connect()
      let signals = try await receiver.signals(
        matching: DBusMatchRule(interface: "com.example.Values", member: "All"))
      try await sender.emitSignal(
        path: "/values", interface: "com.example.Values", member: "All", arguments: Self.samples)
      var iterator = signals.makeAsyncIterator()
      let signal = try #require(await iterator.next())
      #expect(signal.arguments == Self.samples)
      #expect(signal.sender == sender.uniqueName)
      #expect(signal.path == "/values")
    }
  }

  @Test("a file descriptor is passed to the peer and one comes back, each owned and usable")
  func unixFileDescriptors() async throws {
    try await PrivateBus.with { bus in
      let (server, client) = try await TestService.pair(bus)
      #expect(client.canPassFileDescriptors)
      var ends: [Int32] = [-1, -1]
      #expect(pipe(&ends) == 0)
      let readEnd = DBusFileDescriptor(taking: ends[0])
      let writeEnd = DBusFileDescriptor(taking: ends[1])

      // Sent: the server writes through its own duplicate.
      _ = try await TestService.call(
        client, server.uniqueName, "Write", [.unixFD(writeEnd), .string("hello")])
      var buffer = [UInt8](repeating: 0, count: 16)
      let count = read(readEnd.rawValue, &buffer, buffer.count)
      #expect(String(decoding: buffer.prefix(max(0, count)), as: UTF8.self) == "hello")

      // Received: the echoed descriptor is a new number for the same pipe.
      let reply = try await TestService.call(
        client, server.uniqueName, "Echo", [.variant(.unixFD(writeEnd))])
      guard case .variant(.unixFD(let received))? = reply.first else {
        Issue.record("expected a file descriptor, got \(reply)")
        return
      }
      #expect(received.rawValue != writeEnd.rawValue)
      #expect(write(received.rawValue, "!", 1) == 1)
      #expect(read(readEnd.rawValue, &buffer, buffer.count) == 1)
      #expect(buffer[0] == UInt8(ascii: "!"))
    }
  }
}
