import Foundation
import TestSupport
import Testing

@Suite("Under systemd (Type=notify): READY, STATUS, WATCHDOG and STOPPING from the real process")
struct SystemdTests {
  @Test(
    "broker up: READY=1 with the broker connected, WATCHDOG=1 at half the interval, STOPPING=1 on SIGTERM"
  )
  func supervised() async throws {
    let broker = try Broker()
    try await broker.start()
    let listener = try NotifyListener()
    let gateway = try GatewayProcess(
      broker: broker,
      environment: ["NOTIFY_SOCKET": listener.address, "WATCHDOG_USEC": "4000000"])
    let ready = await listener.next(within: 10) { $0 == "READY=1" }
    #expect(ready?.contains("STATUS=broker connected") == true, "\(listener.received)")
    // Watchdog every 2 s (half of WATCHDOG_USEC) while the loops answer; a round in which a
    // loop answered late (a loaded test machine) sends none, so the waits leave room for that.
    let first = await listener.next(within: 15) { $0 == "WATCHDOG=1" }
    #expect(first != nil, "\(listener.received)")
    let beats = listener.received.count
    #expect(await listener.next(within: 15, after: beats) { $0 == "WATCHDOG=1" } != nil)
    gateway.child.signal(SIGTERM)
    #expect(await listener.next(within: 5) { $0 == "STOPPING=1" } != nil)
    let status = try #require(await gateway.child.wait(timeout: 10))
    #expect(ChildProcess.exitCode(status) == 0)
  }

  @Test("broker unreachable: READY=1 all the same after the first attempts, saying it retries")
  func readyWhileRetrying() async throws {
    let broker = try Broker()  // never started: nothing listens on its port
    let listener = try NotifyListener()
    let gateway = try GatewayProcess(
      broker: broker, environment: ["NOTIFY_SOCKET": listener.address])
    let ready = await listener.next(within: 12) { $0 == "READY=1" }
    #expect(ready?.contains("STATUS=broker unreachable, retrying") == true, "\(listener.received)")
    gateway.child.signal(SIGTERM)
    let status = try #require(await gateway.child.wait(timeout: 5))
    #expect(ChildProcess.exitCode(status) == 0)
  }
}
