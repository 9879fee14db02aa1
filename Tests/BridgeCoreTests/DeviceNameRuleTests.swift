import BridgeCore
import Testing

@Suite("Friendly names from the configuration: <address>=<name>")
struct DeviceNameRuleTests {
  @Test func aRuleNamesADevice() throws {
    let rule = try DeviceNameRule(parsing: " a4-c1-38-1e-29-df = kitchen/thermometer ")
    #expect(rule.address == (try BluetoothAddress("A4:C1:38:1E:29:DF")))
    #expect(rule.name.rawValue == "kitchen/thermometer")
    #expect(rule.description == "A4:C1:38:1E:29:DF=kitchen/thermometer")
  }

  @Test(arguments: [
    ("A4:C1:38:1E:29:DF", "has no '=<name>'"),
    ("kitchen=thermometer", "'kitchen' is not a Bluetooth address"),
    ("A4:C1:38:1E:29:DF=", "'' is not a device name"),
    ("A4:C1:38:1E:29:DF=kitchen/#", "'kitchen/#' is not a device name"),
    ("A4:C1:38:1E:29:DF=bridge/x", "'bridge/x' is not a device name"),
    ("A4:C1:38:1E:29:DF=112233445566", "looks like an address id"),
  ])
  func badRulesSayWhy(_ text: String, _ problem: String) {
    do {
      _ = try DeviceNameRule(parsing: text)
      Issue.record("'\(text)' was accepted")
    } catch {
      #expect(error.description.contains(problem), "\(error.description)")
    }
  }

  @Test func oneNamePerDeviceAndOneDevicePerName() throws {
    let rules = try [
      "A4:C1:38:1E:29:DF=kitchen", "11:22:33:44:55:66=hall", "A4:C1:38:1E:29:DF=porch",
    ].map { try DeviceNameRule(parsing: $0) }
    let names = try DeviceNameRule.names(rules).get()
    #expect(names[try BluetoothAddress("A4:C1:38:1E:29:DF")]?.rawValue == "porch")
    let clash = try ["A4:C1:38:1E:29:DF=hall", "11:22:33:44:55:66=hall"].map {
      try DeviceNameRule(parsing: $0)
    }
    guard case .failure(let duplicate) = DeviceNameRule.names(clash) else {
      Issue.record("a name for two devices was accepted")
      return
    }
    #expect(duplicate.description == "'hall' names both 11:22:33:44:55:66 and A4:C1:38:1E:29:DF")
  }

  @Test func theOwnerFilterKnowsDevicesByTheirNames() {
    let address = try! BluetoothAddress("A4:C1:38:1E:29:DF")
    let bridge = CentralBridge(
      discovery: DiscoveryBridge(
        topics: Fixture.topics,
        configuration: .init(
          registry: DeviceRegistry(
            naming: DeviceNaming(friendlyNames: [address: try! DeviceID(friendlyName: "kitchen/t")])
          ))),
      gatt: GATTBridge(topics: Fixture.topics),
      ownership: OwnershipArbiter(topics: Fixture.topics, instance: "run0"))
    #expect(bridge.namedAddress(of: try! TopicName("gatt2mqtt/kitchen/t/presence")) == address)
    #expect(bridge.namedAddress(of: try! TopicName("gatt2mqtt/kitchen/presence")) == nil)
    #expect(bridge.namedAddress(of: try! TopicName("gatt2mqtt/bridge/pi/devices")) == nil)
  }
}

@Suite("device/rename in the connection half")
struct GATTBridgeRenameTests {
  @Test func aNotifyWishRecordedBeforeTheLinkFollowsTheRename() throws {
    let sensor = GATTHarness.sensor
    var gatt = GATTBridge(
      topics: Fixture.topics, configuration: .init(policy: ConnectionPolicy(addresses: [sensor])))
    let path = CharacteristicPath(
      device: DeviceID(address: sensor), service: GATTHarness.battery,
      characteristic: GATTHarness.batteryLevel)
    // A retained /notify arrives before anything else, then the retained name.
    _ = gatt.request(.notify(path), payload: Array("on".utf8), now: 0)
    let porch = try DeviceID(friendlyName: "porch/sensor")
    _ = gatt.rename(sensor, to: porch)
    #expect(gatt.name(of: sensor) == porch)
    _ = gatt.tick(now: 1)
    _ = gatt.connectFinished(sensor, error: nil, now: 1)
    let outputs = gatt.handle(.servicesResolved(sensor, GATTHarness.tree), now: 2)
    #expect(
      outputs.contains {
        if case .execute(let operation) = $0 {
          return operation.kind == .notify(true)
            && operation.characteristic.characteristic == GATTHarness.batteryLevel
        }
        return false
      })
    #expect(
      outputs.contains {
        $0
          == .publish(
            topic: Fixture.topics.gatt(porch), payload: GATTHarness.tree.json.serializedBytes(),
            retain: true)
      })
  }
}

@Suite("Retained names from the broker")
struct RetainedNameTests {
  @Test func namesOfUnseenDevicesAreBoundedByTheRegistry() {
    var bridge = CentralBridge(
      discovery: DiscoveryBridge(
        topics: Fixture.topics, configuration: .init(registry: DeviceRegistry(capacity: 2))),
      gatt: GATTBridge(topics: Fixture.topics))
    var refused = 0
    for index in 0..<5 {
      let address = BluetoothAddress(bytes: [0xD0, 0, 0, 0, 0, UInt8(index)])!
      let outputs = bridge.fleetMessage(
        .name(address), payload: Array("room/\(index)".utf8), now: Double(index))
      refused +=
        outputs.filter {
          if case .discovery(.publish(_, let payload, _)) = $0 {
            return String(decoding: payload, as: UTF8.self).contains("device_rename_refused")
          }
          return false
        }.count
    }
    #expect(refused == 3)
    #expect(bridge.discovery.registry.naming.friendlyNames.count == 2)
    // A bad name is refused with an event, and changes nothing.
    let bad = bridge.fleetMessage(
      .name(BluetoothAddress(bytes: [0xD0, 0, 0, 0, 0, 9])!), payload: Array("a/#".utf8), now: 9)
    #expect(
      bad.contains {
        if case .discovery(.publish(_, let payload, _)) = $0 {
          return String(decoding: payload, as: UTF8.self).contains("device_name_invalid")
        }
        return false
      })
  }
}
