public import BridgeCore
import Foundation

extension CentralRoleService {
  /// Reads every connected device's link quality each interval and feeds its RSSI to the
  /// bridge (presence, the devices list, fleet ownership). Stops for good, after saying so once,
  /// when reading is impossible (no `CAP_NET_ADMIN`, no management interface).
  func readLinkQualities() async {
    guard let linkQuality else { return }
    while !Task.isCancelled {
      try? await Task.sleep(for: .seconds(linkQuality.interval))
      if Task.isCancelled || linkQualityRefused.withLock({ $0 != nil }) { return }
      for link in connectedLinks() {
        if Task.isCancelled { return }
        do {
          _ = try await read(link)
        } catch  where error.code == .notPermitted || error.code == .unavailable {
          refuseLinkQuality(error)
          return
        } catch {
          logger.debug(
            "cannot read the link's RSSI: \(error.message)",
            metadata: ["device": "\(link.address)"])
        }
      }
    }
  }

  /// Answers `device/rssi` (`{"device":"A4C1381E29DF"}` or an address): the link quality of a
  /// connected device, read now: `{"device":…,"address":…,"rssi":-61,"tx_power":4,
  /// "max_tx_power":4}`.
  ///
  /// - Parameter body: The request's JSON object.
  /// - Returns: The response (its transaction is the caller's to set).
  public func readLinkQuality(_ body: JSONObject) async -> BridgeResponse {
    let address: BluetoothAddress
    do throws(BridgeResponse) {
      address = try DeviceRequestBody.address(in: body) { text in
        driver.read { $0.address(named: text) }
      }
    } catch {
      return error
    }
    guard linkQuality != nil, gattCentral != nil else {
      return .failure(
        code: "not_supported",
        message: "this gateway does not read links' RSSI (bluetooth.connect.rssi, bluetooth.radio)",
        transaction: nil)
    }
    if let refused = linkQualityRefused.withLock({ $0 }) {
      return .failure(code: refused.code.rawValue, message: refused.message, transaction: nil)
    }
    guard let link = connectedLinks().first(where: { $0.address == address }) else {
      return .failure(
        code: "not_connected", message: "\(DeviceID(address: address)) is not connected",
        transaction: nil)
    }
    do {
      let quality = try await read(link)
      var data = quality.json
      data["device"] = .string(DeviceID(address: address).rawValue)
      data["address"] = .string(address.description)
      return .success(data, transaction: nil)
    } catch {
      if error.code == .notPermitted || error.code == .unavailable { refuseLinkQuality(error) }
      return .failure(code: error.code.rawValue, message: error.message, transaction: nil)
    }
  }

  /// A connected device and the adapters its link may be on.
  struct ConnectedLink {
    var address: BluetoothAddress
    var type: Advertisement.AddressType
    var adapters: [String]
  }

  /// The devices connected now, with the adapters to ask (the configured one, or every known
  /// adapter).
  func connectedLinks() -> [ConnectedLink] {
    let configured = linkQuality?.adapter
    return driver.read { bridge in
      let adapters = configured.map { [$0] } ?? bridge.discovery.adapters.adapters.keys.sorted()
      return (bridge.gatt?.connectedAddresses ?? []).compactMap { address in
        guard let record = bridge.discovery.registry[address], record.connection.isConnected
        else { return nil }
        return ConnectedLink(address: address, type: record.addressType, adapters: adapters)
      }
    }
  }

  /// Reads one link (on each of its adapters until one has it) and feeds the RSSI to the
  /// bridge.
  func read(_ link: ConnectedLink) async throws(CentralError) -> LinkQuality {
    guard let reader = linkQuality?.reader else {
      throw CentralError(.unavailable, message: "no link reader")
    }
    var last = CentralError(.notConnected, message: "\(link.address) is on no known adapter")
    for adapter in link.adapters {
      do {
        let quality = try await reader.linkQuality(
          of: link.address, type: link.type, adapter: adapter)
        driver.feed { bridge, now in
          bridge.handle(.connectionRSSI(link.address, rssi: quality.rssi), now: now)
        }
        return quality
      } catch  where [.notConnected, .unknownAdapter, .poweredOff].contains(error.code) {
        last = error
      }
    }
    throw last
  }

  /// Says once (log and a `connection_rssi_unavailable` event) that links cannot be read.
  func refuseLinkQuality(_ error: CentralError) {
    let first = linkQualityRefused.withLock { refused in
      defer { refused = refused ?? error }
      return refused == nil
    }
    guard first else { return }
    logger.warning(
      "connected devices' RSSI cannot be read: \(error.message); connected devices stay present")
    driver.feed { bridge, _ in
      [
        bridge.eventOutput(
          "connection_rssi_unavailable",
          ["error": .string(error.code.rawValue), "message": .string(error.message)])
      ]
    }
  }
}
