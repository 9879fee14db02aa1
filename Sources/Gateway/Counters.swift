import Synchronization

/// Counters of the gateway itself (the MQTT client keeps its own).
final class Counters: Sendable {
  /// Bridge and device requests answered with an error.
  let requestErrors = Mutex<UInt64>(0)
  /// Requests refused without being read: payload over its bound, or no room to hold it.
  let requestsRefused = Mutex<UInt64>(0)
  /// MQTT 5 Response Topics not honoured (``ReplyTopicPolicy``).
  let repliesRefused = Mutex<UInt64>(0)
  /// Publishes per second over the last health interval, for on-demand `health_check`.
  let publishRate = Mutex<Double>(0)
}
