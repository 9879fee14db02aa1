extension GatewayConfiguration {
  /// How the gateway connects to the MQTT broker and publishes (`mqtt.*`).
  ///
  /// - Important: ``password`` is a secret: this type's `description`, `debugDescription` and
  ///   mirror (used by `dump`) show it as `***`.
  public struct MQTT: Sendable, Equatable {
    /// The MQTT protocol version to speak (`mqtt.protocol`).
    public enum ProtocolVersion: String, Sendable, Equatable, CaseIterable {
      /// MQTT 3.1.1, written `3.1.1` in the configuration.
      case v311 = "3.1.1"
      /// MQTT 5, written `5` in the configuration.
      case v5 = "5"
    }

    /// The broker's host name or IP address (`mqtt.host`). Default `localhost`.
    public var host: String
    /// The broker's TCP port, 1...65535 (`mqtt.port`). Default 1883.
    public var port: Int
    /// The MQTT client identifier (`mqtt.client_id`); `nil` means `gatt2mqtt-<gateway id>`,
    /// see ``resolvedClientID(gatewayID:instance:)``. Default `nil`.
    public var clientID: String?
    /// The keep-alive interval in seconds, 5...65535 (`mqtt.keepalive`). Default 60.
    public var keepalive: Int
    /// Whether the broker discards the session on connect (`mqtt.clean_session`). Default `true`.
    public var cleanSession: Bool
    /// The protocol version (`mqtt.protocol`, `3.1.1` or `5`). Default ``ProtocolVersion/v311``.
    public var protocolVersion: ProtocolVersion
    /// The user name for broker authentication (`mqtt.username`). Default `nil`.
    public var username: String?
    /// The password for broker authentication (`mqtt.password`). Default `nil`.
    ///
    /// - Important: A secret. Never log it; the descriptions of the configuration redact it.
    public var password: String?
    /// The first level(s) of every topic (`mqtt.base_topic`). Default `gatt2mqtt`.
    public var baseTopic: String
    /// The QoS of the gateway's publishes, 0...2 (`mqtt.qos`). Default 1.
    public var qos: Int
    /// Whether characteristic values are published retained (`mqtt.retain_values`).
    /// Default `false`.
    public var retainValues: Bool
    /// TLS to the broker (`mqtt.tls.*`).
    public var tls: TLS
    /// The reconnection back-off (`mqtt.reconnect.*`).
    public var reconnect: Reconnect
    /// The bound on messages held while the broker is unreachable (`mqtt.offline_queue.*`).
    public var offlineQueue: OfflineQueue
    /// Bounds on received payloads (`mqtt.inbound.*`).
    public var inbound: Inbound
    /// Where MQTT 5 requesters may have answers sent (`mqtt.response_topic_prefix`): a
    /// Response Topic is honoured only under this prefix, with a `response` level, and never on
    /// a topic a gateway takes requests from. `nil` means ``baseTopic``. Default `nil`.
    public var responseTopicPrefix: String?

    /// Creates MQTT settings; every omitted setting has its default.
    ///
    /// - Parameters:
    ///   - host: The broker's host name or address.
    ///   - port: The broker's TCP port.
    ///   - clientID: The client identifier, or `nil` for `gatt2mqtt-<gateway id>`.
    ///   - keepalive: The keep-alive interval in seconds.
    ///   - cleanSession: Whether the broker discards the session on connect.
    ///   - protocolVersion: The MQTT protocol version.
    ///   - username: The user name, if the broker needs one.
    ///   - password: The password (a secret), if the broker needs one.
    ///   - baseTopic: The first level(s) of every topic.
    ///   - qos: The QoS of the gateway's publishes.
    ///   - retainValues: Whether characteristic values are published retained.
    ///   - tls: TLS settings.
    ///   - reconnect: The reconnection back-off.
    ///   - offlineQueue: The bound on messages held while disconnected.
    ///   - inbound: Bounds on received payloads.
    ///   - responseTopicPrefix: Where MQTT 5 Response Topics may lie, or `nil` for the base
    ///     topic.
    public init(
      host: String = "localhost",
      port: Int = 1883,
      clientID: String? = nil,
      keepalive: Int = 60,
      cleanSession: Bool = true,
      protocolVersion: ProtocolVersion = .v311,
      username: String? = nil,
      password: String? = nil,
      baseTopic: String = "gatt2mqtt",
      qos: Int = 1,
      retainValues: Bool = false,
      tls: TLS = TLS(),
      reconnect: Reconnect = Reconnect(),
      offlineQueue: OfflineQueue = OfflineQueue(),
      inbound: Inbound = Inbound(),
      responseTopicPrefix: String? = nil
    ) {
      self.host = host
      self.port = port
      self.clientID = clientID
      self.keepalive = keepalive
      self.cleanSession = cleanSession
      self.protocolVersion = protocolVersion
      self.username = username
      self.password = password
      self.baseTopic = baseTopic
      self.qos = qos
      self.retainValues = retainValues
      self.tls = tls
      self.reconnect = reconnect
      self.offlineQueue = offlineQueue
      self.inbound = inbound
      self.responseTopicPrefix = responseTopicPrefix
    }

    /// The client id to connect with: ``clientID`` when set; else `gatt2mqtt-<gw>-<run>` (a
    /// new id per run, so that two processes with the same `gateway.id` do not take the
    /// connection from each other but see each other's state), or `gatt2mqtt-<gw>` with
    /// `clean_session: false` (a persistent session needs the same id at every run).
    ///
    /// - Parameters:
    ///   - gatewayID: The gateway's id.
    ///   - instance: This run's id (``GatewayInstance/id``).
    /// - Returns: The client id.
    public func resolvedClientID(gatewayID: String, instance: String) -> String {
      if let clientID { return clientID }
      return cleanSession ? "gatt2mqtt-\(gatewayID)-\(instance)" : "gatt2mqtt-\(gatewayID)"
    }
  }
}
