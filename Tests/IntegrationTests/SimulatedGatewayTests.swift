import BridgeCore
import Foundation
import Mosquitto
import SimulatedRadio
import TestSupport
import Testing

/// The whole bridge, end to end, through the simulated radio and a real mosquitto: one test
/// per group of mission rows (C1–C11, P1–P6). These complement the lab scenarios (real
/// bluetoothd), they do not replace them.
@Suite(
  "The gateway with the simulated radio, mission rows end to end", .serialized,
  .enabled(if: Broker.isAvailable, "mosquitto is not installed (apt-get install mosquitto)"))
struct SimulatedGatewayTests {
  static let actuator = "5a1d0000-6a63-4b3c-9c5e-3b5c7d2a0001"
  static let command = "5a1d0001-6a63-4b3c-9c5e-3b5c7d2a0001"
  static let status = "5a1d0003-6a63-4b3c-9c5e-3b5c7d2a0001"

  @Test(
    "the built-in world, as scripts/gateway runs it: adverts, GATT values, peripheral events (within 30 s; a few on an idle machine)"
  )
  func builtInWorldDemo() async throws {
    let broker = try Broker()
    try await broker.start()
    let (observer, seen) = try await observe(broker, "gatt2mqtt/#")
    // The options scripts/gateway adds when there is no adapter.
    let gateway = try GatewayProcess(
      broker: broker,
      extra: [
        "--radio", "simulated", "--bluetooth.connect.names",
        "sim-battery,sim-heart-rate,sim-actuator,sim-transfer", "--bluetooth.gatt.notify",
        "*/180d/2a37,*/180f/2a19", "--peripheral.enabled", "true",
      ])
    let events = "gatt2mqtt/bridge/\(gateway.id)/peripheral/event"
    #expect(
      await eventually(timeout: 30) {
        let topics = seen.messages.map(\.topic)
        return topics.contains { $0.hasSuffix("/advertisement") }
          && topics.contains { $0.hasSuffix("/gatt/180d/2a37") }
          && topics.contains { $0.hasSuffix("/gatt/180f/2a19") }
          && topics.contains { $0.hasSuffix("/transfer") }
          && topics.contains(events)
      }, "topics: \(Set(seen.messages.map(\.topic)).sorted())")
    await observer.shutdown()
  }

  @Test("C1 P1: the adapter's power cycles are published; scanning and the service come back")
  func adapterPowerCycles() async throws {
    let run = try await SimulatedRun(
      world: """
        adapters:
          - id: hci0
            power_cycle_every: 2
            off_for: 1
        advertising_interval: 0.1
        devices:
          - kind: beacon
            name: b
        """, ["--peripheral.enabled", "true"])
    let adapters = "\(run.base)/adapters"
    let states: @Sendable () -> [String] = {
      run.json(adapters).compactMap { $0.arrayValue?.first?["state"]?.stringValue }
    }
    #expect(
      await eventually(timeout: 15) {
        let s = states()
        guard let off = s.firstIndex(of: "poweredOff") else { return false }
        return s[off...].contains("poweredOn")
      }, "adapters: \(run.messages(adapters).compactMap(\.text))")
    let peripheral = "\(run.base)/peripheral/state"
    let roles: @Sendable () -> [String] = {
      run.json(peripheral).compactMap { $0["state"]?.stringValue }
    }
    #expect(
      await eventually(timeout: 15) {
        let s = roles()
        guard let down = s.firstIndex(of: "unavailable") else { return false }
        return s[down...].contains("advertising")
      }, "peripheral: \(roles())")
    // Scanning resumed by itself after the adapter came back: discovering again, new
    // advertisements after the last power-on.
    let beacon = try #require(await run.device(named: "b"))
    let powerOn = try #require(
      run.seen.messages.lastIndex { $0.topic == adapters && ($0.text ?? "").contains("poweredOn") })
    #expect(
      await eventually(timeout: 10) {
        run.seen.messages.suffix(from: powerOn).contains {
          $0.topic == "gatt2mqtt/\(beacon)/advertisement"
        }
      })
    #expect(run.json(adapters).contains { $0.arrayValue?.first?["discovering"]?.boolValue == true })
    await run.finish()
  }

  @Test("C2 C3 C11: advertisements with every field, the device registry, presence")
  func advertisementsRegistryPresence() async throws {
    let run = try await SimulatedRun(
      world: """
        advertising_interval: 0.2
        devices:
          - kind: battery
            name: bat
            rssi: -50
          - kind: beacon
            name: far
            rssi: -100
        """, ["--bluetooth.advertisement_min_interval", "0.1"])
    let battery = try #require(await run.device(named: "bat"))
    let beacon = try #require(await run.device(named: "far"))
    let advert = try #require(run.json("gatt2mqtt/\(battery)/advertisement").first)
    #expect(advert["addr_type"]?.stringValue == "public")
    #expect((advert["rssi"]?.integerValue).map { (-56 ... -44).contains($0) } == true)
    #expect(advert["txpower"]?.integerValue == -8)
    #expect(advert["uuids"]?.arrayValue?.compactMap(\.stringValue) == ["180f"])
    #expect(advert["servicedata"]?["180f"]?.stringValue == "64")
    #expect(advert["gw"]?.stringValue == run.gateway.id)
    // Beacons: new manufacturer data every time, all published (RSSI follows too: C2).
    #expect(await eventually { run.json("gatt2mqtt/\(beacon)/advertisement").count >= 5 })
    let data = run.json("gatt2mqtt/\(beacon)/advertisement").compactMap {
      $0["manufacturerdata"]?["ffff"]?.stringValue
    }
    #expect(Set(data).count == data.count && data.count >= 5)
    // C3: one registry, retained per-device state.
    #expect(
      await eventually {
        let devices = run.messages("\(run.base)/devices").last?.text ?? ""
        return devices.contains(battery) && devices.contains(beacon)
      })
    #expect(await run.retained("gatt2mqtt/\(battery)/availability") != nil)
    // C11: the strong device is present, the weak one away, from the smoothed RSSI.
    #expect(
      await eventually(timeout: 15) {
        run.json("gatt2mqtt/\(battery)/presence").last?["state"]?.stringValue == "present"
          && run.json("gatt2mqtt/\(beacon)/presence").last?["state"]?.stringValue == "away"
      },
      "presence: \(run.messages("gatt2mqtt/\(battery)/presence").compactMap(\.text)) \(run.messages("gatt2mqtt/\(beacon)/presence").compactMap(\.text))"
    )
    await run.finish()
  }

  @Test(
    "device/remove: forgotten, retained state (its link's too) cleared, removed from the stack; it comes back"
  )
  func deviceRemove() async throws {
    let run = try await SimulatedRun(
      world: """
        advertising_interval: 0.2
        devices:
          - kind: battery
            name: bat
        """, ["--bluetooth.connect.names", "bat"])
    let battery = try #require(await run.device(named: "bat"))
    #expect(await eventually { run.connectionStates(battery).last == "ready" })
    @Sendable func discovered() -> Int {
      run.json("\(run.base)/event").filter {
        $0["type"]?.stringValue == "device_discovered"
          && $0["data"]?["id"]?.stringValue == battery
      }.count
    }
    #expect(await eventually { discovered() == 1 })
    try await run.publish(
      "\(run.base)/request/device/remove", #"{"device":"\#(battery)","transaction":"rm"}"#)
    #expect(await eventually { !run.json("\(run.base)/response/device/remove").isEmpty })
    let response = try #require(run.json("\(run.base)/response/device/remove").first)
    #expect(response["status"] == "ok")
    #expect(response["transaction"] == "rm")
    #expect(response["data"]?["forgotten"] == true)
    #expect(
      await eventually {
        run.messages("gatt2mqtt/\(battery)/availability").contains { $0.payload.isEmpty }
      })
    // Its link is forgotten with it: the retained connection and GATT tree are cleared (the
    // simulated stack removed the device too, dropping the link without a word on MQTT).
    for topic in ["connection", "gatt"] {
      #expect(
        await eventually {
          run.messages("gatt2mqtt/\(battery)/\(topic)").contains { $0.payload.isEmpty }
        }, "\(topic)")
    }
    let cleared = run.messages("gatt2mqtt/\(battery)/connection").lastIndex { $0.payload.isEmpty }
    // Its next advertisement makes it a new device again, which the policy connects anew.
    #expect(await eventually { discovered() == 2 })
    #expect(
      await eventually {
        let after = run.messages("gatt2mqtt/\(battery)/connection").suffix(from: (cleared ?? 0) + 1)
        return after.contains { String(decoding: $0.payload, as: UTF8.self).contains(#""ready""#) }
      }, "\(run.connectionStates(battery))")
    await run.finish()
  }

  @Test("C2: the service-UUID filter publishes only matching devices")
  func filter() async throws {
    let run = try await SimulatedRun(
      world: """
        advertising_interval: 0.1
        devices:
          - kind: battery
            name: bat
          - kind: heart_rate
            name: hr
        """, ["--bluetooth.filter.uuids", "180d"])
    let hr = try #require(await run.device(named: "hr"))
    try await Task.sleep(for: .seconds(1))
    let publishers = Set(
      run.seen.messages.filter { $0.topic.hasSuffix("/advertisement") }.map {
        $0.topic.split(separator: "/")[1]
      })
    #expect(publishers == [Substring(hr)])
    await run.finish()
  }

  @Test("C3 C4 C5 C6 C7 C8 C10: connect, GATT tree, read, notify, write, errors, disconnect")
  func centralRole() async throws {
    let run = try await SimulatedRun(
      world: """
        advertising_interval: 0.2
        devices:
          - kind: battery
            name: sim-bat
          - kind: heart_rate
            name: sim-hr
            notify_rate: 20
          - kind: actuator
            name: sim-act
        """,
      ["--bluetooth.connect.names", "sim-*", "--bluetooth.gatt.notify", "*/180d/2a37"])
    let battery = try #require(await run.device(named: "sim-bat"))
    let hr = try #require(await run.device(named: "sim-hr"))
    let actuator = try #require(await run.device(named: "sim-act"))
    for device in [battery, hr, actuator] {
      #expect(
        await eventually { run.connectionStates(device).last == "ready" },
        "\(device): \(run.connectionStates(device))")
      let states = run.connectionStates(device)
      #expect(Array(states.drop { $0 == "disconnected" }.prefix(2)) == ["connecting", "connected"])
    }
    // C5: the retained tree.
    let tree = try #require(run.json("gatt2mqtt/\(hr)/gatt").last)
    let services = tree["services"]?.arrayValue ?? []
    let heart = try #require(services.first { $0["uuid"]?.stringValue == "180d" })
    let measurement = try #require(
      heart["characteristics"]?.arrayValue?.first { $0["uuid"]?.stringValue == "2a37" })
    #expect(measurement["flags"]?.arrayValue?.compactMap(\.stringValue) == ["notify"])
    #expect(
      await run.retained("gatt2mqtt/\(hr)/gatt")?.text
        == run.messages("gatt2mqtt/\(hr)/gatt").last?.text)
    // C7: notifications turned on by config, published as they come.
    let values = "gatt2mqtt/\(hr)/gatt/180d/2a37"
    #expect(await eventually { run.messages(values).count >= 20 })
    #expect(
      run.messages(values).allSatisfy {
        ($0.text ?? "").count == 4 && $0.text?.hasPrefix("00") == true
      })
    // C6: a read request, answered on the value topic and with a result.
    let level = "gatt2mqtt/\(battery)/gatt/180f/2a19"
    try await run.publish("\(level)/get", #"{"transaction":"t1"}"#)
    #expect(await eventually { run.messages(level).last?.text == "64" })
    #expect(
      await eventually {
        run.json("\(level)/result").contains {
          $0["op"]?.stringValue == "read" && $0["status"]?.stringValue == "ok"
            && $0["transaction"]?.stringValue == "t1"
        }
      })
    // C8: a write with response; the status characteristic, notifying on request, reflects it.
    let status = "gatt2mqtt/\(actuator)/gatt/\(Self.actuator)/\(Self.status)"
    let command = "gatt2mqtt/\(actuator)/gatt/\(Self.actuator)/\(Self.command)"
    try await run.publish("\(status)/notify", "on", retain: true)
    #expect(
      await eventually {
        run.json("\(status)/result").contains {
          $0["op"]?.stringValue == "notify" && $0["status"]?.stringValue == "ok"
        }
      })
    try await run.publish("\(command)/set", #"{"hex":"0102","transaction":"w1"}"#)
    #expect(await eventually { run.messages(status).contains { $0.text == "0102" } })
    #expect(
      await eventually {
        run.json("\(command)/result").contains {
          $0["op"]?.stringValue == "write" && $0["status"]?.stringValue == "ok"
        }
      })
    // Errors come back as results: a read-only characteristic, a malformed payload.
    try await run.publish("\(level)/set", #"{"hex":"01"}"#)
    try await run.publish("\(command)/set", #"{"hex":"zz"}"#)
    #expect(
      await eventually {
        run.json("\(level)/result").contains { $0["error"]?.stringValue == "not_permitted" }
          && run.json("\(command)/result").contains {
            $0["error"]?.stringValue == "invalid_payload"
          }
      },
      "\(run.messages("\(level)/result").compactMap(\.text)) \(run.messages("\(command)/result").compactMap(\.text))"
    )
    // C10: disconnect on request: notifications stop and the link stays down; reconnect on
    // request re-arms them.
    try await run.publish("gatt2mqtt/\(hr)/connection/set", #"{"state":"disconnected"}"#)
    #expect(await eventually { run.connectionStates(hr).last == "disconnected" })
    try await Task.sleep(for: .milliseconds(300))
    let stopped = run.messages(values).count
    try await Task.sleep(for: .seconds(1))
    #expect(run.messages(values).count == stopped, "values after the disconnect")
    #expect(run.connectionStates(hr).last == "disconnected")
    try await run.publish("gatt2mqtt/\(hr)/connection/set", #"{"state":"connected"}"#)
    #expect(await eventually { run.connectionStates(hr).last == "ready" })
    #expect(await eventually { run.messages(values).count >= stopped + 10 })
    #expect(run.gateway.child.isRunning)
    await run.finish()
  }

  @Test(
    "C4: failed and timed-out connections are reported with their error and retried",
    arguments: [
      ("connect_failure_rate: 1", ["--bluetooth.connect.retry_min_delay", "0.2"], "aborted"),
      ("connect_latency: 5", ["--bluetooth.connect.timeout", "0.5"], "timeout"),
    ])
  func connectFailures(setting: String, options: [String], error: String) async throws {
    let run = try await SimulatedRun(
      world: """
        advertising_interval: 0.2
        \(setting)
        devices:
          - kind: battery
            name: sim-bat
        """, ["--bluetooth.connect.names", "sim-*"] + options)
    let topic = "gatt2mqtt/\(try #require(await run.device(named: "sim-bat")))/connection"
    #expect(
      await eventually(timeout: 15) {
        run.json(topic).filter {
          $0["state"]?.stringValue == "failed" && $0["error"]?.stringValue == error
        }.count >= 2
      }, "\(run.messages(topic).compactMap(\.text))")
    let failed = try #require(run.json(topic).last { $0["state"]?.stringValue == "failed" })
    #expect(failed["retry_in"]?.doubleValue != nil)
    await run.finish()
  }

  @Test("C11: device/rssi reads a connected device's link; errors for the others")
  func linkQualityRequest() async throws {
    let run = try await SimulatedRun(
      world: """
        advertising_interval: 0.2
        devices:
          - kind: battery
            name: sim-linked
            rssi: -61
          - kind: beacon
            name: sim-beacon
        """,
      ["--bluetooth.connect.names", "sim-linked"])
    let linked = try #require(await run.device(named: "sim-linked"))
    let beacon = try #require(await run.device(named: "sim-beacon"))
    #expect(await eventually { run.connectionStates(linked).last == "ready" })
    let response = "\(run.base)/response/device/rssi"
    try await run.publish(
      "\(run.base)/request/device/rssi", #"{"device":"\#(linked)","transaction":1}"#)
    #expect(await eventually { !run.json(response).isEmpty })
    let answer = try #require(run.json(response).last)
    #expect(answer["status"] == "ok")
    #expect(answer["transaction"] == 1)
    let data = try #require(answer["data"])
    #expect(data["device"] == .string(linked))
    let rssi = try #require(data["rssi"]?.integerValue)
    #expect((-67 ... -55).contains(rssi), "\(rssi)")
    #expect(data["tx_power"] == 4)
    // Not connected, unknown, malformed: clear errors.
    for (body, code) in [
      (#"{"device":"\#(beacon)"}"#, "not_connected"), (#"{"device":"kitchen"}"#, "unknown_device"),
      (#"{"device":1}"#, "invalid_payload"), (#"{"device":"\#(linked)","x":1}"#, "invalid_payload"),
    ] {
      let before = run.json(response).count
      try await run.publish("\(run.base)/request/device/rssi", body)
      #expect(await eventually { run.json(response).count > before })
      #expect(run.json(response).last?["error"] == .string(code), "\(body)")
    }
    #expect(run.gateway.child.isRunning)
    await run.finish()
  }

  @Test("friendly names: bluetooth.names replaces the address id in every topic of the device")
  func friendlyNames() async throws {
    let world = """
      advertising_interval: 0.2
      devices:
        - kind: battery
          name: sim-named
        - kind: beacon
          name: sim-plain
      """
    let address = try #require(
      SimulatedRadio(world: try SimulatedWorld.parse(yaml: world)).addressesByName["sim-named"])
    let run = try await SimulatedRun(
      world: world,
      [
        "--bluetooth.names", "\(address)=kitchen/battery", "--bluetooth.connect.names",
        "sim-named",
      ])
    #expect(await eventually { run.connectionStates("kitchen/battery").last == "ready" })
    #expect(await run.retained("gatt2mqtt/kitchen/battery/availability") != nil)
    #expect(await eventually { !run.messages("gatt2mqtt/kitchen/battery/advertisement").isEmpty })
    #expect(run.messages("gatt2mqtt/\(DeviceID(address: address).rawValue)/connection").isEmpty)
    // A device without a name keeps its address id.
    #expect(await run.device(named: "sim-plain") != nil)
    // Requests by the name (two levels: their own subscriptions) and by the address.
    let level = "gatt2mqtt/kitchen/battery/gatt/180f/2a19"
    try await run.publish("\(level)/get", #"{"transaction":"by-name"}"#)
    #expect(
      await eventually {
        run.json("\(level)/result").contains {
          $0["status"] == "ok" && $0["transaction"] == "by-name"
        }
      })
    try await run.publish(
      "\(run.base)/request/device/disconnect", #"{"device":"kitchen/battery","transaction":2}"#)
    #expect(
      await eventually {
        run.json("\(run.base)/response/device/disconnect").last?["data"]?["device"]
          == "kitchen/battery"
      })
    #expect(await eventually { run.connectionStates("kitchen/battery").last == "disconnected" })
    #expect(run.gateway.child.isRunning)
    await run.finish()
  }

  @Test("device/rename: the name is kept in the broker, every topic moves, the old ones clear")
  func rename() async throws {
    let run = try await SimulatedRun(
      world: """
        advertising_interval: 0.2
        devices:
          - kind: battery
            name: sim-renamed
          - kind: beacon
            name: sim-other
        """,
      ["--bluetooth.connect.names", "sim-renamed"])
    let id = try #require(await run.device(named: "sim-renamed"))
    let other = try #require(await run.device(named: "sim-other"))
    #expect(await eventually { run.connectionStates(id).last == "ready" })
    let response = "\(run.base)/response/device/rename"
    try await run.publish(
      "\(run.base)/request/device/rename",
      #"{"device":"\#(id)","name":"porch/battery","transaction":1}"#)
    #expect(await eventually { run.json(response).last?["status"] == "ok" })
    #expect(run.json(response).last?["data"]?["name"] == "porch/battery")
    // Kept in the broker for every gateway; every topic moves; the old retained ones clear.
    #expect(await run.retained("gatt2mqtt/bridge/names/\(id)")?.text == "porch/battery")
    #expect(await eventually { run.connectionStates("porch/battery").last == "ready" })
    #expect(await run.retained("gatt2mqtt/porch/battery/gatt") != nil)
    #expect(await run.retained("gatt2mqtt/porch/battery/availability") != nil)
    #expect(await run.retained("gatt2mqtt/\(id)/connection") == nil)
    #expect(await run.retained("gatt2mqtt/\(id)/availability") == nil)
    #expect(
      await eventually {
        run.json("\(run.base)/event").contains {
          $0["type"] == "device_renamed" && $0["data"]?["from"] == .string(id)
        }
      })
    // Requests by the new name (two levels) reach it.
    let level = "gatt2mqtt/porch/battery/gatt/180f/2a19"
    try await run.publish("\(level)/get", #"{"transaction":"renamed"}"#)
    #expect(
      await eventually {
        run.json("\(level)/result").contains {
          $0["transaction"] == "renamed" && $0["status"] == "ok"
        }
      })
    // Refused: a name another device has, a bad name, an unknown device.
    for (body, code) in [
      (#"{"device":"\#(other)","name":"porch/battery"}"#, "name_taken"),
      (#"{"device":"\#(other)","name":"a/+"}"#, "invalid_payload"),
      (#"{"device":"\#(other)","name":"AABBCCDDEEFF"}"#, "invalid_payload"),
      (#"{"device":"nowhere","name":"x"}"#, "unknown_device"),
      (#"{"device":"\#(other)"}"#, "invalid_payload"),
    ] {
      let before = run.json(response).count
      try await run.publish("\(run.base)/request/device/rename", body)
      #expect(await eventually { run.json(response).count > before })
      #expect(run.json(response).last?["error"] == .string(code), "\(body)")
    }
    // Back to the address id.
    try await run.publish(
      "\(run.base)/request/device/rename", #"{"device":"porch/battery","name":null}"#)
    #expect(
      await eventually {
        run.json("\(run.base)/event").contains {
          $0["type"] == "device_renamed" && $0["data"]?["from"] == "porch/battery"
            && $0["data"]?["device"] == .string(id)
        }
      })
    #expect(await eventually { run.connectionStates(id).last == "ready" })
    #expect(await run.retained("gatt2mqtt/bridge/names/\(id)") == nil)
    #expect(await run.retained("gatt2mqtt/porch/battery/connection") == nil)
    #expect(run.gateway.child.isRunning)
    await run.finish()
  }

  @Test("C9 C10: transfer texts reassembled; a dropped link is reconnected and re-armed")
  func transferAndReconnect() async throws {
    let text = "Grüße ✓ 東京 🚀 — a text of several chunks, multi-byte characters straddling them."
    let run = try await SimulatedRun(
      world: """
        advertising_interval: 0.2
        devices:
          - kind: transfer
            name: sim-xfer
            text: "\(text)"
            text_interval: 0.5
            disconnect_after: 2
        """, ["--bluetooth.connect.names", "sim-*", "--bluetooth.connect.retry_min_delay", "0.2"])
    let device = try #require(await run.device(named: "sim-xfer"))
    // Each link delivers texts; the peripheral drops it after 2 s, the gateway reconnects.
    #expect(
      await eventually(timeout: 20) {
        run.connectionStates(device).filter { $0 == "ready" }.count >= 3
      }, "\(run.connectionStates(device))")
    let texts = run.messages("gatt2mqtt/\(device)/transfer").compactMap(\.text)
    #expect(texts.count >= 4)
    #expect(texts.allSatisfy { $0 == text })
    await run.finish()
  }

  @Test("P1–P6: the text served to simulated centrals, MTU−3 chunks and EOM, every new text")
  func peripheralRole() async throws {
    let broker = try Broker()
    try await broker.start()
    let long = String(repeating: "Grüße ✓ 東京 ", count: 60)  // 1140 bytes, 57 chunks of 20
    let world = """
      centrals:
        - count: 2
          mtu: 23
          subscribe_after: 0.5
          echo: true
      """
    // The publisher retains the text: the gateway finds it when it starts (P6).
    let (publisher, _) = try await observe(broker, "nothing/here")
    let id = "sim\(UInt16.random(in: 0...UInt16.max))"
    let textTopic = "gatt2mqtt/bridge/\(id)/peripheral/text/set"
    try await publisher.publish(
      MQTTMessage(topic: textTopic, text: long, qos: .atLeastOnce, retain: true))
    let (observer, seen) = try await observe(broker, "gatt2mqtt/#")
    let path = broker.directory.appendingPathComponent("world.yaml").path
    try world.write(toFile: path, atomically: true, encoding: .utf8)
    let gateway = try GatewayProcess(
      broker: broker, id: id,
      extra: [
        "--radio", "simulated", "--world", path, "--peripheral.enabled", "true",
        "--peripheral.write_characteristic", "08590f7e-db05-467e-8757-72f6faeb13d5",
        "--peripheral.chunk_interval", "0.001", "--peripheral.max_text_bytes", "2048",
      ])
    let base = "gatt2mqtt/bridge/\(id)/peripheral"
    @Sendable func events(_ type: String) -> [JSONValue] {
      seen.messages.filter { $0.topic == "\(base)/event" }.compactMap {
        try? JSONValue.parse($0.payload)
      }.filter { $0["type"]?.stringValue == type }
    }
    // P1 P2 P3: registered and advertised, UUIDs in the retained state.
    #expect(
      await eventually {
        seen.messages.contains {
          $0.topic == "\(base)/state" && ($0.text ?? "").contains(#""state":"advertising""#)
            && ($0.text ?? "").contains("e20a39f4-73f5-4bc4-a12f-17d1ad07a961")
        }
      }, "log: \(gateway.log)")
    // P4 P5: both centrals receive the whole text in chunks of at most MTU-3 = 20 bytes.
    let whole = "received 1140 bytes in 57 chunks, largest 20, mtu 23"
    #expect(long.utf8.count == 1140)
    #expect(
      await eventually(timeout: 15) {
        Set(
          events("written").filter { $0["text"]?.stringValue == whole }.compactMap {
            $0["central"]?.stringValue
          }
        ).count == 2
      }, "\(events("written").map { $0["text"]?.stringValue ?? "" })")
    #expect(events("subscribed").count == 2)
    // The centrals are in the one device registry: the devices list names them as subscribers.
    let centrals = Set(events("subscribed").compactMap { $0["central"]?.stringValue })
    #expect(
      await eventually {
        let list = seen.messages.last { $0.topic == "gatt2mqtt/bridge/\(id)/devices" }.flatMap {
          try? JSONValue.parse($0.payload)
        }
        let subscribers = (list?.arrayValue ?? []).filter { $0["subscriber"] != nil }.compactMap {
          $0["address"]?.stringValue
        }
        return centrals.count == 2 && Set(subscribers) == centrals
      }, "\(centrals)")
    // P6: a new text while subscribed goes to every central, complete.
    try await publisher.publish(MQTTMessage(topic: textTopic, text: "hello ✓", qos: .atLeastOnce))
    let short = "received 9 bytes in 1 chunks, largest 9, mtu 23: hello ✓"
    #expect(
      await eventually { events("written").filter { $0["text"]?.stringValue == short }.count >= 2 })
    #expect(events("sent").count >= 2)
    // A text above peripheral.max_text_bytes is refused on MQTT; the old one stays served.
    try await publisher.publish(
      MQTTMessage(topic: textTopic, text: String(repeating: "x", count: 3000), qos: .atLeastOnce))
    #expect(await eventually { !events("text_refused").isEmpty })
    #expect(gateway.child.isRunning)
    await observer.shutdown()
    await publisher.shutdown()
  }
}
