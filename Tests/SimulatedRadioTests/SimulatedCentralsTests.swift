import BridgeCore
import Testing

@testable import SimulatedRadio

@Suite("Simulated centrals of the peripheral role (engine, literal times)")
struct SimulatedCentralsTests {
  static let service = PeripheralService(
    writeCharacteristic: BluetoothUUID(uuid16: 0xFFF1), localName: "gw")

  @Test("centrals subscribe after their delay with their MTU, leave after their stay, come back")
  func subscribeCycle() throws {
    var engine = SimulationEngine(
      world: SimulatedWorld(centrals: [
        .init(count: 2, mtu: 185, subscribeAfter: 1, stay: 4, pause: 2)
      ]))
    #expect(try engine.startPeripheral(Self.service).peripheral == [.stateChanged(.advertising)])
    let addresses = engine.centrals.map(\.address)
    #expect(Set(addresses).count == 2)
    let events = runEngine(&engine, until: 8.5).peripheral
    #expect(
      events == [
        .subscribed(central: addresses[0], mtu: 185), .subscribed(central: addresses[1], mtu: 185),
        .unsubscribed(central: addresses[0]), .unsubscribed(central: addresses[1]),
        .subscribed(central: addresses[0], mtu: 185), .subscribed(central: addresses[1], mtu: 185),
      ])
  }

  @Test("a central reassembles chunks up to EOM and echoes what it received")
  func reassembleAndEcho() throws {
    var engine = SimulationEngine(
      world: SimulatedWorld(centrals: [.init(mtu: 23, subscribeAfter: 0.5, echo: true)]))
    _ = try engine.startPeripheral(Self.service)
    _ = runEngine(&engine, until: 1)
    let text = Array("Grüße ✓ 東京 — a text in several chunks of twenty bytes".utf8)
    let chunker = TransferChunker(text: text, mtu: 23)
    var effects: [SimulationEngine.Effect] = []
    for index in 0..<chunker.count {
      effects += try engine.notifyCentrals(chunker.notification(at: index))
    }
    let line =
      "received \(text.count) bytes in \(chunker.count - 1) chunks, largest 20, mtu 23: "
      + String(decoding: text, as: UTF8.self)
    #expect(
      effects.peripheral == [.written(central: engine.centrals[0].address, value: Array(line.utf8))]
    )
    #expect(engine.counters.textsReceivedByCentrals == 1)
    #expect(engine.counters.oversizedChunks == 0)
    // A chunk above MTU-3 is cut and counted.
    _ = try engine.notifyCentrals(Array(repeating: 0x41, count: 21))
    #expect(engine.counters.oversizedChunks == 1)
  }

  @Test("the allow-list refuses other centrals; no echo without a writable characteristic")
  func allowList() throws {
    var engine = SimulationEngine(
      world: SimulatedWorld(centrals: [.init(subscribeAfter: 0.1, echo: true)]))
    var service = PeripheralService(allowedCentrals: [try BluetoothAddress("00:00:00:00:00:01")])
    _ = try engine.startPeripheral(service)
    #expect(
      runEngine(&engine, until: 1).peripheral == [.refused(central: engine.centrals[0].address)])
    service.allowedCentrals = []
    _ = engine.stopPeripheral()
    _ = try engine.startPeripheral(service)
    _ = runEngine(&engine, until: 2)
    #expect(try engine.notifyCentrals(Array("EOM".utf8)).isEmpty)
    #expect(engine.counters.textsReceivedByCentrals == 1)
  }

  @Test("not advertising: notify fails with unavailable; stop reports stopped")
  func notAdvertising() throws {
    var engine = SimulationEngine(
      world: SimulatedWorld(adapters: [.init(id: "hci0", powered: false)]))
    let start = try engine.startPeripheral(Self.service)
    #expect(start.peripheral.count == 1)
    if case .stateChanged(.unavailable) = start.peripheral.first {
    } else {
      Issue.record("not unavailable: \(start)")
    }
    do {
      _ = try engine.notifyCentrals([1])
      Issue.record("notified while not advertising")
    } catch {
      #expect(error.code == .unavailable)
    }
    #expect(
      try engine.setPowered(adapter: "hci0", true).peripheral == [.stateChanged(.advertising)])
    #expect(engine.stopPeripheral().peripheral == [.stateChanged(.stopped)])
    do {
      _ = try engine.startPeripheral(PeripheralService(adapter: "hci9"))
      Issue.record("started on an unknown adapter")
    } catch {
      #expect(error.code == .unknownAdapter)
    }
  }
}
