public import BridgeCore
public import GatewaySettings
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
      incomingBufferBytes: mqtt.inbound.bufferBytes,
      publisherReadWindow: Self.publisherReadWindow(
        batchWindow: configuration.bluetooth.batchWindow))
  }

  /// The publishers' read window for a batch window: a little longer than the batch window, so that
  /// batches of a fast stream (one per window) still come within it and the acknowledgements of one
  /// are read when the next is handed over, not by the MQTT loop thread, which sleeps until the
  /// window ends after the last batch. An incoming message waits at most about a batch window while
  /// such a stream flows — the delay its values already accept. Never below the client's default
  /// (0.05 s).
  ///
  /// - Parameter batchWindow: `bluetooth.batch_window` in seconds.
  /// - Returns: The read window in seconds.
  public static func publisherReadWindow(batchWindow: Double) -> Double {
    max(0.05, batchWindow + 0.05)
  }
}
