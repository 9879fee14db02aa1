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
        offlineAfter: b.offlineAfter, forgetAfter: b.forgetAfter, capacity: b.maxDevices,
        naming: DeviceNaming(friendlyNames: deviceNames)),
      presence: PresenceEstimator(
        enterRSSI: Double(b.presence.enterRSSI), leaveRSSI: Double(b.presence.leaveRSSI),
        halfLife: b.presence.halfLife, awayAfter: b.presence.awayAfter),
      decode: b.decode)
  }

  /// Home Assistant discovery's settings from `homeassistant.*`; `nil` when it is off.
  ///
  /// Values that come only from advertisements expire after `bluetooth.offline_after` or three
  /// `bluetooth.advertisement_interval`s, whichever is longer (the rate limiter republishes an
  /// unchanged advertisement every interval).
  public var homeAssistantConfiguration: HomeAssistantDiscovery.Configuration? {
    guard homeAssistant.enabled else { return nil }
    let expiry = max(bluetooth.offlineAfter, 3 * bluetooth.advertisementInterval)
    return HomeAssistantDiscovery.Configuration(
      prefix: homeAssistant.prefix,
      // The loader has checked every rule with the same parser.
      controls: homeAssistant.controls.compactMap { try? HomeAssistantControlRule(parsing: $0) },
      expireAfter: max(1, Int(expiry.rounded(.up))), version: GatewayVersion.current)
  }
}

extension GatewayConfiguration {
  /// The connection half's settings (rows C4–C10) from `bluetooth.connect|gatt|transfer.*` and
  /// `mqtt.retain_values`.
  public var gattBridgeConfiguration: GATTBridge.Configuration {
    let b = bluetooth
    // The loader has checked every item with the same rules as these parsers.
    var configuration = GATTBridge.Configuration(
      policy: ConnectionPolicy(
        addresses: Set(b.connect.addresses.compactMap { try? BluetoothAddress($0) }),
        names: b.connect.names.compactMap { try? NamePattern($0) },
        uuids: Set(b.connect.uuids.compactMap { try? BluetoothUUID($0) }),
        excluded: Set(b.connect.exclude.compactMap { try? BluetoothAddress($0) })),
      maxConnections: b.connect.maxConnections, connectTimeout: b.connect.timeout,
      retryMinDelay: b.connect.retryMinDelay, retryMaxDelay: b.connect.retryMaxDelay,
      operationTimeout: b.gatt.timeout, defaultFormat: b.gatt.format,
      formats: b.gatt.formats.compactMap { try? FormatRule(parsing: $0) },
      notify: b.gatt.notify.compactMap { try? CharacteristicSelector(parsing: $0) },
      notifyMethod: b.gatt.notifyMethod,
      notifyMethods: b.gatt.notifyMethods.compactMap { try? NotifyMethodRule(parsing: $0) },
      writable: b.gatt.writable.compactMap { try? CharacteristicSelector(parsing: $0) },
      queueLimit: b.gatt.queueLimit,
      transferService: (try? BluetoothUUID(b.transfer.service))
        ?? GATTBridge.defaultTransferService,
      transferCharacteristic: (try? BluetoothUUID(b.transfer.characteristic))
        ?? GATTBridge.defaultTransferCharacteristic,
      transferMaxBytes: b.transfer.maxBytes, retainValues: mqtt.retainValues)
    configuration.names = deviceNames
    return configuration
  }

  /// The friendly names of `bluetooth.names` by address (the loader has refused duplicates).
  public var deviceNames: [BluetoothAddress: DeviceID] {
    let rules = bluetooth.names.compactMap { try? DeviceNameRule(parsing: $0) }
    return (try? DeviceNameRule.names(rules).get()) ?? [:]
  }
}

extension GatewayConfiguration {
  /// The ownership arbiter's settings from `fleet.ownership.*`.
  public var ownershipConfiguration: OwnershipArbiter.Configuration {
    let o = fleet.ownership
    return OwnershipArbiter.Configuration(
      margin: o.margin, dwell: o.dwell, staleAfter: o.staleAfter, claimDelay: o.claimDelay,
      giveUpAfter: o.giveUpAfter, cooldown: o.cooldown,
      maximumDevices: max(1, bluetooth.maxDevices))
  }
}
