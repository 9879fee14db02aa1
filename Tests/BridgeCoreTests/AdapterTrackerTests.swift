import BridgeCore
import Testing

@Suite("Adapter tracking and discovery control")
struct AdapterTrackerTests {
  let filter = DiscoveryFilter(serviceUUIDs: [BluetoothUUID(uuid16: 0x181A)], rssiFloor: -90)

  func adapter(powered: Bool = true, discovering: Bool = false) -> AdapterInfo {
    AdapterInfo(
      id: "hci0", address: Fixture.address("00:1A:7D:DA:71:13"), name: "pi", powered: powered,
      discovering: discovering)
  }

  func commands(_ outputs: [BridgeOutput]) -> [BridgeOutput] {
    outputs.filter { $0.topic == nil }
  }

  @Test("a new powered adapter is listed, announced, and starts discovering")
  func added() {
    var tracker = AdapterTracker(topics: Fixture.topics, scanning: filter)
    let outputs = tracker.update(adapter())
    #expect(outputs.eventTypes == ["adapter_added"])
    let list = outputs.published("/bridge/pi/adapters")
    #expect(list.first?.retain == true)
    #expect(
      list.first?.text
        == #"[{"id":"hci0","address":"00:1A:7D:DA:71:13","name":"pi","state":"poweredOn","discovering":false}]"#
    )
    #expect(commands(outputs) == [.startDiscovery(adapter: "hci0", filter: filter)])
    #expect(outputs.published("/bridge/pi/event").first?.retain == false)
  }

  @Test("discovery runs only while powered and resumes when powered again")
  func poweredOnly() {
    var tracker = AdapterTracker(topics: Fixture.topics, scanning: filter)
    let result1 = tracker.update(adapter(powered: false))
    #expect(commands(result1).isEmpty)
    #expect(!tracker.shouldDiscover("hci0"))
    let on = tracker.update(adapter())
    #expect(on.eventTypes == ["adapter_state"])
    #expect(
      on.published("/bridge/pi/event").first?.json?["data"] == [
        "adapter": "hci0", "state": "poweredOn", "previous": "poweredOff",
      ])
    #expect(commands(on) == [.startDiscovery(adapter: "hci0", filter: filter)])
    let result2 = tracker.update(adapter(discovering: true))
    #expect(commands(result2).isEmpty, "no second start")
    let result3 = tracker.update(adapter(powered: false))
    #expect(commands(result3).isEmpty, "no stop on an unpowered adapter")
    let result4 = tracker.update(adapter())
    #expect(commands(result4) == [.startDiscovery(adapter: "hci0", filter: filter)])
  }

  @Test("an unchanged snapshot publishes nothing")
  func unchanged() {
    var tracker = AdapterTracker(topics: Fixture.topics, scanning: nil)
    _ = tracker.update(adapter())
    let result5 = tracker.update(adapter())
    #expect(result5.isEmpty)
  }

  @Test("a removed adapter stays listed as unavailable and its return is a recovery")
  func removedAndRecovered() {
    var tracker = AdapterTracker(topics: Fixture.topics, scanning: filter)
    _ = tracker.update(adapter(discovering: true))
    let removed = tracker.remove(id: "hci0")
    #expect(removed.eventTypes == ["adapter_removed"])
    #expect(tracker.json.arrayValue?.first?["state"] == "unavailable")
    #expect(tracker.json.arrayValue?.first?["discovering"] == false)
    let result6 = tracker.remove(id: "hci0")
    #expect(result6.isEmpty)
    let back = tracker.update(adapter())
    #expect(back.eventTypes == ["adapter_recovered"])
    #expect(commands(back) == [.startDiscovery(adapter: "hci0", filter: filter)])
  }

  @Test("losing bluetoothd makes every adapter unavailable; its return recovers them")
  func stackLost() {
    var tracker = AdapterTracker(topics: Fixture.topics, scanning: filter)
    _ = tracker.update(adapter(discovering: true))
    var second = adapter()
    second.id = "hci1"
    _ = tracker.update(second)
    let lost = tracker.stackLost()
    #expect(lost.eventTypes == ["bluetooth_unavailable"])
    #expect(lost.published("/event").first?.json?["data"]?["adapters"] == ["hci0", "hci1"])
    #expect(tracker.adapters.values.allSatisfy { $0.state == .unavailable })
    let back = tracker.update(adapter())
    #expect(back.eventTypes == ["adapter_recovered"])
    #expect(commands(back).count == 1)
  }

  @Test("a reset shows as resetting and ends in a recovery")
  func resetting() {
    var tracker = AdapterTracker(topics: Fixture.topics, scanning: filter)
    _ = tracker.update(adapter(discovering: true))
    let reset = tracker.setResetting(id: "hci0", true)
    #expect(reset.eventTypes == ["adapter_state"])
    #expect(tracker.adapters["hci0"]?.state == .resetting)
    var off = adapter(powered: false)
    off.resetting = true
    _ = tracker.update(off)
    var on = adapter()
    on.resetting = false
    let recovered = tracker.update(on)
    #expect(recovered.eventTypes == ["adapter_recovered"])
    #expect(commands(recovered) == [.startDiscovery(adapter: "hci0", filter: filter)])
  }

  @Test("scan start, new filter and stop become discovery commands")
  func setScanning() {
    var tracker = AdapterTracker(topics: Fixture.topics, scanning: nil)
    let result7 = tracker.update(adapter())
    #expect(commands(result7).isEmpty)
    let result8 = tracker.setScanning(filter)
    #expect(result8 == [.startDiscovery(adapter: "hci0", filter: filter)])
    _ = tracker.update(adapter(discovering: true))
    let result9 = tracker.setScanning(filter)
    #expect(result9.isEmpty, "same filter: nothing to do")
    let wider = DiscoveryFilter()
    let result10 = tracker.setScanning(wider)
    #expect(result10 == [.startDiscovery(adapter: "hci0", filter: wider)])
    let result11 = tracker.setScanning(nil)
    #expect(result11 == [.stopDiscovery(adapter: "hci0")])
    let result12 = tracker.setScanning(nil)
    #expect(result12.isEmpty)
  }

  @Test("discovery stopped behind our back is restarted; a failed start is retried")
  func restartAndRetry() {
    var tracker = AdapterTracker(topics: Fixture.topics, scanning: filter)
    _ = tracker.update(adapter())
    _ = tracker.update(adapter(discovering: true))
    let result13 = tracker.update(adapter(discovering: false))
    #expect(commands(result13).count == 1)
    let failed = tracker.discoveryFailed(
      id: "hci0",
      error: CentralError(.inProgress, message: "busy", detail: "org.bluez.Error.InProgress"))
    #expect(failed.eventTypes == ["discovery_failed"])
    #expect(failed.first?.json?["data"]?["detail"] == "org.bluez.Error.InProgress")
    var renamed = adapter()
    renamed.name = "pi2"
    let result14 = tracker.update(renamed)
    #expect(commands(result14) == [.startDiscovery(adapter: "hci0", filter: filter)])
  }

  @Test("only allowed adapters scan")
  func allowedAdapters() {
    var tracker = AdapterTracker(
      topics: Fixture.topics, scanning: filter, allowedAdapters: ["hci1"])
    let result15 = tracker.update(adapter())
    #expect(commands(result15).isEmpty)
    var second = adapter()
    second.id = "hci1"
    let result16 = tracker.update(second)
    #expect(commands(result16) == [.startDiscovery(adapter: "hci1", filter: filter)])
  }

  @Test(
    "problems: none while a powered adapter scans as asked; each missing, off or idle one named")
  func problems() {
    var tracker = AdapterTracker(topics: Fixture.topics, scanning: filter)
    #expect(tracker.problems == ["no Bluetooth adapter (is bluetoothd running?)"])
    #expect(tracker.summary == "no adapter")
    _ = tracker.update(adapter())
    #expect(tracker.problems == ["adapter hci0 is not scanning although asked to"])
    _ = tracker.update(adapter(discovering: true))
    #expect(tracker.problems.isEmpty)
    #expect(tracker.summary == "adapter hci0 on, scanning")
    _ = tracker.update(adapter(powered: false))
    #expect(tracker.problems == ["adapter hci0 is powered off"])
    #expect(tracker.summary == "adapter hci0 off")
    // Without bluetooth.adapters, one powered adapter is enough.
    var second = adapter(discovering: true)
    second.id = "hci1"
    _ = tracker.update(second)
    #expect(tracker.problems.isEmpty)
    #expect(tracker.summary == "adapters hci0 off, hci1 on, scanning")
    _ = tracker.stackLost()
    #expect(tracker.problems == ["no Bluetooth adapter (is bluetoothd running?)"])
    // Not scanning when not asked to is fine.
    var idle = AdapterTracker(topics: Fixture.topics, scanning: nil)
    _ = idle.update(adapter())
    #expect(idle.problems.isEmpty)
  }

  @Test("problems with bluetooth.adapters: every listed adapter must be there and on")
  func configuredProblems() {
    var tracker = AdapterTracker(
      topics: Fixture.topics, scanning: nil, allowedAdapters: ["hci0", "hci1"])
    _ = tracker.update(adapter())
    #expect(tracker.problems == ["adapter hci1 (bluetooth.adapters) is not present"])
    var second = adapter()
    second.id = "hci1"
    second.resetting = true
    _ = tracker.update(second)
    #expect(tracker.problems == ["adapter hci1 is being reset"])
    second.resetting = false
    _ = tracker.update(second)
    #expect(tracker.problems.isEmpty)
    _ = tracker.remove(id: "hci0")
    #expect(tracker.problems == ["adapter hci0 (bluetooth.adapters) is not present"])
  }

  @Test("the stack's version comes from the first adapter that reports one")
  func stackVersion() {
    var tracker = AdapterTracker(topics: Fixture.topics, scanning: nil)
    _ = tracker.update(adapter())
    #expect(tracker.stackVersion == nil)
    var second = adapter()
    second.id = "hci1"
    second.stackVersion = "5.66"
    _ = tracker.update(second)
    #expect(tracker.stackVersion == "5.66")
  }

  @Test(
    "a stack that refuses us: a bluetooth_refused event, and health says why until an adapter shows"
  )
  func refused() {
    var tracker = AdapterTracker(topics: Fixture.topics, scanning: filter)
    let error = CentralError(
      .accessDenied, message: "the system bus denies user gatt2mqtt access to bluetoothd",
      detail: "org.freedesktop.DBus.Error.AccessDenied")
    let outputs = tracker.stackRefused(error)
    #expect(outputs.eventTypes == ["bluetooth_refused"])
    #expect(
      outputs.published("/bridge/pi/event").first?.text
        == #"{"type":"bluetooth_refused","data":{"error":"access_denied","message":"the system bus denies user gatt2mqtt access to bluetoothd","detail":"org.freedesktop.DBus.Error.AccessDenied"}}"#
    )
    #expect(tracker.problems == ["the system bus denies user gatt2mqtt access to bluetoothd"])
    _ = tracker.update(adapter(discovering: true))
    #expect(tracker.refusal == nil)
    #expect(tracker.problems.isEmpty)
    // Served again by a stack with no adapter: the refusal ends all the same.
    var empty = AdapterTracker(topics: Fixture.topics, scanning: nil)
    _ = empty.stackRefused(error)
    #expect(empty.stackRefused(nil).isEmpty)
    #expect(empty.refusal == nil)
    #expect(empty.problems == ["no Bluetooth adapter (is bluetoothd running?)"])
  }
}
