/// The gateway's version, printed by `--version` and published on the bridge `info` topic.
public enum GatewayVersion {
  /// Semantic version of this build.
  public static let current = "0.1.0"
}
