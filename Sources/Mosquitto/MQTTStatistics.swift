/// Counters of one ``MQTTClient``, read with ``MQTTClient/statistics``.
public struct MQTTStatistics: Sendable, Hashable {
  /// Messages the broker acknowledged (QoS ≥ 1) or that were written to the socket (QoS 0).
  public var published: UInt64 = 0
  /// Messages received from the broker.
  public var received: UInt64 = 0
  /// Received messages lost because the consumer of ``MQTTClient/messages`` fell behind and
  /// ``MQTTClient/overflow`` was full too.
  public var receivedDropped: UInt64 = 0
  /// Received messages delivered without their payload: too large, or the buffer of received
  /// messages was full in bytes or in count (see ``MQTTMessage/discarded``,
  /// ``MQTTClient/overflow``).
  public var receivedDiscarded: UInt64 = 0
  /// Payload bytes of received messages waiting for the consumer right now.
  public var incomingBytes: Int = 0
  /// Messages waiting in the bounded offline queue right now.
  public var queued: Int = 0
  /// Messages handed to the broker connection and not yet acknowledged.
  public var inflight: Int = 0
  /// Messages dropped from the offline queue because it was full (total).
  public var dropped: UInt64 = 0
  /// Successful connections after the first one.
  public var reconnects: UInt64 = 0
  /// Failed connection attempts and lost connections (total).
  public var connectionFailures: UInt64 = 0
  /// Whether the client holds an accepted connection right now.
  public var connected: Bool = false
  /// Times another thread woke the loop thread (a command for it, or work a publishing thread
  /// left it); a publication handed over directly needs none.
  public var loopWakeUps: UInt64 = 0
  /// Times the loop thread read the broker's socket because `poll` said it was readable. While
  /// a thread hands over publications, that thread reads the acknowledgements (and whatever
  /// else arrived) before each batch, and the loop thread leaves the socket to it.
  public var loopReads: UInt64 = 0
  /// Times the loop thread's `poll` returned (woken by anything, or at a deadline). While
  /// publishers read the input, the end of their read window wakes it once, after the last
  /// batch (a kernel timer that each batch pushes back), not once per batch.
  public var loopTurns: UInt64 = 0
  /// Lines libmosquitto formatted for its log callback. It formats one for every packet sent
  /// or received while the callback is set, so the client sets it only while it is not
  /// connected, when those lines explain a failure.
  public var libraryLogLines: UInt64 = 0

  /// All counters at zero.
  public init() {}
}
