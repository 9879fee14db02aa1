import BridgeCore
import Testing

@Suite("Duplicate gateway.id: one run keeps going, the newcomer stops after a grace")
struct DuplicateGatewayGuardTests {
  let own = GatewayInstance(id: "bbbbbbbbbbbbbbbb", started: 1_700_000_100)
  let older = GatewayInstance(id: "aaaaaaaaaaaaaaaa", started: 1_700_000_000)
  let newer = GatewayInstance(id: "cccccccccccccccc", started: 1_700_000_200)

  @Test(
    "our own state, unreadable states and an earlier run's retained offline mean nothing; a stranger's offline state published now overwrote ours"
  )
  func ignored() {
    var guardState = DuplicateGatewayGuard(own: own, grace: 12)
    #expect(guardState.observe(own.statePayload(online: true), now: 0) == .none)
    #expect(
      guardState.observe(older.statePayload(online: false), now: 0)
        == .overwritten(other: older.id))
    // The retained `offline` an earlier run left, handed over as we subscribe (before our own
    // state is published): nothing replaced ours, nothing to say.
    #expect(
      guardState.observe(older.statePayload(online: false), retained: true, now: 0) == .none)
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

  @Test("a run may act once the broker handed its own online state back and no older run is online")
  func mayActAfterOwnState() {
    var guardState = DuplicateGatewayGuard(own: own, grace: 12)
    #expect(!guardState.mayAct)
    // Our own offline state (an earlier clean stop of this run) confirms nothing.
    _ = guardState.observe(own.statePayload(online: false), now: 0)
    #expect(!guardState.mayAct)
    _ = guardState.observe(newer.statePayload(online: true), now: 0)
    #expect(!guardState.mayAct)
    _ = guardState.observe(own.statePayload(online: true), now: 0)
    #expect(guardState.mayAct)
  }

  @Test(
    "the newcomer stands by: an older run's retained state comes before our own, so it never may act"
  )
  func newcomerStandsBy() {
    var guardState = DuplicateGatewayGuard(own: own, grace: 12)
    _ = guardState.observe(older.statePayload(online: true), now: 1)
    _ = guardState.observe(own.statePayload(online: true), now: 1)
    #expect(!guardState.mayAct)
    #expect(!guardState.stopsAtOnce)
    // The older run's will within the grace: now it may.
    _ = guardState.observe(older.statePayload(online: false), now: 5)
    #expect(guardState.mayAct)
  }

  @Test("a run that acted before it could know stops at once when an older run turns up")
  func lateRivalStopsAtOnce() {
    var guardState = DuplicateGatewayGuard(own: own, grace: 12)
    guardState.beginActing()
    #expect(!guardState.shouldStop(now: 0))
    #expect(
      guardState.observe(older.statePayload(online: true), now: 30)
        == .newcomer(other: older.id, deadline: 42))
    #expect(guardState.stopsAtOnce)
    #expect(guardState.shouldStop(now: 30))
    // A newer run turning up stops nothing.
    var incumbent = DuplicateGatewayGuard(own: own, grace: 12)
    incumbent.beginActing()
    _ = incumbent.observe(newer.statePayload(online: true), now: 30)
    #expect(!incumbent.stopsAtOnce)
    #expect(!incumbent.shouldStop(now: 1_000))
  }

  @Test(
    "an older state only ever retained and never answered is stale: the newcomer carries on after its grace; one that answered stops it"
  )
  func staleRival() {
    var guardState = DuplicateGatewayGuard(own: own, grace: 12)
    #expect(
      guardState.observe(older.statePayload(online: true), retained: true, now: 5)
        == .newcomer(other: older.id, deadline: 17))
    #expect(guardState.dismissSilentRival(now: 16) == nil)
    #expect(!guardState.shouldStop(now: 17))
    #expect(guardState.dismissSilentRival(now: 17) == .stale(other: older.id))
    #expect(guardState.dismissSilentRival(now: 18) == nil)
    _ = guardState.observe(own.statePayload(online: true), now: 18)
    #expect(guardState.mayAct)

    // With the default grace (95 s) the wait ends 10 s after our own state came back.
    var slow = DuplicateGatewayGuard(own: own, grace: 95)
    _ = slow.observe(older.statePayload(online: true), retained: true, now: 5)
    _ = slow.observe(own.statePayload(online: true), now: 5.1)
    #expect(slow.dismissSilentRival(now: 15) == nil)
    #expect(slow.dismissSilentRival(now: 15.1) == .stale(other: older.id))

    // The same, but the older run publishes its state again (it saw ours): it is alive.
    var answered = DuplicateGatewayGuard(own: own, grace: 12)
    _ = answered.observe(older.statePayload(online: true), retained: true, now: 5)
    _ = answered.observe(older.statePayload(online: true), retained: false, now: 6)
    #expect(answered.stopsQuietly)
    #expect(!guardState.stopsQuietly)  // no rival left: a stop says offline
    #expect(answered.dismissSilentRival(now: 17) == nil)
    #expect(answered.shouldStop(now: 17))
  }

  @Test("an instance id is 16 hex digits, new each run")
  func randomInstances() {
    let ids = Set((0..<100).map { _ in GatewayInstance.random(started: 0).id })
    #expect(ids.count == 100)
    #expect(ids.allSatisfy { $0.count == 16 && $0.allSatisfy(\.isHexDigit) })
  }
}
