import BridgeCore
import Testing

@Suite("GATT bridge: reads, writes, notifications, transfer")
struct GATTBridgeOperationTests {
  typealias H = GATTHarness

  func readyHarness(_ configuration: GATTBridge.Configuration = .init()) -> GATTHarness {
    var configuration = configuration
    configuration.policy = ConnectionPolicy(addresses: [H.sensor])
    var h = GATTHarness(configuration)
    h.finishAll(h.ready())
    return h
  }

  @Test("a read publishes the value, then an ok result with the transaction")
  func read() throws {
    var h = readyHarness()
    let path = H.path(H.battery, H.batteryLevel)
    let asked = h.send(.get(path), #"{"transaction":"t1"}"#)
    let operation = try #require(asked.operations.first)
    #expect(operation.kind == .read)
    let done = h.finish(operation, .success([0x50]))
    #expect(
      done.publishedTopics == [
        "gatt2mqtt/A4C1381E29DF/gatt/180f/2a19", "gatt2mqtt/A4C1381E29DF/gatt/180f/2a19/result",
      ])
    #expect(done[0].payload == Array("50".utf8))
    #expect(done[0].retain == false)
    #expect(h.results(path).last?["status"] == "ok")
    #expect(h.results(path).last?["transaction"] == "t1")
  }

  @Test("operations on one characteristic never overlap and keep their order")
  func perCharacteristicOrder() throws {
    var h = readyHarness()
    let path = H.path(H.control, H.command)
    var handedOut: [GATTOperation] = []
    for index in 0..<20 {
      handedOut +=
        h.send(.set(path), #"{"hex":"\#(String(format2: index))","transaction":\#(index)}"#)
        .operations
    }
    // Only the first goes out; another characteristic is not held up.
    #expect(handedOut.count == 1)
    let other = h.send(.get(H.path(H.battery, H.batteryLevel)), "").operations
    #expect(other.count == 1)
    var written: [[UInt8]] = []
    var current = handedOut[0]
    while true {
      if case .write(let value, let withResponse) = current.kind {
        #expect(withResponse)
        written.append(value)
      }
      let next = h.finish(current).operations
      #expect(next.count <= 1)
      guard let following = next.first else { break }
      current = following
    }
    #expect(written == (0..<20).map { [UInt8($0)] })
    let transactions = h.results(path).map { $0["transaction"] }
    #expect(transactions == (0..<20).map { .integer(Int64($0)) })
    #expect(h.results(path).allSatisfy { $0["status"] == "ok" })
  }

  @Test("a full queue answers busy")
  func queueLimit() {
    var h = readyHarness(.init(queueLimit: 3))
    let path = H.path(H.control, H.command)
    for _ in 0..<5 { h.send(.set(path), "01") }
    // One running, three waiting, one refused.
    #expect(h.results(path).map { $0["error"] } == [.string("busy")])
  }

  @Test("the write type follows the flags or the request")
  func writeType() throws {
    var h = readyHarness()
    let stream = H.path(H.control, H.stream)
    let command = H.path(H.control, H.command)
    let unacknowledged = try #require(h.send(.set(stream), "0102").operations.first)
    #expect(unacknowledged.kind == .write([1, 2], withResponse: false))
    h.send(.set(command), #"{"hex":"01","response":false}"#)
    #expect(h.results(command).last?["error"] == "not_permitted")
    h.send(.set(stream), #"{"utf8":"hi","response":true}"#)
    #expect(h.results(stream).last?["error"] == "not_permitted")
  }

  @Test("the write allow-list matches the device, not the spelling of its id in the topic")
  func allowListMatchesTheDevice() throws {
    var h = readyHarness(
      .init(writable: [try CharacteristicSelector(parsing: "A4C1381E29DF/fff0/fff2")]))
    for spelling in ["A4C1381E29DF", "a4c1381e29df", "A4:C1:38:1E:29:DF", "a4-c1-38-1e-29-df"] {
      let respelled = CharacteristicPath(
        device: try DeviceID(friendlyName: spelling), service: H.control,
        characteristic: H.stream)
      let write = h.send(.set(respelled), "01")
      #expect(write.operations.count == 1, "\(spelling)")
      h.finishAll(write)
    }
    // Another characteristic of the device stays refused.
    let command = H.path(H.control, H.command)
    h.send(.set(command), "01")
    #expect(h.results(command).last?["error"] == "not_permitted")
  }

  @Test("every error code of TOPICS.md is produced where it belongs")
  func errorCodes() throws {
    var h = readyHarness(
      .init(writable: [try CharacteristicSelector(parsing: "*/fff0/fff2")]))
    let command = H.path(H.control, H.command)
    let stream = H.path(H.control, H.stream)
    let battery = H.path(H.battery, H.batteryLevel)
    let hr = H.path(H.heartRate, H.heartRateMeasurement)

    h.send(.set(stream), "zz")
    #expect(h.results(stream).last?["error"] == "invalid_payload")
    h.send(.get(battery), "[1]")
    #expect(h.results(battery).last?["error"] == "invalid_payload")
    h.send(.notify(hr), "maybe")
    #expect(h.results(hr).last?["error"] == "invalid_payload")

    let stranger = H.path(H.battery, H.batteryLevel, on: Fixture.address("11:22:33:44:55:66"))
    h.send(.get(stranger), "")
    #expect(h.results(stranger).last?["error"] == "unknown_device")

    let missing = H.path(H.battery, BluetoothUUID(uuid16: 0x2A1A))
    h.send(.get(missing), "")
    #expect(h.results(missing).last?["error"] == "unknown_characteristic")

    h.send(.get(hr), "")
    #expect(h.results(hr).last?["error"] == "not_permitted")
    h.send(.set(command), "01")
    #expect(h.results(command).last?["error"] == "not_permitted")
    #expect(h.results(command).last?["message"]?.stringValue?.contains("writable") == true)
    // A refusal echoes the request's transaction.
    h.send(.set(command), #"{"hex":"01","transaction":"t-7"}"#)
    #expect(h.results(command).last?["error"] == "not_permitted")
    #expect(h.results(command).last?["transaction"] == "t-7")

    h.send(.set(stream), String(repeating: "00", count: 21))
    #expect(h.results(stream).last?["error"] == "too_long")
    let ok = try #require(h.send(.set(stream), String(repeating: "00", count: 20)).operations.first)
    h.finish(ok, .failure(CentralError(.timeout, message: "no answer")))
    #expect(h.results(stream).last?["error"] == "timeout")

    let read = try #require(h.send(.get(battery), "").operations.first)
    h.finish(
      read,
      .failure(
        CentralError(.bluezError, message: "read failed", detail: "org.bluez.Error.Failed")))
    #expect(h.results(battery).last?["error"] == "bluez_error")
    #expect(h.results(battery).last?["bluez"] == "org.bluez.Error.Failed")

    h.event(.connectionChanged(H.sensor, connected: false))
    h.send(.get(battery), "")
    #expect(h.results(battery).last?["error"] == "not_connected")
  }

  @Test("values longer than the ATT limit are refused with too_long")
  func attLimit() {
    var h = readyHarness()
    let command = H.path(H.control, H.command)
    h.send(.set(command), String(repeating: "ab", count: 513))
    #expect(h.results(command).last?["error"] == "too_long")
    #expect(h.send(.set(command), String(repeating: "ab", count: 512)).operations.count == 1)
  }

  @Test("queued operations fail with not_connected when the link drops")
  func queuedFailOnDisconnect() {
    var h = readyHarness()
    let command = H.path(H.control, H.command)
    for _ in 0..<3 { h.send(.set(command), "01") }
    h.event(.connectionChanged(H.sensor, connected: false))
    #expect(
      h.results(command).map { $0["error"] } == [
        .string("not_connected"), .string("not_connected"),
      ])
  }

  @Test("MQTT 5 requests are answered on their response topic with the correlation data")
  func mqtt5Reply() {
    var h = readyHarness()
    let reply = ReplyAddress(topic: "app/replies", correlationData: [1, 2, 3])
    let produced = h.send(.set(H.path(H.control, H.command)), "zz", reply: reply)
    let replies = produced.compactMap { output -> ReplyAddress? in
      if case .reply(let address, _) = output { address } else { nil }
    }
    #expect(replies == [reply])
  }

  @Test("notifications follow /notify and config, are re-armed on every connection, never twice")
  func rearm() throws {
    var h = GATTHarness(
      .init(
        policy: ConnectionPolicy(addresses: [H.sensor]),
        notify: [try CharacteristicSelector(parsing: "*/180f/2a19")]))
    let hr = H.path(H.heartRate, H.heartRateMeasurement)
    // Desired before the device is connected: remembered, and said so (status "pending").
    let pending = h.send(.notify(hr), "on")
    #expect(pending.map(\.topic) == ["gatt2mqtt/A4C1381E29DF/gatt/180d/2a37/result"])
    #expect(pending.first?.json?["status"] == "pending")
    // Named by a lower-case address, the same device: one wish, not two.
    let lower = CharacteristicPath(
      device: try DeviceID(friendlyName: "a4c1381e29df"), service: H.heartRate,
      characteristic: H.heartRateMeasurement)
    _ = h.send(.notify(lower), "on")
    let arming = h.ready()
    let enabled = Set(
      arming.operations.filter { $0.kind == .notify(true) }.map(\.characteristic.characteristic))
    #expect(
      enabled == [H.heartRateMeasurement, H.batteryLevel, GATTBridge.defaultTransferCharacteristic])
    h.finishAll(arming)
    #expect(h.results(hr).last?["notifying"] == true)
    // Values arrive in order, published in the format.
    for seq in 0..<100 {
      let produced = h.event(.notification(H.id(H.heartRate, H.heartRateMeasurement), [UInt8(seq)]))
      #expect(produced.first?.payload == Array(String(format2: seq).utf8))
    }
    // The services resolved again on the same link: nothing is armed twice.
    for operation in arming.operations {
      h.event(.notifyingChanged(operation.characteristic, true))
    }
    #expect(h.event(.servicesResolved(H.sensor, H.tree)).operations.isEmpty)
    // Reconnect: armed again, once each.
    h.event(.connectionChanged(H.sensor, connected: false))
    h.tick(2)
    h.connected(H.sensor)
    let again = h.event(.servicesResolved(H.sensor, H.tree)).operations
    #expect(Set(again.map(\.characteristic.characteristic)) == enabled)
    #expect(again.count == 3)
    h.finishAll(again)
    // Off: turned off now, and not re-armed at the next connection.
    let off = h.send(.notify(hr), "off").operations
    #expect(off.map(\.kind) == [.notify(false)])
    h.finish(off[0])
    #expect(h.results(hr).last?["notifying"] == false)
    h.event(.connectionChanged(H.sensor, connected: false))
    h.tick(2)
    h.connected(H.sensor)
    let third = h.event(.servicesResolved(H.sensor, H.tree)).operations
    #expect(!third.contains { $0.characteristic.characteristic == H.heartRateMeasurement })
  }

  @Test(
    "transfer chunks are reassembled into one message; a partial text is reported on disconnect")
  func transfer() throws {
    var h = readyHarness(.init(transferMaxBytes: 100))
    let id = H.id(GATTBridge.defaultTransferService, GATTBridge.defaultTransferCharacteristic)
    let text = Array("Grüße aus dem Labor — 🚀".utf8)
    var published: [[UInt8]] = []
    for start in stride(from: 0, to: text.count, by: 5) {
      let chunk = Array(text[start..<min(start + 5, text.count)])
      published += h.event(.notification(id, chunk)).compactMap(\.payload)
    }
    #expect(published.isEmpty)
    let done = h.event(.notification(id, Array("EOM".utf8)))
    #expect(done.publishedTopics == ["gatt2mqtt/A4C1381E29DF/transfer"])
    #expect(done.first?.payload == text)
    // Too long.
    for _ in 0..<30 { h.event(.notification(id, Array("abcde".utf8))) }
    #expect(h.events("transfer_too_long").count == 1)
    #expect(h.event(.notification(id, Array("EOM".utf8))).isEmpty)
    // Partial then disconnect.
    h.event(.notification(id, Array("half".utf8)))
    h.event(.connectionChanged(H.sensor, connected: false))
    #expect(h.events("transfer_aborted").first?["bytes"] == 4)
    #expect(h.bridge.counters.transfers == 1)
  }

  @Test("a text of 1 MiB in 20-byte chunks (the default limit at the smallest MTU) arrives whole")
  func transferAtTheLimit() throws {
    var h = readyHarness()
    let id = H.id(GATTBridge.defaultTransferService, GATTBridge.defaultTransferCharacteristic)
    let limit = GATTBridge.Configuration().transferMaxBytes
    let text = (0..<limit).map { UInt8(truncatingIfNeeded: $0 % 251) }
    // The limit itself is not too long. (This does not catch the reassembler being copied per
    // chunk again, which cost 14 s here instead of 0.07 s: only its time would show it.)
    for start in stride(from: 0, to: text.count, by: 20) {
      h.event(.notification(id, Array(text[start..<min(start + 20, text.count)])))
    }
    let done = h.event(.notification(id, Array("EOM".utf8)))
    #expect(done.first?.payload == text)
    #expect(h.events("transfer_too_long").isEmpty)
  }

  @Test("`/notify` wishes are bounded: a new one past the bound is refused busy, known ones change")
  func notifyWishesAreBounded() throws {
    var h = GATTHarness(.init(policy: ConnectionPolicy(addresses: [H.sensor])))
    func path(_ n: Int) throws -> CharacteristicPath {
      CharacteristicPath(
        device: try DeviceID(friendlyName: "dev\(n)"), service: H.heartRate,
        characteristic: H.heartRateMeasurement)
    }
    for n in 0..<GATTBridge.maxNotifyWishes {
      #expect(h.send(.notify(try path(n)), "on").first?.json?["status"] == "pending")
    }
    let refused = h.send(.notify(try path(GATTBridge.maxNotifyWishes)), "on")
    #expect(refused.first?.json?["status"] == "error")
    #expect(refused.first?.json?["error"] == "busy")
    // A wish already kept still changes.
    #expect(h.send(.notify(try path(7)), "off").first?.json?["status"] == "pending")
  }

  @Test("StartNotify answered InProgress while bluetoothd re-arms it counts as on")
  func notifyInProgressIsOn() throws {
    var h = GATTHarness(.init(policy: ConnectionPolicy(addresses: [H.sensor])))
    let hr = H.path(H.heartRate, H.heartRateMeasurement)
    h.send(.notify(hr), "on")
    let arming = h.ready().operations.filter {
      $0.characteristic.characteristic == H.heartRateMeasurement
    }
    let operation = try #require(arming.first)
    h.finish(operation, .failure(CentralError(.inProgress, message: "busy")))
    #expect(h.results(hr).last?["status"] == "ok")
    #expect(h.results(hr).last?["notifying"] == true)
    // A read failing with InProgress stays an error.
    let battery = H.path(H.battery, H.batteryLevel)
    let read = try #require(h.send(.get(battery), "").operations.first)
    h.finish(read, .failure(CentralError(.inProgress, message: "busy")))
    #expect(h.results(battery).last?["error"] == "in_progress")
  }

  @Test(
    "a tree that grows while notifications are being armed: published again, nothing armed twice; the same tree again: nothing"
  )
  func treeGrowsWhileArming() throws {
    typealias H = GATTHarness
    var h = GATTHarness(.init(policy: ConnectionPolicy(addresses: [H.sensor])))
    let hr = H.path(H.heartRate, H.heartRateMeasurement)
    h.send(.notify(hr), "on")
    // BlueZ said ServicesResolved when only the heart-rate service was exported.
    let partial = GATTTree(services: H.tree.services.filter { $0.uuid == H.heartRate })
    let arming = h.ready(tree: partial).operations
    #expect(arming.map(\.kind) == [.notify(true)])
    // The other objects appear while that StartNotify runs: the full tree, no second arming
    // of the heart rate (the transfer characteristic, new in this tree, is armed).
    let grown = h.event(.servicesResolved(H.sensor, H.tree))
    #expect(
      grown.operations.map(\.characteristic.characteristic)
        == [GATTBridge.defaultTransferCharacteristic])
    #expect(grown.publishedTopics.contains("gatt2mqtt/A4C1381E29DF/gatt"))
    // The same tree again changes nothing.
    #expect(h.event(.servicesResolved(H.sensor, H.tree)).isEmpty)
  }

  @Test("a notification state the stack changes on its own is published with cause stack, once")
  func notifyStateFromStack() throws {
    var h = readyHarness()
    let hr = H.path(H.heartRate, H.heartRateMeasurement)
    let id = H.id(H.heartRate, H.heartRateMeasurement)
    let on = try #require(h.send(.notify(hr), "on").operations.first)
    // The stack's own signal while our operation runs is that operation's: no second result.
    #expect(h.event(.notifyingChanged(id, true)).isEmpty)
    h.finish(on)
    let results = h.results(hr).count
    #expect(h.event(.notifyingChanged(id, true)).isEmpty)  // no change
    h.event(.notifyingChanged(id, false))
    #expect(h.results(hr).count == results + 1)
    #expect(h.results(hr).last?["notifying"] == false)
    #expect(h.results(hr).last?["cause"] == "stack")
    #expect(h.results(hr).last?["status"] == "ok")
  }

  @Test(
    "a backlog in a notification channel: one notification_backlog event naming the characteristic, counted in health"
  )
  func notificationBacklog() throws {
    var h = readyHarness()
    let id = H.id(H.heartRate, H.heartRateMeasurement)
    let outputs = h.event(.notificationBacklog(id, waiting: 200))
    #expect(outputs.count == 1)
    #expect(
      h.events("notification_backlog") == [
        [
          "device": "A4C1381E29DF", "address": "A4:C1:38:1E:29:DF", "service": "180d",
          "characteristic": "2a37", "waiting": 200,
        ]
      ])
    #expect(h.bridge.healthJSON["notification_backlogs"] == .integer(1))
    // A device the bridge has no link for: counted, no event.
    let stranger = GATTCharacteristicID(
      address: Fixture.address("11:22:33:44:55:66"), service: H.heartRate,
      characteristic: H.heartRateMeasurement)
    #expect(h.event(.notificationBacklog(stranger, waiting: 150)).isEmpty)
    #expect(h.bridge.healthJSON["notification_backlogs"] == .integer(2))
  }

  @Test("notify operations carry the method of the first matching rule, else the default")
  func notifyMethods() throws {
    var h = readyHarness(
      .init(
        notifyMethod: .acquire,
        notifyMethods: [try NotifyMethodRule(parsing: "*/180d/2a37=start")]))
    let hr = H.path(H.heartRate, H.heartRateMeasurement)
    let battery = H.path(H.battery, H.batteryLevel)
    let on = try #require(h.send(.notify(hr), "on").operations.first)
    #expect(on.kind == .notify(true) && on.notifyMethod == .start)
    let level = try #require(h.send(.notify(battery), "on").operations.first)
    #expect(level.kind == .notify(true) && level.notifyMethod == .acquire)
  }

  /// A device with a friendly name, rules naming it by address (what the configuration's
  /// `devices:` section writes): the notification is armed and its value takes the rule's
  /// format. Both rules were missed while only the name was compared.
  @Test("notify and format rules that name a renamed device by its address still apply")
  func rulesByAddressForANamedDevice() throws {
    var configuration = GATTBridge.Configuration(
      policy: ConnectionPolicy(addresses: [H.sensor]),
      formats: [try FormatRule(parsing: "A4:C1:38:1E:29:DF/180f/2a19=decoded")],
      notify: [try CharacteristicSelector(parsing: "A4:C1:38:1E:29:DF/180f/2a19")])
    configuration.names = [H.sensor: try DeviceID(friendlyName: "porch")]
    var h = GATTHarness(configuration)
    let arming = h.ready()
    #expect(
      arming.operations.filter { $0.kind == .notify(true) }.map(\.characteristic.characteristic)
        .contains(H.batteryLevel))
    h.finishAll(arming)
    let produced = h.event(.notification(H.id(H.battery, H.batteryLevel), [87]))
    #expect(produced.first?.topic == "gatt2mqtt/porch/gatt/180f/2a19")
    #expect(produced.first?.json?.objectValue?["battery_level"] == 87)
  }

  @Test("the decoded format publishes typed JSON for known characteristics")
  func decoded() throws {
    var h = readyHarness(.init(formats: [try FormatRule(parsing: "*/180f/2a19=decoded")]))
    let path = H.path(H.battery, H.batteryLevel)
    let read = try #require(h.send(.get(path), "").operations.first)
    let done = h.finish(read, .success([87]))
    #expect(done.first?.json?.objectValue?["battery_level"] == 87)
  }
}

extension String {
  /// Two lower-case hex digits.
  init(format2 value: Int) {
    let digits = Array("0123456789abcdef")
    self = String([digits[(value >> 4) & 15], digits[value & 15]])
  }
}
