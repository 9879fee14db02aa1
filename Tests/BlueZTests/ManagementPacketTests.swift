import BridgeCore
import Testing

@testable import BlueZ

@Suite("The kernel's Bluetooth management packets: Get Connection Information")
struct ManagementPacketTests {
  let address = try! BluetoothAddress("A4:C1:38:1E:29:DF")

  @Test func theCommandIsLittleEndianWithTheAddressReversed() {
    #expect(
      ManagementPacket.getConnectionInformation(index: 1, address: address, type: .public)
        == [0x31, 0x00, 0x01, 0x00, 0x07, 0x00, 0xDF, 0x29, 0x1E, 0x38, 0xC1, 0xA4, 0x01])
    #expect(
      ManagementPacket.getConnectionInformation(index: 0, address: address, type: .random).last
        == 0x02)
    #expect(ManagementPacket.index(of: "hci0") == 0)
    #expect(ManagementPacket.index(of: "hci12") == 12)
    #expect(ManagementPacket.index(of: "eth0") == nil)
    #expect(ManagementPacket.index(of: "hci") == nil)
  }

  /// A Command Complete for Get Connection Information on controller 1.
  func complete(status: UInt8, rssi: Int8, tx: Int8, max: Int8, index: UInt8 = 1) -> [UInt8] {
    [0x01, 0x00, index, 0x00, 0x0D, 0x00, 0x31, 0x00, status]
      + [0xDF, 0x29, 0x1E, 0x38, 0xC1, 0xA4, 0x01]
      + [UInt8(bitPattern: rssi), UInt8(bitPattern: tx), UInt8(bitPattern: max)]
  }

  @Test func aCompleteReplyIsAReading() {
    #expect(
      ManagementPacket.reply(complete(status: 0, rssi: -61, tx: 4, max: 127), index: 1)
        == .quality(LinkQuality(rssi: -61, txPower: 4, maxTxPower: nil)))
    // RSSI 127: the controller has none.
    #expect(
      ManagementPacket.reply(complete(status: 0, rssi: 127, tx: 4, max: 4), index: 1)
        == .failed(status: 0xFE))
  }

  @Test func refusalsAndStrangersAreToldApart() {
    // Command Status: permission denied (a socket without CAP_NET_ADMIN).
    let status: [UInt8] = [0x02, 0x00, 0x01, 0x00, 0x03, 0x00, 0x31, 0x00, 0x14]
    #expect(ManagementPacket.reply(status, index: 1) == .failed(status: 0x14))
    // As the lab's kernel sent it for hci0 (btmon: Command Status, plen 3, Permission Denied).
    let lab: [UInt8] = [0x02, 0x00, 0x00, 0x00, 0x03, 0x00, 0x31, 0x00, 0x14]
    #expect(ManagementPacket.reply(lab, index: 0) == .failed(status: 0x14))
    #expect(
      ManagementPacket.error(status: 0x14, adapter: "hci0", address: address).code == .notPermitted)
    #expect(
      ManagementPacket.reply(complete(status: 0x02, rssi: 0, tx: 0, max: 0), index: 1)
        == .failed(status: 0x02))
    // Another controller, another command, another event, a short packet.
    #expect(
      ManagementPacket.reply(complete(status: 0, rssi: -1, tx: 0, max: 0, index: 2), index: 1)
        == .unrelated)
    var other = complete(status: 0, rssi: -1, tx: 0, max: 0)
    other[6] = 0x32
    #expect(ManagementPacket.reply(other, index: 1) == .unrelated)
    #expect(ManagementPacket.reply([0x12, 0x00, 0x01, 0x00, 0x00, 0x00], index: 1) == .unrelated)
    #expect(
      ManagementPacket.reply(
        Array(complete(status: 0, rssi: -1, tx: 0, max: 0).prefix(12)), index: 1)
        == .failed(status: 0xFF))
  }

  @Test func statusesBecomeCentralErrors() {
    #expect(
      ManagementPacket.error(status: 0x14, adapter: "hci0", address: address).code == .notPermitted)
    #expect(
      ManagementPacket.error(status: 0x02, adapter: "hci0", address: address).code == .notConnected)
    #expect(
      ManagementPacket.error(status: 0x11, adapter: "hci9", address: address).code
        == .unknownAdapter)
    #expect(
      ManagementPacket.error(status: 0x0F, adapter: "hci0", address: address).code == .poweredOff)
    #expect(
      ManagementPacket.error(status: 0x03, adapter: "hci0", address: address).message
        == "Get Connection Information for A4:C1:38:1E:29:DF failed: management status 0x3")
  }

  @Test func withoutTheCapabilityOrInterfaceTheReaderSaysWhy() async {
    // This machine's kernel has no Bluetooth (or the test is not root): a clear error either
    // way, never a crash or a hang.
    do {
      _ = try await ManagementLinkQuality(timeout: 0.5).linkQuality(
        of: address, type: .public, adapter: "hci0")
      Issue.record("a reading without a controller")
    } catch {
      #expect(
        [.unavailable, .notPermitted, .unknownAdapter, .notConnected, .timeout].contains(error.code)
      )
    }
  }
}
