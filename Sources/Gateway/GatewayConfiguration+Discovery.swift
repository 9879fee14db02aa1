public import BridgeCore

extension GatewayConfiguration {
  /// The discovery bridge's settings (rows C1–C3, C11) from `bluetooth.*`.
  public var discoveryBridgeConfiguration: DiscoveryBridge.Configuration {
    let b = bluetooth
    // The loader has checked every item with the same rules as these parsers.
    let filter = AdvertisementFilter(
      serviceUUIDs: Set(b.filterUUIDs.compactMap { try? BluetoothUUID($0) }),
      namePattern: b.filterName.flatMap { try? NamePattern($0) },
      allow: Set(b.filterAllow.compactMap { try? BluetoothAddress($0) }),
      deny: Set(b.filterDeny.compactMap { try? BluetoothAddress($0) }),
      rssiFloor: b.minRSSI)
    return DiscoveryBridge.Configuration(
      filter: filter,
      scanOnStart: b.scanOnStart,
      adapters: b.adapter.map { [$0] } ?? [],
      rateLimiter: AdvertisementRateLimiter(
        interval: b.advertisementInterval, minimumInterval: b.advertisementMinInterval),
      registry: DeviceRegistry(
        offlineAfter: b.offlineAfter, forgetAfter: b.forgetAfter, capacity: b.maxDevices),
      presence: PresenceEstimator(
        enterRSSI: Double(b.presence.enterRSSI), leaveRSSI: Double(b.presence.leaveRSSI),
        halfLife: b.presence.halfLife, awayAfter: b.presence.awayAfter))
  }
}
