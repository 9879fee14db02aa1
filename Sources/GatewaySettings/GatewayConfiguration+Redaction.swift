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
    ConfigurationKey.all.map { key in (key.path, key.value(self)) }
  }

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

extension GatewayConfiguration.Web: CustomStringConvertible, CustomDebugStringConvertible,
  CustomReflectable
{
  /// `Web(enabled: true, listen: 127.0.0.1:8080, token: ***)`, the token redacted.
  public var description: String {
    "Web(enabled: \(enabled), listen: \(listen), token: "
      + (token == nil ? "nil" : GatewayConfiguration.redacted) + ")"
  }

  /// The same as ``description``: the token redacted.
  public var debugDescription: String { description }

  /// The fields as `dump` shows them, the token redacted.
  public var customMirror: Mirror {
    let token: String? = token.map { _ in GatewayConfiguration.redacted }
    return Mirror(
      self, children: ["enabled": enabled, "listen": listen, "token": token as Any],
      displayStyle: .struct)
  }
}
