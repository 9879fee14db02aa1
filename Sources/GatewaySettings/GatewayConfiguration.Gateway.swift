#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

extension GatewayConfiguration {
  /// The gateway's identity and housekeeping (`gateway.*`).
  public struct Gateway: Sendable, Equatable {
    /// This gateway's id, the `<gw>` topic level (`gateway.id`): up to 64 letters, digits, `_`
    /// and `-`, at least one a letter or digit. `nil` means the host name, reduced to those
    /// characters (BridgeCore's `GatewayID` does that; see ``systemHostname()``). Default `nil`.
    public var id: String?
    /// Seconds between two health reports, greater than 0 (`gateway.health_interval`).
    /// Default 60.
    public var healthInterval: Double

    /// Creates gateway settings.
    ///
    /// - Parameters:
    ///   - id: The gateway id, or `nil` for the host name.
    ///   - healthInterval: Seconds between two health reports.
    public init(id: String? = nil, healthInterval: Double = 60) {
      self.id = id
      self.healthInterval = healthInterval
    }

    /// This machine's host name as `gethostname(2)` reports it, the source of the gateway id
    /// when ``id`` is `nil`; empty if it fails.
    ///
    /// - Returns: The host name, or an empty string.
    public static func systemHostname() -> String {
      var buffer = [CChar](repeating: 0, count: 256)
      guard gethostname(&buffer, buffer.count - 1) == 0 else { return "" }
      let bytes = buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }
      return String(decoding: bytes, as: UTF8.self)
    }
  }
}
