extension GatewayConfiguration {
  /// The embedded web page, JSON API and metrics (`web.*`).
  public struct Web: Sendable, Equatable {
    /// Whether the gateway serves the page, `/api/*`, `/healthz` and `/metrics`
    /// (`web.enabled`). Default `false`.
    public var enabled: Bool
    /// Where it listens, `<host>:<port>` (`web.listen`). Default `127.0.0.1:8080`: this
    /// machine only; `0.0.0.0:8080` serves the network (set `token` then).
    public var listen: String
    /// A token every request but `/healthz` must carry, as `Authorization: Bearer <token>` or
    /// `?token=<token>` (`web.token`, secret). Default none.
    public var token: String?

    /// The host and port of ``listen`` (an IPv6 host without its brackets), or `nil` when it is
    /// not `<host>:<port>`; the configuration loader refuses such a value.
    public var listenAddress: (host: String, port: Int)? {
      ConfigurationLoader.KeyType.listenAddress(listen)
    }

    /// Creates the settings with the documented defaults.
    ///
    /// - Parameters:
    ///   - enabled: Whether the web server runs.
    ///   - listen: Where it listens.
    ///   - token: The token, or `nil`.
    public init(enabled: Bool = false, listen: String = "127.0.0.1:8080", token: String? = nil) {
      self.enabled = enabled
      self.listen = listen
      self.token = token
    }
  }
}
