import BusTestSupport
import DBus
import Glibc
import Testing

@Suite(
  "Opening D-Bus connections",
  .enabled(if: PrivateBus.isAvailable, "dbus-daemon is not installed (apt-get install dbus)"),
  .timeLimit(.minutes(1)))
struct DBusConnectionTests {
  @Test("system() and session() connect to the buses named in the environment")
  func environmentAddresses() async throws {
    try await PrivateBus.with { bus in
      // Only this test writes the environment, under the lock that the spawn helper reads it
      // under; system() and session() only read it (concurrent reads are safe).
      environmentLock.withLock { _ in
        setenv("DBUS_SYSTEM_BUS_ADDRESS", bus.address, 1)
        setenv("DBUS_SESSION_BUS_ADDRESS", bus.address, 1)
      }
      defer {
        environmentLock.withLock { _ in
          unsetenv("DBUS_SYSTEM_BUS_ADDRESS")
          unsetenv("DBUS_SESSION_BUS_ADDRESS")
        }
      }
      let system = try await DBusConnection.system()
      let session = try await DBusConnection.session()
      #expect(system.uniqueName.hasPrefix(":"))
      #expect(session.uniqueName.hasPrefix(":"))
      #expect(system.uniqueName != session.uniqueName)
      #expect(try await system.nameOwner(of: session.uniqueName) == session.uniqueName)
    }
  }

  @Test("a bus that is not there fails with connection_failed")
  func missingBus() async {
    let error = await #expect(throws: DBusError.self) {
      _ = try await DBusConnection(address: "unix:path=/nonexistent/dbus-test-socket")
    }
    #expect(error?.code == .connectionFailed)
    #expect(error?.message.contains("/nonexistent/dbus-test-socket") == true)
  }
}
