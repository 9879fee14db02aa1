public import BridgeCore

extension GatewayConfiguration {
  /// The discovery bridge's settings (rows C1–C3, C11) from `bluetooth.*`.
  public var discoveryBridgeConfiguration: DiscoveryBridge.Configuration {
    let b = bluetooth
    return DiscoveryBridge.Configuration(
      filter: AdvertisementFilter(rssiFloor: b.minRSSI),
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
