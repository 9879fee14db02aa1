import BridgeCore
import Testing

@testable import BlueZ

/// A Device Found event on controller `index` (bluez doc/mgmt-api.txt): bdaddr least
/// significant byte first, address type, RSSI, flags, EIR length, EIR.
func deviceFound(
  _ address: [UInt8] = [0xA4, 0xC1, 0x38, 0x1E, 0x29, 0xDF], type: UInt8 = 1, rssi: Int8 = -61,
  flags: UInt32 = 0, data: [UInt8], index: UInt8 = 0
) -> [UInt8] {
  let length = 14 + data.count
  return [0x12, 0x00, index, 0x00, UInt8(length & 0xFF), UInt8(length >> 8)]
    + address.reversed() + [type, UInt8(bitPattern: rssi)]
    + [
      UInt8(flags & 0xFF), UInt8(flags >> 8 & 0xFF), UInt8(flags >> 16 & 0xFF),
      UInt8(flags >> 24),
    ]
    + [UInt8(data.count & 0xFF), UInt8(data.count >> 8)] + data
}

@Suite("Scanning through the kernel: management discovery packets and advertising data")
struct ManagementScanPacketTests {
  let address = try! BluetoothAddress("A4:C1:38:1E:29:DF")

  @Test func discoveryCommandsAskForLEOnTheController() {
    #expect(
      ManagementPacket.startDiscovery(index: 1) == [0x23, 0x00, 0x01, 0x00, 0x01, 0x00, 0x06])
    #expect(ManagementPacket.stopDiscovery(index: 0) == [0x24, 0x00, 0x00, 0x00, 0x01, 0x00, 0x06])
  }

  @Test func aDeviceFoundEventIsAReport() {
    let data: [UInt8] = [0x02, 0x01, 0x06, 0x05, 0xFF, 0x4C, 0x00, 0x02, 0x15]
    let event = ManagementPacket.event(
      deviceFound(type: 2, rssi: -70, flags: 0x04, data: data, index: 1))
    #expect(
      event
        == .deviceFound(
          index: 1,
          ManagementPacket.Report(
            address: address, addressType: .random, rssi: -70, flags: 0x04, data: data)))
    // BR/EDR (type 0): no address type.
    guard case .deviceFound(_, let report) = ManagementPacket.event(deviceFound(type: 0, data: []))
    else {
      Issue.record("a BR/EDR report is still a report")
      return
    }
    #expect(report.addressType == nil)
  }

  @Test func discoveringRepliesAndStrangersAreToldApart() {
    #expect(
      ManagementPacket.event([0x13, 0x00, 0x00, 0x00, 0x02, 0x00, 0x06, 0x00])
        == .discovering(index: 0, addressTypes: 0x06, on: false))
    #expect(
      ManagementPacket.event([0x13, 0x00, 0x02, 0x00, 0x02, 0x00, 0x06, 0x01])
        == .discovering(index: 2, addressTypes: 0x06, on: true))
    // Command Status of Start Discovery: permission denied.
    #expect(
      ManagementPacket.event([0x02, 0x00, 0x00, 0x00, 0x03, 0x00, 0x23, 0x00, 0x14])
        == .reply(index: 0, opcode: 0x23, status: 0x14))
    // Command Complete of Stop Discovery, with its parameter.
    #expect(
      ManagementPacket.event([0x01, 0x00, 0x00, 0x00, 0x04, 0x00, 0x24, 0x00, 0x00, 0x06])
        == .reply(index: 0, opcode: 0x24, status: 0))
  }

  @Test func shortOrTruncatedPacketsAreOther() {
    #expect(ManagementPacket.event([]) == .other)
    #expect(ManagementPacket.event([0x12, 0x00, 0x00]) == .other)
    // Says 20 bytes of parameters, carries 2.
    #expect(ManagementPacket.event([0x12, 0x00, 0x00, 0x00, 0x14, 0x00, 0x01, 0x02]) == .other)
    // A Device Found whose EIR length runs past the packet.
    var cut = deviceFound(data: [0x02, 0x01, 0x06])
    cut[18] = 40
    #expect(ManagementPacket.event(cut) == .other)
    // Discovering without its two bytes; another event.
    #expect(ManagementPacket.event([0x13, 0x00, 0x00, 0x00, 0x01, 0x00, 0x06]) == .other)
    #expect(ManagementPacket.event([0x0B, 0x00, 0x00, 0x00, 0x00, 0x00]) == .other)
  }

  @Test func advertisingDataFieldsAreRead() {
    let data: [UInt8] =
      [0x02, 0x01, 0x06]  // flags
      + [0x05, 0x03, 0x0F, 0x18, 0x0D, 0x18]  // 16-bit UUIDs 180f, 180d
      + [0x05, 0x05, 0x78, 0x56, 0x34, 0x12]  // 32-bit UUID 12345678
      + [0x11, 0x07] + Array(1...16)  // a 128-bit UUID, least significant byte first
      + [0x05, 0x08, 0x54, 0x68, 0x65, 0x72]  // short name "Ther"
      + [0x07, 0x09, 0x54, 0x68, 0x65, 0x72, 0x6D, 0x6F]  // complete name "Thermo"
      + [0x02, 0x0A, 0xFC]  // TX power -4
      + [0x05, 0x16, 0xD2, 0xFC, 0x40, 0x01]  // service data fcd2
      + [0x07, 0x20, 0x78, 0x56, 0x34, 0x12, 0xAA, 0xBB]  // 32-bit service data
      + [0x05, 0xFF, 0x4C, 0x00, 0x02, 0x15]  // Apple
    let fields = AdvertisingFields(data)
    #expect(fields.name == Array("Thermo".utf8))
    #expect(fields.nameComplete)
    #expect(fields.txPower == -4)
    #expect(
      fields.serviceUUIDs == [
        BluetoothUUID(uuid16: 0x180F), BluetoothUUID(uuid16: 0x180D),
        BluetoothUUID(uuid32: 0x1234_5678), BluetoothUUID(bytes: Array((1...16).reversed()))!,
      ])
    #expect(
      fields.serviceData == [
        BluetoothUUID(uuid16: 0xFCD2): [0x40, 0x01],
        BluetoothUUID(uuid32: 0x1234_5678): [0xAA, 0xBB],
      ])
    #expect(fields.manufacturerData == [0x004C: [0x02, 0x15]])
  }

  @Test func aMalformedStructureEndsTheReadingWithoutLosingWhatCameBefore() {
    // Apple data, then a structure that claims 9 bytes with 2 left.
    let fields = AdvertisingFields([0x03, 0xFF, 0x4C, 0x00, 0x09, 0x16, 0x01])
    #expect(fields.manufacturerData == [0x004C: []])
    #expect(fields.serviceData.isEmpty)
    // Zero length is padding: nothing after it is read.
    #expect(AdvertisingFields([0x00, 0x03, 0xFF, 0x4C, 0x00]).manufacturerData.isEmpty)
    // Too short to carry what the type says: skipped, the next one read.
    let short = AdvertisingFields([0x02, 0xFF, 0x4C, 0x02, 0x16, 0xD2, 0x03, 0x03, 0x0F, 0x18])
    #expect(short.manufacturerData.isEmpty)
    #expect(short.serviceData.isEmpty)
    #expect(short.serviceUUIDs == [BluetoothUUID(uuid16: 0x180F)])
    // A list of UUIDs with a byte too many: the whole ones are read.
    #expect(
      AdvertisingFields([0x04, 0x02, 0x0F, 0x18, 0x0D]).serviceUUIDs == [
        BluetoothUUID(uuid16: 0x180F)
      ])
    #expect(AdvertisingFields([]) == AdvertisingFields([0x00]))
  }
}

@Suite("Scanning through the kernel: what each device's reports add up to")
struct AdvertisementReportsTests {
  let address = try! BluetoothAddress("A4:C1:38:1E:29:DF")
  let all = DiscoveryFilter()

  func report(rssi: Int = -60, type: Advertisement.AddressType? = .public, _ data: [UInt8])
    -> ManagementPacket.Report
  {
    ManagementPacket.Report(address: address, addressType: type, rssi: rssi, flags: 0, data: data)
  }

  @Test func theFirstReportMakesADeviceAppearAndLaterOnesUpdateIt() {
    var reports = AdvertisementReports(maxDevices: 10)
    let first = reports.apply(report([0x04, 0xFF, 0x4C, 0x00, 0x01]), filter: all)
    #expect(
      first
        == .deviceAppeared(
          Advertisement(address: address, rssi: -60, manufacturerData: [0x004C: [0x01]])))
    // The same data again is still a report (presence follows every one), at its RSSI.
    let second = reports.apply(report(rssi: -75, [0x04, 0xFF, 0x4C, 0x00, 0x01]), filter: all)
    #expect(
      second
        == .deviceUpdated(
          Advertisement(address: address, rssi: -75, manufacturerData: [0x004C: [0x01]])))
    #expect(reports.count == 1)
  }

  @Test func dataIsReplacedByAReportThatCarriesItAndKeptOtherwise() {
    var reports = AdvertisementReports(maxDevices: 10)
    _ = reports.apply(
      report([0x04, 0xFF, 0x4C, 0x00, 0x01, 0x04, 0xFF, 0x59, 0x00, 0x02, 0x03, 0x03, 0x0F, 0x18]),
      filter: all)
    // A scan response with the name only: data and UUIDs stay.
    let named = reports.apply(report([0x03, 0x09, 0x41, 0x42]), filter: all)
    #expect(
      named
        == .deviceUpdated(
          Advertisement(
            address: address, name: [0x41, 0x42], rssi: -60,
            manufacturerData: [0x004C: [0x01], 0x0059: [0x02]],
            serviceUUIDs: [BluetoothUUID(uuid16: 0x180F)])))
    // New manufacturer data replaces all of it (bluetoothd's DuplicateData rule); UUIDs add up;
    // a shortened name does not replace the complete one.
    let next = reports.apply(
      report([0x04, 0xFF, 0x4C, 0x00, 0x07, 0x03, 0x03, 0x0D, 0x18, 0x02, 0x08, 0x41]),
      filter: all)
    #expect(
      next
        == .deviceUpdated(
          Advertisement(
            address: address, name: [0x41, 0x42], rssi: -60, manufacturerData: [0x004C: [0x07]],
            serviceUUIDs: [BluetoothUUID(uuid16: 0x180F), BluetoothUUID(uuid16: 0x180D)])))
  }

  @Test func aDeviceThatKeepsAdvertisingNewUUIDsKeepsOnlyTheLatest() {
    var reports = AdvertisementReports(maxDevices: 10)
    var last: CentralEvent?
    // 40 reports of the Battery service and three new 16-bit UUIDs each: 121 in all.
    for round in 0..<40 {
      var data: [UInt8] = [0x09, 0x03, 0x0F, 0x18]
      for k in 0..<3 {
        let uuid = UInt16(0x2000 + round * 3 + k)
        data += [UInt8(uuid & 0xFF), UInt8(uuid >> 8)]
      }
      last = reports.apply(report(data), filter: all)
    }
    guard case .deviceUpdated(let advertisement)? = last else {
      Issue.record("expected an update, got \(String(describing: last))")
      return
    }
    let cap = AdvertisementReports.maxServiceUUIDs
    #expect(advertisement.serviceUUIDs.count == cap)
    // The one in every report stays (first seen, but advertised now); the others are the
    // latest.
    #expect(advertisement.serviceUUIDs.first == BluetoothUUID(uuid16: 0x180F))
    #expect(advertisement.serviceUUIDs[1] == BluetoothUUID(uuid16: UInt16(0x2000 + 120 - cap + 1)))
    #expect(advertisement.serviceUUIDs.last == BluetoothUUID(uuid16: 0x2000 + 119))
    // Matched by it, the device passes a filter on it after every report.
    let battery = DiscoveryFilter(serviceUUIDs: [BluetoothUUID(uuid16: 0x180F)])
    let again = [0x09, 0x03, 0x0F, 0x18, 0x00, 0x30, 0x01, 0x30, 0x02, 0x30] as [UInt8]
    #expect(reports.apply(report(again), filter: battery) != nil)
  }

  @Test func bredrReportsAreIgnored() {
    var reports = AdvertisementReports(maxDevices: 10)
    #expect(reports.apply(report(type: nil, [0x02, 0x01, 0x06]), filter: all) == nil)
    #expect(reports.count == 0)
  }

  @Test func theFilterCutsReportsButTheDeviceIsKept() {
    var reports = AdvertisementReports(maxDevices: 10)
    let floor = DiscoveryFilter(rssiFloor: -70)
    #expect(reports.apply(report(rssi: -80, [0x02, 0x01, 0x06]), filter: floor) == nil)
    // Kept: the first report that passes makes it appear, with what the earlier one said.
    #expect(reports.count == 1)
    #expect(
      reports.apply(report(rssi: -65, [0x03, 0x09, 0x41, 0x42]), filter: floor)
        == .deviceAppeared(Advertisement(address: address, name: [0x41, 0x42], rssi: -65)))
    // 127 (not measured) fails a floor, as in the kernel's own filter.
    #expect(reports.apply(report(rssi: 127, []), filter: floor) == nil)
    #expect(reports.apply(report(rssi: 127, []), filter: all) != nil)

    let heartRate = DiscoveryFilter(serviceUUIDs: [BluetoothUUID(uuid16: 0x180D)])
    #expect(reports.apply(report([0x03, 0x03, 0x0F, 0x18]), filter: heartRate) == nil)
    #expect(reports.apply(report([0x03, 0x03, 0x0D, 0x18]), filter: heartRate) != nil)
    // Service data of the UUID passes too.
    var other = AdvertisementReports(maxDevices: 10)
    #expect(other.apply(report([0x04, 0x16, 0x0D, 0x18, 0x01]), filter: heartRate) != nil)
  }

  @Test func theLongestUnheardDevicesAreForgottenPastTheBound() {
    var reports = AdvertisementReports(maxDevices: 10)
    for n in 0..<11 {
      let report = ManagementPacket.Report(
        address: BluetoothAddress(bytes: [0xC0, 0, 0, 0, 0, UInt8(n)])!, addressType: .random,
        rssi: -50, flags: 0, data: [])
      _ = reports.apply(report, filter: all)
    }
    // 11 > 10: down to 9, the two heard first forgotten.
    #expect(reports.count == 9)
    #expect(reports.evicted == 2)
    let first = ManagementPacket.Report(
      address: BluetoothAddress(bytes: [0xC0, 0, 0, 0, 0, 0])!, addressType: .random, rssi: -50,
      flags: 0, data: [])
    guard case .deviceAppeared = reports.apply(first, filter: all) else {
      Issue.record("a forgotten device appears anew")
      return
    }
  }
}
