import BusTestSupport
import DBus
import Glibc
import Synchronization

/// The object the tests export at `/com/example/Test`, interface `com.example.Test`.
enum TestService {
  static let path: DBusObjectPath = "/com/example/Test"
  static let interface = "com.example.Test"

  /// Backing store of the read-write `Name` property.
  final class State: Sendable {
    let name = Mutex("initial")
  }

  static func object(state: State = State()) -> DBusExportedObject {
    DBusExportedObject(interfaces: [
      DBusInterface(
        interface,
        methods: [
          DBusMethod("Echo", in: "v", out: "v") { call in call.arguments },
          DBusMethod("Add", in: "ii", out: "i", inNames: ["a", "b"], outNames: ["sum"]) { call in
            guard case .int32(let a) = call.arguments[0], case .int32(let b) = call.arguments[1]
            else { throw DBusError(.invalidArgs, "expected two int32") }
            return [.int32(a &+ b)]
          },
          DBusMethod("Fail") { _ in
            throw DBusError(name: "com.example.Error.Boom", message: "it went boom")
          },
          DBusMethod("Sleep", in: "u") { call in
            guard case .uint32(let ms) = call.arguments[0] else { return [] }
            try? await Task.sleep(for: .milliseconds(Int(ms)))
            return []
          },
          DBusMethod("WrongReply", out: "s") { _ in [.int32(1)] },
          DBusMethod("Write", in: "hs") { call in
            guard case .unixFD(let fd) = call.arguments[0],
              case .string(let text) = call.arguments[1]
            else { return [] }
            let written = text.withCString { write(fd.rawValue, $0, strlen($0)) }
            guard written == text.utf8.count else {
              throw DBusError(.failed, "write failed")
            }
            return []
          },
          DBusMethod("WhoAmI", out: "s") { call in [.string(call.sender)] },
        ],
        properties: [
          DBusProperty(
            "Name", signature: "s",
            get: { .string(state.name.withLock { $0 }) },
            set: { value in
              guard case .string(let text) = value else {
                throw DBusError(.invalidArgument, "Name takes a string, got \(value)")
              }
              state.name.withLock { $0 = text }
            }),
          DBusProperty("Count", signature: "u", get: { .uint32(42) }),
        ],
        signals: [DBusSignalDescription("Ping", signature: "s", argumentNames: ["text"])])
    ])
  }

  /// Calls a method of the test object on `connection` at `destination`.
  static func call(
    _ connection: DBusConnection, _ destination: String, _ member: String,
    _ arguments: [DBusValue] = [], timeout: Duration = .seconds(10)
  ) async throws(DBusError) -> [DBusValue] {
    try await connection.call(
      destination: destination, path: path, interface: interface, member: member,
      arguments: arguments, timeout: timeout)
  }

  /// A server connection exporting the object and a client connection, on `bus`.
  static func pair(_ bus: PrivateBus, state: State = State()) async throws -> (
    server: DBusConnection, client: DBusConnection
  ) {
    let server = try await bus.connect()
    try await server.export(object(state: state), at: path)
    let client = try await bus.connect()
    return (server, client)
  }
}
