import BridgeCore
import Testing

@Suite("Connection policy: addresses, names and UUIDs, less the excluded addresses")
struct ConnectionPolicyTests {
  let thermo = Fixture.advert("A4:C1:38:1E:29:DF", name: "Thermo", uuids: [0x181A])
  let other = Fixture.advert("C0:FF:EE:00:00:02", name: "Thermo", uuids: [0x181A])

  @Test func anExcludedAddressIsNeverSelectedByNameUUIDOrListing() throws {
    let excluded: Set = [try BluetoothAddress("C0:FF:EE:00:00:02")]
    let byName = ConnectionPolicy(names: [try NamePattern("Therm*")], excluded: excluded)
    let byUUID = ConnectionPolicy(uuids: [BluetoothUUID(uuid16: 0x181A)], excluded: excluded)
    for policy in [byName, byUUID] {
      #expect(policy.selects(thermo))
      #expect(!policy.selects(other))
    }
    let listed = ConnectionPolicy(addresses: excluded, excluded: excluded)
    #expect(!listed.selects(other))
    #expect(!listed.selects(other.address))
    #expect(ConnectionPolicy(addresses: excluded).selects(other.address))
  }

  @Test func theConnectionHalfNeverConnectsAnExcludedListedAddressNorAfterItsRemoval() {
    let sensor = GATTHarness.sensor
    var h = GATTHarness(.init(policy: ConnectionPolicy(addresses: [sensor], excluded: [sensor])))
    h.event(.deviceUpdated(Fixture.advert(sensor.description, rssi: -50)))
    h.tick()
    _ = h.bridge.remove(sensor, now: h.now)
    h.event(.deviceUpdated(Fixture.advert(sensor.description, rssi: -50)))
    h.tick()
    #expect(h.outputs.connects.isEmpty)
    // Listed alone, it is connected.
    var listed = GATTHarness(.init(policy: ConnectionPolicy(addresses: [sensor])))
    listed.event(.deviceUpdated(Fixture.advert(sensor.description, rssi: -50)))
    listed.tick()
    #expect(listed.outputs.connects == [sensor])
  }
}
