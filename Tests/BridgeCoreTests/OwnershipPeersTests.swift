import Testing

@testable import BridgeCore

@Suite("Fleet ownership: the gateways known are bounded")
struct OwnershipPeersTests {
  @Test func pastTheBoundOfflineGatewaysAreForgottenAndNewOnesIgnoredWhileNoneCanBe() throws {
    let topics = try Topics(base: "t", gateway: GatewayID("a"))
    var arbiter = OwnershipArbiter(topics: topics, instance: "run0")
    let offline = GatewayInstance(id: "x", started: 0).statePayload(online: false)
    let online = GatewayInstance(id: "y", started: 0).statePayload(online: true)
    for n in 0..<(OwnershipArbiter.maxPeers + 100) {
      _ = arbiter.stateReceived(GatewayID("off\(n)"), payload: offline, now: 1)
    }
    // Offline gateways no claim names carry nothing the rule needs: room is made.
    #expect(arbiter.peers.count <= OwnershipArbiter.maxPeers)
    #expect(arbiter.peers[GatewayID("off\(OwnershipArbiter.maxPeers + 99)")] != nil)
    var reports: [OwnershipArbiter.Output] = []
    for n in 0..<(OwnershipArbiter.maxPeers + 100) {
      reports += arbiter.stateReceived(GatewayID("on\(n)"), payload: online, now: 2)
    }
    // Online ones stay; past the bound a new one is ignored, said once.
    #expect(reports.filter { if case .peersFull = $0 { true } else { false } }.count == 1)
    #expect(arbiter.peers.count == OwnershipArbiter.maxPeers)
    #expect(arbiter.peers[GatewayID("on0")]?.online == true)
    #expect(arbiter.peers[GatewayID("on\(OwnershipArbiter.maxPeers + 99)")] == nil)
  }
}
