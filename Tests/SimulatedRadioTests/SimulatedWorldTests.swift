import Foundation
import Testing
import YAMLSupport

@testable import SimulatedRadio

@Suite("Simulated world files")
struct SimulatedWorldTests {
  @Test("every key is read")
  func everyKey() throws {
    let world = try SimulatedWorld.parse(
      yaml: """
        seed: 42
        adapters:
          - id: hci0
          - id: hci1
            powered: false
            power_cycle_every: 30
            off_for: 1.5
        advertising_interval: 0.5
        connect_latency: 0.2
        connect_failure_rate: 0.25
        gatt_latency: 0.01
        max_connections: 3
        devices:
          - kind: heart_rate
            count: 2
            name: hr
            rssi: -70
            advertising_interval: 2
            notify_rate: 50
            mtu: 247
            disconnect_after: 60
            numbered: true
          - kind: transfer
            text: hello
            text_interval: 5
          - kind: beacon
            rotate: 60
        centrals:
          - count: 3
            mtu: 23
            subscribe_after: 0.5
            stay: 10
            pause: 4
            echo: true
        """)
    #expect(world.seed == 42)
    #expect(
      world.adapters == [
        .init(id: "hci0"), .init(id: "hci1", powered: false, powerCycleEvery: 30, offFor: 1.5),
      ])
    #expect(world.advertisingInterval == 0.5)
    #expect(world.connectLatency == 0.2)
    #expect(world.connectFailureRate == 0.25)
    #expect(world.gattLatency == 0.01)
    #expect(world.maxConnections == 3)
    var numbered = SimulatedWorld.DeviceGroup(
      kind: .heartRate, count: 2, name: "hr", rssi: -70, advertisingInterval: 2, notifyRate: 50,
      mtu: 247, disconnectAfter: 60)
    numbered.numbered = true
    #expect(
      world.devices == [
        numbered,
        .init(kind: .transfer, text: "hello", textInterval: 5),
        .init(kind: .beacon, rotate: 60),
      ])
    #expect(
      world.centrals == [
        .init(count: 3, mtu: 23, subscribeAfter: 0.5, stay: 10, pause: 4, echo: true)
      ])
  }

  @Test("an empty file is the empty world with defaults")
  func empty() throws {
    #expect(try SimulatedWorld.parse(yaml: "") == SimulatedWorld())
  }

  @Test(
    "bad files name the offending key's path",
    arguments: [
      ("colour: red", "colour: unknown key"),
      (
        "devices:\n  - kind: toaster",
        "devices[0].kind: must be one of battery, heart_rate, actuator, transfer, beacon"
      ),
      (
        "devices:\n  - kind: beacon\n  - kind: battery\n    count: 0",
        "devices[1].count: must be a whole number from 1 to 100000, not 0"
      ),
      ("devices:\n  - kind: battery\n    size: 3", "devices[0].size: unknown key"),
      ("centrals:\n  - mtu: 10", "centrals[0].mtu: must be a whole number from 23 to 517, not 10"),
      ("centrals:\n  - echo: maybe", "centrals[0].echo: must be true or false"),
      ("connect_failure_rate: 2", "connect_failure_rate: must be a number from 0.0 to 1.0, not 2"),
      ("adapters: []", "adapters: at least one adapter"),
      ("adapters:\n  - id: hci0\n  - id: hci0", "adapters: adapter ids must be distinct"),
      ("adapters:\n  - powered: true", "adapters[0].id: is required"),
      ("devices: 3", "devices: must be a list"),
      ("- 1", "must be a mapping of keys to values"),
      ("seed: [1]", "seed: must be a single value"),
      ("seed: {", "not YAML"),
    ])
  func errors(yaml: String, expected: String) {
    do {
      _ = try SimulatedWorld.parse(yaml: yaml)
      Issue.record("accepted: \(yaml)")
    } catch {
      #expect(error.description.hasPrefix(expected), "\(error)")
    }
  }

  @Test(
    "a world whose aliases stand for a billion values is refused before it is read",
    .timeLimit(.minutes(1)))
  func aliasBomb() {
    // Each level a list of ten aliases of the level before: nine levels, 10^9 lists. The world's
    // own reader would stop at the first list where a device belongs; the bound refuses the
    // document before any reader walks it.
    var yaml = "levels:\n  - &l0 [kind, kind, kind, kind, kind, kind, kind, kind, kind, kind]\n"
    for level in 1...8 {
      let aliases = Array(repeating: "*l\(level - 1)", count: 10).joined(separator: ", ")
      yaml += "  - &l\(level) [\(aliases)]\n"
    }
    yaml += "devices: [*l8, *l8, *l8, *l8, *l8, *l8, *l8, *l8, *l8, *l8]\n"
    let refusal = BoundedYAML.Refusal.values(BoundedYAML.defaultMaxNodes).description
    #expect(throws: SimulatedWorld.Error(path: "", message: refusal)) {
      try SimulatedWorld.parse(yaml: yaml)
    }
  }

  @Test("config/simulated-world.yaml is the built-in world written out")
  func builtInFile() throws {
    let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
      .deletingLastPathComponent().deletingLastPathComponent()
    let text = try String(
      contentsOf: root.appendingPathComponent("config/simulated-world.yaml"), encoding: .utf8)
    #expect(try SimulatedWorld.parse(yaml: text) == SimulatedWorld.builtIn)
  }
}
