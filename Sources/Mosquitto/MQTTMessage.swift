/// Quality of service of an MQTT publish or subscription.
public enum MQTTQoS: Int, Sendable, Hashable, Comparable, CaseIterable {
  /// At most once: fire and forget.
  case atMostOnce = 0
  /// At least once: the broker acknowledges with PUBACK; duplicates are possible.
  case atLeastOnce = 1
  /// Exactly once: four-way handshake.
  case exactlyOnce = 2

  /// Orders quality-of-service levels by strength.
  public static func < (lhs: MQTTQoS, rhs: MQTTQoS) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// MQTT 5 properties carried by a PUBLISH packet (ignored when the session speaks MQTT 3.1.1).
public struct MQTTPublishProperties: Sendable, Hashable {
  /// Lifetime of the message in seconds; the broker discards it afterwards.
  public var messageExpiryInterval: UInt32?
  /// Topic a responder should publish its answer to.
  public var responseTopic: String?
  /// Opaque bytes a responder echoes back so the requester can match the answer.
  public var correlationData: [UInt8]?
  /// Free-form name/value pairs, in order; names may repeat.
  public var userProperties: [MQTTUserProperty]
  /// MIME type of the payload.
  public var contentType: String?

  /// Creates a property set; every property is optional.
  public init(
    messageExpiryInterval: UInt32? = nil, responseTopic: String? = nil,
    correlationData: [UInt8]? = nil, userProperties: [MQTTUserProperty] = [],
    contentType: String? = nil
  ) {
    self.messageExpiryInterval = messageExpiryInterval
    self.responseTopic = responseTopic
    self.correlationData = correlationData
    self.userProperties = userProperties
    self.contentType = contentType
  }

  /// True when no property is set.
  public var isEmpty: Bool {
    messageExpiryInterval == nil && responseTopic == nil && correlationData == nil
      && userProperties.isEmpty && contentType == nil
  }
}

/// One MQTT 5 user property.
public struct MQTTUserProperty: Sendable, Hashable {
  /// The property's name.
  public var name: String
  /// The property's value.
  public var value: String

  /// Creates a user property.
  public init(_ name: String, _ value: String) {
    self.name = name
    self.value = value
  }
}

/// Why a received message reached the consumer without its payload.
public enum MQTTDiscardReason: Sendable, Hashable {
  /// The payload had `bytes` bytes, more than
  /// ``MQTTClientConfiguration/maxIncomingMessageBytes`` allows.
  case tooLarge(bytes: Int)
  /// The payload had `bytes` bytes and the buffer of received messages already held
  /// ``MQTTClientConfiguration/incomingBufferBytes`` (the consumer fell behind).
  case bufferFull(bytes: Int)
}

/// An MQTT application message, outgoing or incoming.
public struct MQTTMessage: Sendable, Hashable {
  /// The topic name (never a filter).
  public var topic: String
  /// The payload bytes, as they travel on the wire.
  public var payload: [UInt8]
  /// Quality of service.
  public var qos: MQTTQoS
  /// Whether the broker keeps the message as the topic's retained value.
  public var retain: Bool
  /// MQTT 5 properties.
  public var properties: MQTTPublishProperties {
    get { boxedProperties?.value ?? MQTTPublishProperties() }
    set { boxedProperties = newValue.isEmpty ? nil : PropertiesBox(newValue) }
  }
  /// The properties when there are any: most messages have none, and a message is copied
  /// several times on its way to the broker (one reference instead of five fields to copy).
  private var boxedProperties: PropertiesBox?
  /// Whether ``properties`` has any.
  var hasProperties: Bool { boxedProperties != nil }
  /// For received QoS ≥ 1 messages, the broker's packet identifier (0 otherwise). A broker
  /// re-delivering a message it could not confirm (after a restart, say) reuses the identifier.
  public var packetIdentifier: Int = 0
  /// For received messages, why the client delivered this one without its payload (which is
  /// then empty), or `nil` when the payload is complete. The topic and properties are kept so
  /// that the receiver can still answer the sender with a clear error.
  public var discarded: MQTTDiscardReason?

  /// Creates a message with a byte payload.
  public init(
    topic: String, payload: [UInt8], qos: MQTTQoS = .atMostOnce, retain: Bool = false,
    properties: MQTTPublishProperties = MQTTPublishProperties()
  ) {
    self.topic = topic
    self.payload = payload
    self.qos = qos
    self.retain = retain
    self.properties = properties
  }

  /// Creates a message with a UTF-8 text payload.
  public init(
    topic: String, text: String, qos: MQTTQoS = .atMostOnce, retain: Bool = false,
    properties: MQTTPublishProperties = MQTTPublishProperties()
  ) {
    self.init(
      topic: topic, payload: Array(text.utf8), qos: qos, retain: retain, properties: properties)
  }

  /// The payload decoded as UTF-8, or `nil` when it is not valid UTF-8.
  public var text: String? {
    var iterator = payload.makeIterator()
    var decoder = UTF8()
    var result = ""
    result.reserveCapacity(payload.count)
    while true {
      switch decoder.decode(&iterator) {
      case .scalarValue(let scalar): result.unicodeScalars.append(scalar)
      case .emptyInput: return result
      case .error: return nil
      }
    }
  }
}

/// Publish properties behind one reference (``MQTTMessage/properties``).
private final class PropertiesBox: Sendable, Hashable {
  let value: MQTTPublishProperties

  init(_ value: MQTTPublishProperties) { self.value = value }

  static func == (lhs: PropertiesBox, rhs: PropertiesBox) -> Bool { lhs.value == rhs.value }

  func hash(into hasher: inout Hasher) { hasher.combine(value) }
}
