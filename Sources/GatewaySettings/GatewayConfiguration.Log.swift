extension GatewayConfiguration {
  /// Logging settings (`log.*`).
  public struct Log: Sendable, Equatable {
    /// The lowest severity logged (`log.level`).
    ///
    /// The raw values are swift-log's `Logger.Level` raw values.
    public enum Level: String, Sendable, Equatable, CaseIterable {
      /// `trace`
      case trace
      /// `debug`
      case debug
      /// `info`
      case info
      /// `notice`
      case notice
      /// `warning`
      case warning
      /// `error`
      case error
      /// `critical`
      case critical
    }

    /// The lowest severity logged (`log.level`). Default ``Level/info``.
    public var level: Level

    /// Creates logging settings.
    ///
    /// - Parameter level: The lowest severity logged.
    public init(level: Level = .info) {
      self.level = level
    }
  }
}
