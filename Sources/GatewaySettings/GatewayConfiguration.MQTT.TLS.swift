extension GatewayConfiguration.MQTT {
  /// TLS to the broker (`mqtt.tls.*`).
  ///
  /// When `mqtt.tls.enabled` is not set in any source, ``ConfigurationLoader`` turns TLS on as
  /// soon as `ca_file`, `cert_file` or `key_file` is set or `insecure` is true. Setting
  /// `enabled: false` together with any of those is an error, and so is a certificate without
  /// its key (or a key without its certificate).
  public struct TLS: Sendable, Equatable {
    /// Whether the connection uses TLS (`mqtt.tls.enabled`). Default `false`.
    public var enabled: Bool
    /// A PEM file of CA certificates to verify the broker with (`mqtt.tls.ca_file`);
    /// `nil` means the system's trust store. Default `nil`.
    public var caFile: String?
    /// A PEM client certificate (`mqtt.tls.cert_file`); needs ``keyFile``. Default `nil`.
    public var certFile: String?
    /// The PEM private key of ``certFile`` (`mqtt.tls.key_file`). Default `nil`.
    public var keyFile: String?
    /// Skip verifying the broker's certificate and host name (`mqtt.tls.insecure`); for tests
    /// only. Default `false`.
    public var insecure: Bool

    /// Creates TLS settings; every omitted setting has its default.
    ///
    /// - Parameters:
    ///   - enabled: Whether the connection uses TLS.
    ///   - caFile: CA certificates to verify the broker with.
    ///   - certFile: The client certificate.
    ///   - keyFile: The client certificate's private key.
    ///   - insecure: Whether to skip verifying the broker.
    public init(
      enabled: Bool = false,
      caFile: String? = nil,
      certFile: String? = nil,
      keyFile: String? = nil,
      insecure: Bool = false
    ) {
      self.enabled = enabled
      self.caFile = caFile
      self.certFile = certFile
      self.keyFile = keyFile
      self.insecure = insecure
    }
  }
}
