import BusTestSupport
import DBus
import Glibc
import Testing

@Suite(
  "Exported D-Bus objects",
  .enabled(if: PrivateBus.isAvailable, "dbus-daemon is not installed (apt-get install dbus)"),
  .timeLimit(.minutes(1)))
struct DBusExportTests {
  static let hasBusctl = access(PrivateBus.busctlPath, X_OK) == 0
  static let hasGdbus = access(PrivateBus.gdbusPath, X_OK) == 0

  @Test(
    "busctl introspects the exported object and calls its methods and properties",
    .enabled(if: hasBusctl, "busctl is not installed (apt-get install systemd)"))
  func busctl() async throws {
    try await PrivateBus.with { bus in
      let state = TestService.State()
      let server = try await bus.connect()
      try await server.export(TestService.object(state: state), at: TestService.path)
      #expect(try await server.requestName("com.example.Service") == .primaryOwner)
      let address = "--address=\(bus.address)"
      let busctl = PrivateBus.busctlPath

      let introspect = try await ChildProcess.run(
        busctl, [address, "introspect", "com.example.Service", TestService.path.rawValue])
      #expect(introspect.status == 0, "\(introspect.output)")
      #expect(introspect.output.contains(".Add"))
      #expect(introspect.output.contains("org.freedesktop.DBus.Properties"))
      #expect(introspect.output.contains(".Name"))

      let tree = try await ChildProcess.run(busctl, [address, "tree", "com.example.Service"])
      #expect(tree.output.contains("/com/example/Test"), "\(tree.output)")

      let add = try await ChildProcess.run(
        busctl,
        [
          address, "call", "com.example.Service", TestService.path.rawValue, TestService.interface,
          "Add", "ii", "20", "22",
        ])
      #expect(add.output.trimmingCharacters(in: .whitespacesAndNewlines) == "i 42", "\(add.output)")

      let fail = try await ChildProcess.run(
        busctl,
        [
          address, "call", "com.example.Service", TestService.path.rawValue, TestService.interface,
          "Fail",
        ])
      #expect(fail.status != 0)
      #expect(fail.output.contains("it went boom"), "\(fail.output)")

      let set = try await ChildProcess.run(
        busctl,
        [
          address, "set-property", "com.example.Service", TestService.path.rawValue,
          TestService.interface, "Name", "s", "from busctl",
        ])
      #expect(set.status == 0, "\(set.output)")
      #expect(state.name.withLock { $0 } == "from busctl")
      let get = try await ChildProcess.run(
        busctl,
        [
          address, "get-property", "com.example.Service", TestService.path.rawValue,
          TestService.interface, "Name",
        ])
      #expect(get.output.trimmingCharacters(in: .whitespacesAndNewlines) == "s \"from busctl\"")

      let readOnly = try await ChildProcess.run(
        busctl,
        [
          address, "set-property", "com.example.Service", TestService.path.rawValue,
          TestService.interface, "Count", "u", "1",
        ])
      #expect(readOnly.status != 0)
    }
  }

  @Test(
    "gdbus introspects the exported object and calls a method",
    .enabled(if: hasGdbus, "gdbus is not installed (apt-get install libglib2.0-bin)"))
  func gdbus() async throws {
    try await PrivateBus.with { bus in
      let (server, _) = try await TestService.pair(bus)
      let common = ["--address", bus.address, "--dest", server.uniqueName]
      let introspect = try await ChildProcess.run(
        PrivateBus.gdbusPath,
        ["introspect"] + common + ["--object-path", TestService.path.rawValue])
      #expect(introspect.status == 0, "\(introspect.output)")
      #expect(introspect.output.contains("interface com.example.Test"))
      #expect(introspect.output.contains("Add(in  i a,"), "\(introspect.output)")
      #expect(introspect.output.contains("readwrite s Name"))
      #expect(introspect.output.contains("Ping(s text);"), "\(introspect.output)")

      let call = try await ChildProcess.run(
        PrivateBus.gdbusPath,
        ["call"] + common
          + [
            "--object-path", TestService.path.rawValue, "--method", "com.example.Test.Add", "5",
            "6",
          ])
      #expect(
        call.output.trimmingCharacters(in: .whitespacesAndNewlines) == "(11,)", "\(call.output)")

      let unknown = try await ChildProcess.run(
        PrivateBus.gdbusPath,
        ["call"] + common
          + ["--object-path", TestService.path.rawValue, "--method", "com.example.Test.Nope"])
      #expect(unknown.status != 0)
      #expect(
        unknown.output.contains("org.freedesktop.DBus.Error.UnknownMethod"), "\(unknown.output)")
    }
  }

  @Test("Properties Get, GetAll and Set work over the bus, and Set emits PropertiesChanged")
  func properties() async throws {
    try await PrivateBus.with { bus in
      let (server, client) = try await TestService.pair(bus)
      let changes = try await client.signals(
        matching: DBusMatchRule(
          sender: server.uniqueName, interface: "org.freedesktop.DBus.Properties",
          member: "PropertiesChanged", path: TestService.path))
      func properties(_ member: String, _ arguments: [DBusValue]) async throws -> [DBusValue] {
        try await client.call(
          destination: server.uniqueName, path: TestService.path,
          interface: "org.freedesktop.DBus.Properties", member: member, arguments: arguments)
      }
      let all = try await properties("GetAll", [.string(TestService.interface)])
      #expect(all.first?.propertyMap == ["Name": .string("initial"), "Count": .uint32(42)])
      _ = try await properties(
        "Set", [.string(TestService.interface), .string("Name"), .variant(.string("new"))])
      let name = try await properties("Get", [.string(TestService.interface), .string("Name")])
      #expect(name == [.variant(.string("new"))])
      let changed = await next(changes)
      #expect(changed?.arguments.first == .string(TestService.interface))
      #expect(changed?.arguments.dropFirst().first?.propertyMap == ["Name": .string("new")])

      let missing = await #expect(throws: DBusError.self) {
        _ = try await properties("Get", [.string(TestService.interface), .string("Missing")])
      }
      #expect(missing?.code == .unknownProperty)
      let readOnly = await #expect(throws: DBusError.self) {
        _ = try await properties(
          "Set", [.string(TestService.interface), .string("Count"), .variant(.uint32(1))])
      }
      #expect(readOnly?.code == .propertyReadOnly)
      let wrongType = await #expect(throws: DBusError.self) {
        _ = try await properties(
          "Set", [.string(TestService.interface), .string("Name"), .variant(.uint32(1))])
      }
      #expect(wrongType?.code == .invalidArgs)
    }
  }

  @Test("an object manager lists objects below it and signals their arrival and departure")
  func objectManager() async throws {
    try await PrivateBus.with { bus in
      let server = try await bus.connect()
      let client = try await bus.connect()
      try await server.addObjectManager(at: "/app")
      let added = try await client.signals(
        matching: DBusMatchRule(
          sender: server.uniqueName, interface: "org.freedesktop.DBus.ObjectManager",
          path: "/app"))
      try await server.export(TestService.object(), at: "/app/service0")
      try await server.export(TestService.object(), at: "/elsewhere")

      let objects = try await client.call(
        destination: server.uniqueName, path: "/app",
        interface: "org.freedesktop.DBus.ObjectManager", member: "GetManagedObjects")
      guard case .dictionary(_, _, let entries)? = objects.first else {
        Issue.record("unexpected reply \(objects)")
        return
      }
      #expect(entries.map(\.0) == [.objectPath("/app/service0")])
      let interfaces = entries.first?.1.propertyMap
      #expect(interfaces?[TestService.interface]?.propertyMap?["Count"] == .uint32(42))

      var iterator = added.makeAsyncIterator()
      let first = await iterator.next()
      #expect(first?.member == "InterfacesAdded")
      #expect(first?.arguments.first == .objectPath("/app/service0"))
      #expect(
        first?.arguments.last?.propertyMap?[TestService.interface]?.propertyMap?["Name"]
          == .string("initial"))

      try await server.unexport(at: "/app/service0")
      let removed = await iterator.next()
      #expect(removed?.member == "InterfacesRemoved")
      #expect(
        removed?.arguments == [.objectPath("/app/service0"), .strings([TestService.interface])])

      let gone = await #expect(throws: DBusError.self) {
        _ = try await TestService.call(client, server.uniqueName, "Add")
      }
      #expect(gone?.code == .unknownObject)
      let twice = await #expect(throws: DBusError.self) {
        try await server.export(TestService.object(), at: "/elsewhere")
      }
      #expect(twice?.code == .invalidArgument)
    }
  }

  @Test("introspecting a parent path lists its children")
  func parentIntrospection() async throws {
    try await PrivateBus.with { bus in
      let (server, client) = try await TestService.pair(bus)
      let root = try await client.call(
        destination: server.uniqueName, path: "/com",
        interface: "org.freedesktop.DBus.Introspectable",
        member: "Introspect")
      let xml = root.first?.stringValue ?? ""
      #expect(xml.contains("<node name=\"example\"/>"), "\(xml)")
      #expect(!xml.contains("com.example.Test"))
    }
  }
}
