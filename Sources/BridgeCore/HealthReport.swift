/// The figures behind one `<base>/bridge/<gw>/health` message.
public struct HealthReport: Sendable, Hashable {
  /// Seconds since the gateway started.
  public var uptime: Double
  /// Resident memory of the process in bytes, if known.
  public var residentMemoryBytes: Int?
  /// Messages the broker acknowledged (QoS ≥ 1) or that were written (QoS 0).
  public var published: UInt64
  /// Messages received from the broker.
  public var received: UInt64
  /// Messages waiting in the offline queue now.
  public var queued: Int
  /// Messages handed to the connection and not yet acknowledged.
  public var inflight: Int
  /// Messages dropped from the full offline queue since start.
  public var dropped: UInt64
  /// Successful reconnections since start.
  public var reconnects: UInt64
  /// Failed connection attempts and lost connections since start.
  public var connectionFailures: UInt64
  /// Requests answered with an error since start.
  public var requestErrors: UInt64
  /// Received messages dropped whole because the gateway fell behind (buffer full in messages).
  public var receivedDropped: UInt64 = 0
  /// Received messages whose payload was left out (too large, or buffer full in bytes).
  public var receivedDiscarded: UInt64 = 0
  /// Requests answered `payload_too_large` or `busy` without being read.
  public var requestsRefused: UInt64 = 0
  /// MQTT 5 Response Topics not honoured (``ReplyTopicPolicy``).
  public var repliesRefused: UInt64 = 0
  /// Publishes per second since the previous report.
  public var publishRate: Double
  /// Why the gateway is not healthy, one sentence each: empty when it is (``healthy``).
  public var reasons: [String] = []
  /// Further sections from the gateway's parts (for example `"discovery"`), added as they are.
  public var sections: JSONObject = JSONObject()

  /// Creates a report; every counter defaults to zero.
  public init(
    uptime: Double, residentMemoryBytes: Int? = nil, published: UInt64 = 0, received: UInt64 = 0,
    queued: Int = 0, inflight: Int = 0, dropped: UInt64 = 0, reconnects: UInt64 = 0,
    connectionFailures: UInt64 = 0, requestErrors: UInt64 = 0, publishRate: Double = 0
  ) {
    self.uptime = uptime
    self.residentMemoryBytes = residentMemoryBytes
    self.published = published
    self.received = received
    self.queued = queued
    self.inflight = inflight
    self.dropped = dropped
    self.reconnects = reconnects
    self.connectionFailures = connectionFailures
    self.requestErrors = requestErrors
    self.publishRate = publishRate
  }

  /// Whether the gateway does its job: no ``reasons`` against it.
  public var healthy: Bool { reasons.isEmpty }

  /// The JSON payload published on the health topic (and `health_check`'s `data`):
  /// `{"healthy":false,"reasons":["not connected to the MQTT broker"],"uptime":…}`.
  public var json: JSONValue {
    let rss: JSONValue = residentMemoryBytes.map { .integer(Int64($0)) } ?? .null
    var object: JSONObject = [
      "healthy": .bool(healthy),
      "reasons": .array(reasons.map { .string($0) }),
      "uptime": .number((uptime * 10).rounded() / 10),
      "rss_bytes": rss,
      "rates": ["publishes_per_s": .number((publishRate * 100).rounded() / 100)],
      "mqtt": [
        "published": .integer(Int64(clamping: published)),
        "received": .integer(Int64(clamping: received)),
        "queued": .integer(Int64(queued)),
        "inflight": .integer(Int64(inflight)),
        "dropped": .integer(Int64(clamping: dropped)),
        "reconnects": .integer(Int64(clamping: reconnects)),
        "connection_failures": .integer(Int64(clamping: connectionFailures)),
        "received_dropped": .integer(Int64(clamping: receivedDropped)),
        "received_discarded": .integer(Int64(clamping: receivedDiscarded)),
      ],
      "errors": [
        "requests": .integer(Int64(clamping: requestErrors)),
        "requests_refused": .integer(Int64(clamping: requestsRefused)),
        "replies_refused": .integer(Int64(clamping: repliesRefused)),
      ],
    ]
    for (key, value) in sections { object[key] = value }
    return .object(object)
  }
}
