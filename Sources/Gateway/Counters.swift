import Synchronization

/// Counters of the gateway itself (the MQTT client keeps its own).
final class Counters: Sendable {
  /// Bridge and device requests answered with an error.
  let requestErrors = Mutex<UInt64>(0)
}
