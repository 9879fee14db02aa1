import BridgeCore
import Testing

@Suite("Fleet messages held while standing by: the last one per topic, in first-arrival order")
struct HeldFleetMessagesTests {
  let a = try! BluetoothAddress("A4:C1:38:1E:29:DF")
  let b = try! BluetoothAddress("11:22:33:44:55:66")

  @Test func aLaterMessageReplacesItsTopicsEarlierOneInPlace() {
    var held = HeldFleetMessages()
    held.hold("t/bridge/hall/state", .state(GatewayID("hall")), payload: Array("1".utf8))
    held.hold("t/A4C1381E29DF/owner", .owner(a), payload: Array("2".utf8))
    held.hold("t/bridge/hall/state", .state(GatewayID("hall")), payload: Array("3".utf8))
    held.hold("t/bridge/names/112233445566", .name(b), payload: [])
    let messages = held.messages
    #expect(messages.map(\.message) == [.state(GatewayID("hall")), .owner(a), .name(b)])
    #expect(messages.map(\.payload) == [Array("3".utf8), Array("2".utf8), []])
    #expect(held.dropped == 0)
  }

  @Test func topicsPastTheLimitAreDroppedAndCountedKnownOnesStillReplaced() {
    var held = HeldFleetMessages()
    for index in 0..<HeldFleetMessages.limit {
      held.hold("t/\(index)/owner", .owner(a), payload: [])
    }
    held.hold("t/new/owner", .owner(b), payload: [1])
    held.hold("t/0/owner", .owner(a), payload: [2])
    #expect(held.dropped == 1)
    #expect(held.messages.count == HeldFleetMessages.limit)
    #expect(held.messages.first?.payload == [2])
  }
}
