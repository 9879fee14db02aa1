extension GatewayConfiguration.MQTT {
  /// Bounds on what the gateway accepts from the broker (`mqtt.inbound.*`): the memory a
  /// sender can make it hold is bounded in bytes, not only in messages.
  public struct Inbound: Sendable, Equatable {
    /// The largest payload of a request — bridge requests, `/get`, `/set`, `/notify`,
    /// `connection/set` — in bytes (`mqtt.inbound.max_request_bytes`). A larger one is answered
    /// with `payload_too_large`. The peripheral text has its own bound,
    /// `peripheral.max_text_bytes`. Default 65 536.
    public var maxRequestBytes: Int
    /// The most payload bytes of received messages waiting to be handled
    /// (`mqtt.inbound.buffer_bytes`). Past it a request is answered `busy` and counted.
    /// Default 16 MiB.
    public var bufferBytes: Int

    /// Creates the bounds.
    ///
    /// - Parameters:
    ///   - maxRequestBytes: The largest request payload in bytes.
    ///   - bufferBytes: The byte budget of the buffer of received messages.
    public init(maxRequestBytes: Int = 65_536, bufferBytes: Int = 16 << 20) {
      self.maxRequestBytes = maxRequestBytes
      self.bufferBytes = bufferBytes
    }
  }
}
