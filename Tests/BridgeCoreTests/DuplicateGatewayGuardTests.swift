import BridgeCore
import Testing

@Suite("Duplicate gateway.id: one run keeps going, the newcomer stops after a grace")
struct DuplicateGatewayGuardTests {
  let own = GatewayInstance(id: "bbbbbbbbbbbbbbbb", started: 1_700_000_100)
  let older = GatewayInstance(id: "aaaaaaaaaaaaaaaa", started: 1_700_000_000)
  let newer = GatewayInstance(id: "cccccccccccccccc", started: 1_700_000_200)

  @Test(
    "our own state and unreadable states mean nothing; a stranger's offline state overwrote ours")
  func ignored() {
    var guardState = DuplicateGatewayGuard(own: own, grace: 12)
    #expect(guardState.observe(own.statePayload(online: true), now: 0) == .none)
    #expect(
      guardState.observe(older.statePayload(online: false), now: 0)
        == .overwritten(other: older.id))
    #expect(guardState.observe(Array(#"{"state":"online"}"#.utf8), now: 0) == .none)
    #expect(guardState.observe(Array("online".utf8), now: 0) == .none)
    #expect(guardState.observe([0xFF, 0xFE], now: 0) == .none)
    #expect(!guardState.shouldStop(now: 1_000))
  }

  @Test("an older run online: we are the newcomer and stop when the grace ends")
  func newcomer() {
    var guardState = DuplicateGatewayGuard(own: own, grace: 12)
    #expect(
      guardState.observe(older.statePayload(online: true), now: 5)
        == .newcomer(other: older.id, deadline: 17))
    // Seen again (it re-asserts its state): the same deadline, not a new one.
    #expect(
      guardState.observe(older.statePayload(online: true), now: 10)
        == .newcomer(other: older.id, deadline: 17))
    #expect(!guardState.shouldStop(now: 16.9))
    #expect(guardState.shouldStop(now: 17))
  }

  @Test("the older run's last will within the grace clears it: a stale session, not a duplicate")
  func staleSession() {
    var guardState = DuplicateGatewayGuard(own: own, grace: 12)
    _ = guardState.observe(older.statePayload(online: true), now: 5)
    #expect(
      guardState.observe(older.statePayload(online: false), now: 8) == .cleared(other: older.id))
    #expect(!guardState.shouldStop(now: 100))
  }

  @Test("a newer run online: we are the incumbent and keep running")
  func incumbent() {
    var guardState = DuplicateGatewayGuard(own: own, grace: 12)
    #expect(
      guardState.observe(newer.statePayload(online: true), now: 5) == .incumbent(other: newer.id))
    #expect(!guardState.shouldStop(now: 1_000))
  }

  @Test("both sides agree on who stops, a tie on start time broken by the id")
  func bothSidesAgree() {
    let twinA = GatewayInstance(id: "1111111111111111", started: 1_700_000_000)
    let twinB = GatewayInstance(id: "2222222222222222", started: 1_700_000_000)
    var a = DuplicateGatewayGuard(own: twinA, grace: 1)
    var b = DuplicateGatewayGuard(own: twinB, grace: 1)
    #expect(a.observe(twinB.statePayload(online: true), now: 0) == .incumbent(other: twinB.id))
    #expect(
      b.observe(twinA.statePayload(online: true), now: 0) == .newcomer(other: twinA.id, deadline: 1)
    )
  }

  @Test("an instance id is 16 hex digits, new each run")
  func randomInstances() {
    let ids = Set((0..<100).map { _ in GatewayInstance.random(started: 0).id })
    #expect(ids.count == 100)
    #expect(ids.allSatisfy { $0.count == 16 && $0.allSatisfy(\.isHexDigit) })
  }
}
