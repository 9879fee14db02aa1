/// Everything ``MQTTClient`` needs to reach and talk to a broker.
public struct MQTTClientConfiguration: Sendable, Hashable {
  /// MQTT protocol version spoken to the broker.
  public enum ProtocolVersion: String, Sendable, Hashable, CaseIterable {
    /// MQTT 3.1.1.
    case v311 = "3.1.1"
    /// MQTT 5.
    case v5 = "5"
  }

  /// What to do when the offline queue is full.
  public enum DropPolicy: String, Sendable, Hashable, CaseIterable {
    /// Drop the oldest queued message to make room (fresh state wins).
    case dropOldest = "drop_oldest"
    /// Refuse the new message and keep the queue as it is.
    case dropNewest = "drop_newest"
  }

  /// TLS settings. `nil` in ``MQTTClientConfiguration/tls`` means plain TCP.
  public struct TLS: Sendable, Hashable {
    /// PEM file of the certificate authorities to trust; `nil` uses the system's store.
    public var caFile: String?
    /// PEM client certificate for mutual TLS (requires ``keyFile``).
    public var certFile: String?
    /// PEM private key of ``certFile``.
    public var keyFile: String?
    /// Skips certificate and host-name verification. Never use in production.
    public var insecure: Bool

    /// Creates TLS settings.
    public init(
      caFile: String? = nil, certFile: String? = nil, keyFile: String? = nil,
      insecure: Bool = false
    ) {
      self.caFile = caFile
      self.certFile = certFile
      self.keyFile = keyFile
      self.insecure = insecure
    }
  }

  /// Broker host name or address.
  public var host: String
  /// Broker TCP port.
  public var port: Int
  /// Client identifier; must be unique per broker.
  public var clientID: String
  /// Keepalive interval in seconds.
  public var keepalive: Int
  /// Whether the broker discards the session (subscriptions, queued messages) on disconnect.
  public var cleanSession: Bool
  /// MQTT protocol version.
  public var protocolVersion: ProtocolVersion
  /// User name, if the broker needs one.
  public var username: String?
  /// Password, if the broker needs one. Never logged.
  public var password: String?
  /// TLS settings, or `nil` for plain TCP.
  public var tls: TLS?
  /// Message the broker publishes when the connection drops without a DISCONNECT.
  public var will: MQTTMessage?
  /// First reconnect delay in seconds; doubles per failure up to ``maxReconnectDelay``.
  public var minReconnectDelay: Double
  /// Ceiling of the reconnect delay in seconds.
  public var maxReconnectDelay: Double
  /// Capacity of the offline queue (messages published while not connected).
  public var offlineQueueCapacity: Int
  /// What happens when the offline queue is full.
  public var dropPolicy: DropPolicy
  /// Maximum number of QoS ≥ 1 messages handed to the connection and not yet acknowledged.
  public var maxInflight: Int
  /// Capacity of the incoming message buffer in messages; further messages are counted and
  /// dropped.
  public var incomingBufferCapacity: Int
  /// The largest payload of a received message, in bytes. A larger one is delivered without
  /// its payload (``MQTTMessage/discarded`` is ``MQTTDiscardReason/tooLarge(bytes:)``), so that
  /// a sender cannot make the client hold it. Default 1 MiB.
  public var maxIncomingMessageBytes: Int
  /// The most payload bytes the buffer of received messages holds. A message that would take
  /// it past this is delivered without its payload
  /// (``MQTTDiscardReason/bufferFull(bytes:)``). Default 16 MiB.
  public var incomingBufferBytes: Int
  /// Seconds during which, while publications come less than this far apart, the thread that
  /// hands them over reads what the broker sent (acknowledgements, messages) and the loop
  /// thread does not wake for it. What arrives meanwhile waits until the next publication or
  /// the window's end, so this bounds the delay of an incoming message while a stream flows.
  /// Default 0.05; a publisher that hands over batches further apart (a batch window) sets it
  /// a little above that interval, or the loop thread reads every batch's acknowledgements
  /// itself.
  public var publisherReadWindow: Double

  /// Creates a configuration; only the broker address is required.
  public init(
    host: String = "localhost", port: Int = 1883, clientID: String, keepalive: Int = 60,
    cleanSession: Bool = true, protocolVersion: ProtocolVersion = .v311,
    username: String? = nil, password: String? = nil, tls: TLS? = nil,
    will: MQTTMessage? = nil, minReconnectDelay: Double = 1, maxReconnectDelay: Double = 60,
    offlineQueueCapacity: Int = 10_000, dropPolicy: DropPolicy = .dropOldest,
    maxInflight: Int = 100, incomingBufferCapacity: Int = 10_000,
    maxIncomingMessageBytes: Int = 1 << 20, incomingBufferBytes: Int = 16 << 20,
    publisherReadWindow: Double = 0.05
  ) {
    self.host = host
    self.port = port
    self.clientID = clientID
    self.keepalive = keepalive
    self.cleanSession = cleanSession
    self.protocolVersion = protocolVersion
    self.username = username
    self.password = password
    self.tls = tls
    self.will = will
    self.minReconnectDelay = minReconnectDelay
    self.maxReconnectDelay = maxReconnectDelay
    self.offlineQueueCapacity = offlineQueueCapacity
    self.dropPolicy = dropPolicy
    self.maxInflight = maxInflight
    self.incomingBufferCapacity = incomingBufferCapacity
    self.maxIncomingMessageBytes = maxIncomingMessageBytes
    self.incomingBufferBytes = incomingBufferBytes
    self.publisherReadWindow = publisherReadWindow
  }
}

extension MQTTClientConfiguration: CustomStringConvertible {
  /// A one-line summary with the password redacted.
  public var description: String {
    var parts = [
      "host=\(host)", "port=\(port)", "client_id=\(clientID)",
      "protocol=\(protocolVersion.rawValue)", "keepalive=\(keepalive)",
      "clean_session=\(cleanSession)",
    ]
    if let username { parts.append("username=\(username)") }
    if password != nil { parts.append("password=***") }
    if let tls { parts.append("tls=on insecure=\(tls.insecure)") }
    return "MQTTClientConfiguration(" + parts.joined(separator: " ") + ")"
  }
}
