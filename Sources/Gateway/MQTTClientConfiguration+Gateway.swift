public import BridgeCore
public import Mosquitto

extension MQTTClientConfiguration {
  /// The MQTT client settings for a gateway: broker, credentials, TLS, reconnect policy,
  /// offline queue, and the retained `offline` state of this run as last will.
  ///
  /// - Parameters:
  ///   - configuration: The loaded configuration.
  ///   - topics: The gateway's topics.
  ///   - instance: This run (its id goes into the will and the default client id).
  public init(
    gateway configuration: GatewayConfiguration, topics: Topics, instance: GatewayInstance
  ) {
    let mqtt = configuration.mqtt
    var tls: TLS?
    if mqtt.tls.enabled {
      tls = TLS(
        caFile: mqtt.tls.caFile, certFile: mqtt.tls.certFile, keyFile: mqtt.tls.keyFile,
        insecure: mqtt.tls.insecure)
    }
    self.init(
      host: mqtt.host, port: mqtt.port,
      clientID: mqtt.resolvedClientID(gatewayID: topics.gateway.rawValue, instance: instance.id),
      keepalive: mqtt.keepalive, cleanSession: mqtt.cleanSession,
      protocolVersion: mqtt.protocolVersion == .v5 ? .v5 : .v311,
      username: mqtt.username, password: mqtt.password, tls: tls,
      will: MQTTMessage(
        topic: topics.bridgeState.rawValue, payload: instance.statePayload(online: false),
        qos: .atLeastOnce, retain: true),
      minReconnectDelay: mqtt.reconnect.minDelay, maxReconnectDelay: mqtt.reconnect.maxDelay,
      offlineQueueCapacity: mqtt.offlineQueue.maxMessages,
      dropPolicy: mqtt.offlineQueue.policy == .dropNewest ? .dropNewest : .dropOldest,
      // A message larger than every topic's own bound is never kept; the gateway checks each
      // topic kind's bound itself and answers the sender.
      maxIncomingMessageBytes: max(
        mqtt.inbound.maxRequestBytes, configuration.peripheral.maxTextBytes + 1024),
      incomingBufferBytes: mqtt.inbound.bufferBytes)
  }
}
