import BridgeCore
import Testing

@testable import Gateway

@Suite(
  "Discovery's retries: a busy bluetoothd is waited for, failures back off and are reported once")
struct DiscoveryRetryTests {
  let busy = CentralError(.inProgress, message: "StartDiscovery: Operation already in progress")
  let refused = CentralError(.notPermitted, message: "StartDiscovery: Not Permitted")

  @Test("InProgress is retried every 0.25 s without a report, up to the limit; then it backs off")
  func busyAnswers() {
    var retry = CentralRoleService.DiscoveryRetry()
    for _ in 0..<CentralRoleService.DiscoveryRetry.busyLimit {
      let next = retry.record(busy)
      #expect(next.delay == 0.25)
      #expect(next.busy && !next.report)
    }
    // Busy for 10 s: now it is a failure, reported once, and the delays grow.
    let first = retry.record(busy)
    #expect(!first.busy && first.report && first.delay == 0.25)
    let second = retry.record(busy)
    #expect(!second.busy && !second.report && second.delay == 0.5)
    #expect(retry.attempts == CentralRoleService.DiscoveryRetry.busyLimit + 2)
  }

  @Test("other failures back off from 0.25 s to 30 s and are reported once per streak")
  func failures() {
    var retry = CentralRoleService.DiscoveryRetry()
    let delays = (0..<10).map { _ in retry.record(refused) }
    #expect(delays.map(\.delay) == [0.25, 0.5, 1, 2, 4, 8, 16, 30, 30, 30])
    #expect(delays.map(\.report) == [true] + Array(repeating: false, count: 9))
    #expect(delays.allSatisfy { !$0.busy })
  }

  @Test("a failure after busy answers is still reported (the busy ones did not use up the report)")
  func failureAfterBusy() {
    var retry = CentralRoleService.DiscoveryRetry()
    _ = retry.record(busy)
    _ = retry.record(busy)
    let next = retry.record(refused)
    #expect(next.report && next.delay == 0.25 && !next.busy)
    // Busy answers after the failure keep the short delay (bluetoothd is only busy).
    #expect(retry.record(busy).delay == 0.25)
  }
}
