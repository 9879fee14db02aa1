extension GatewayConfiguration: CustomStringConvertible, CustomDebugStringConvertible {
  /// The text that replaces a secret that is set.
  public static let redacted = "***"

  /// Every key with its value in this configuration, secrets redacted.
  ///
  /// The keys are the dotted paths of ``ConfigurationLoader/keyPaths``, in that order. Values
  /// are written as in the configuration file (`1883`, `true`, `3.1.1`, `drop_oldest`), lists
  /// comma-separated (`180f,180d`, the empty string for an empty list); an unset optional key
  /// has the value `nil`; a set password is ``redacted``. Suitable for logs
  /// and the bridge `info` topic.
  ///
  /// - Returns: One `(key, value)` pair per configuration key.
  public func redactedSummary() -> [(key: String, value: String?)] {
    let values: [String: String?] = [
      "mqtt.host": mqtt.host,
      "mqtt.port": String(mqtt.port),
      "mqtt.client_id": mqtt.clientID,
      "mqtt.keepalive": String(mqtt.keepalive),
      "mqtt.clean_session": String(mqtt.cleanSession),
      "mqtt.protocol": mqtt.protocolVersion.rawValue,
      "mqtt.username": mqtt.username,
      "mqtt.password": mqtt.password.map { _ in Self.redacted },
      "mqtt.base_topic": mqtt.baseTopic,
      "mqtt.qos": String(mqtt.qos),
      "mqtt.retain_values": String(mqtt.retainValues),
      "mqtt.tls.enabled": String(mqtt.tls.enabled),
      "mqtt.tls.ca_file": mqtt.tls.caFile,
      "mqtt.tls.cert_file": mqtt.tls.certFile,
      "mqtt.tls.key_file": mqtt.tls.keyFile,
      "mqtt.tls.insecure": String(mqtt.tls.insecure),
      "mqtt.reconnect.min_delay": ConfigurationLoader.KeyType.format(mqtt.reconnect.minDelay),
      "mqtt.reconnect.max_delay": ConfigurationLoader.KeyType.format(mqtt.reconnect.maxDelay),
      "mqtt.offline_queue.max_messages": String(mqtt.offlineQueue.maxMessages),
      "mqtt.offline_queue.policy": mqtt.offlineQueue.policy.rawValue,
      "mqtt.inbound.max_request_bytes": String(mqtt.inbound.maxRequestBytes),
      "mqtt.inbound.buffer_bytes": String(mqtt.inbound.bufferBytes),
      "mqtt.response_topic_prefix": mqtt.responseTopicPrefix,
      "gateway.id": gateway.id,
      "gateway.health_interval": ConfigurationLoader.KeyType.format(gateway.healthInterval),
      "log.level": log.level.rawValue,
      "bluetooth.radio": bluetooth.radio.rawValue,
      "bluetooth.adapter": bluetooth.adapter,
      "bluetooth.simulation": bluetooth.simulation,
      "bluetooth.scan_on_start": String(bluetooth.scanOnStart),
      "bluetooth.min_rssi": bluetooth.minRSSI.map { String($0) },
      "bluetooth.filter.uuids": bluetooth.filterUUIDs.joined(separator: ","),
      "bluetooth.filter.name": bluetooth.filterName,
      "bluetooth.filter.allow": bluetooth.filterAllow.joined(separator: ","),
      "bluetooth.filter.deny": bluetooth.filterDeny.joined(separator: ","),
      "bluetooth.advertisement_interval": format(bluetooth.advertisementInterval),
      "bluetooth.advertisement_min_interval": format(bluetooth.advertisementMinInterval),
      "bluetooth.offline_after": format(bluetooth.offlineAfter),
      "bluetooth.forget_after": format(bluetooth.forgetAfter),
      "bluetooth.max_devices": String(bluetooth.maxDevices),
      "bluetooth.presence.enter_rssi": String(bluetooth.presence.enterRSSI),
      "bluetooth.presence.leave_rssi": String(bluetooth.presence.leaveRSSI),
      "bluetooth.presence.half_life": format(bluetooth.presence.halfLife),
      "bluetooth.presence.away_after": format(bluetooth.presence.awayAfter),
      "bluetooth.connect.addresses": bluetooth.connect.addresses.joined(separator: ","),
      "bluetooth.connect.names": bluetooth.connect.names.joined(separator: ","),
      "bluetooth.connect.uuids": bluetooth.connect.uuids.joined(separator: ","),
      "bluetooth.connect.max_connections": String(bluetooth.connect.maxConnections),
      "bluetooth.connect.timeout": format(bluetooth.connect.timeout),
      "bluetooth.connect.retry_min_delay": format(bluetooth.connect.retryMinDelay),
      "bluetooth.connect.retry_max_delay": format(bluetooth.connect.retryMaxDelay),
      "bluetooth.gatt.timeout": format(bluetooth.gatt.timeout),
      "bluetooth.gatt.format": bluetooth.gatt.format.rawValue,
      "bluetooth.gatt.formats": bluetooth.gatt.formats.joined(separator: ","),
      "bluetooth.gatt.notify": bluetooth.gatt.notify.joined(separator: ","),
      "bluetooth.gatt.writable": bluetooth.gatt.writable.joined(separator: ","),
      "bluetooth.gatt.queue_limit": String(bluetooth.gatt.queueLimit),
      "bluetooth.transfer.service": bluetooth.transfer.service,
      "bluetooth.transfer.characteristic": bluetooth.transfer.characteristic,
      "bluetooth.transfer.max_bytes": String(bluetooth.transfer.maxBytes),
      "peripheral.enabled": String(peripheral.enabled),
      "peripheral.service": peripheral.service,
      "peripheral.characteristic": peripheral.characteristic,
      "peripheral.write_characteristic": peripheral.writeCharacteristic,
      "peripheral.local_name": peripheral.localName,
      "peripheral.adapter": peripheral.adapter,
      "peripheral.require_encryption": String(peripheral.requireEncryption),
      "peripheral.allow": peripheral.allow.joined(separator: ","),
      "peripheral.max_text_bytes": String(peripheral.maxTextBytes),
      "peripheral.chunk_interval": format(peripheral.chunkInterval),
    ]
    return ConfigurationKey.all.map { key in
      guard let value = values[key.path] else {
        preconditionFailure("redactedSummary() misses the key \(key.path)")
      }
      return (key.path, value)
    }
  }

  private func format(_ value: Double) -> String { ConfigurationLoader.KeyType.format(value) }

  /// `GatewayConfiguration(mqtt.host: localhost, …, mqtt.password: ***, …)`, secrets redacted.
  public var description: String {
    "GatewayConfiguration(" + Self.list(redactedSummary()) + ")"
  }

  /// The same as ``description``: secrets redacted.
  public var debugDescription: String { description }

  static func list(_ summary: [(key: String, value: String?)]) -> String {
    summary.map { "\($0.key): \($0.value ?? "nil")" }.joined(separator: ", ")
  }
}

extension GatewayConfiguration.MQTT: CustomStringConvertible, CustomDebugStringConvertible,
  CustomReflectable
{
  /// `MQTT(host: localhost, …, password: ***, …)`, the password redacted.
  public var description: String {
    let summary = GatewayConfiguration(mqtt: self).redactedSummary().compactMap {
      entry -> (key: String, value: String?)? in
      guard entry.key.hasPrefix("mqtt.") else { return nil }
      return (String(entry.key.dropFirst("mqtt.".count)), entry.value)
    }
    return "MQTT(" + GatewayConfiguration.list(summary) + ")"
  }

  /// The same as ``description``: the password redacted.
  public var debugDescription: String { description }

  /// The fields as `dump` shows them, the password redacted.
  public var customMirror: Mirror {
    let password: String? = password.map { _ in GatewayConfiguration.redacted }
    return Mirror(
      self,
      children: [
        "host": host, "port": port, "clientID": clientID as Any, "keepalive": keepalive,
        "cleanSession": cleanSession, "protocolVersion": protocolVersion,
        "username": username as Any, "password": password as Any, "baseTopic": baseTopic,
        "qos": qos, "retainValues": retainValues, "tls": tls, "reconnect": reconnect,
        "offlineQueue": offlineQueue, "inbound": inbound,
        "responseTopicPrefix": responseTopicPrefix as Any,
      ],
      displayStyle: .struct)
  }
}
