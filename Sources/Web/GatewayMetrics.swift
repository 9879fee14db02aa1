public import BridgeCore
import CoreMetrics
import Prometheus
import Synchronization

/// The gateway's metrics in Prometheus's text format (`/metrics`), made through swift-metrics
/// with swift-prometheus's factory on a registry of the gateway's own (no global bootstrap, so
/// several gateways in one process keep theirs apart).
///
/// Two sources: the counters the gateway already keeps for `health` (MQTT messages, adverts,
/// connections, notifications, GATT operations, transfers), copied in at each scrape —
/// counters grow by what their `health` figure grew since the last scrape, gauges take its
/// value — and observations made as they happen (``recordOperation(_:ok:seconds:)``: GATT
/// operations by kind and result, with a latency histogram). Connections by state come from
/// the retained devices list.
public final class GatewayMetrics: Sendable {
  private let registry = PrometheusCollectorRegistry()
  private let factory: PrometheusMetricsFactory
  /// The `health` figures last copied into counters, by metric.
  private let last = Mutex<[String: Int64]>([:])

  /// Counters: metric name → the path of its figure in the health JSON, and help text.
  private static let counters: [(name: String, path: [String], help: String)] = [
    ("gatt2mqtt_mqtt_messages_published_total", ["mqtt", "published"], "MQTT messages published"),
    ("gatt2mqtt_mqtt_messages_received_total", ["mqtt", "received"], "MQTT messages received"),
    (
      "gatt2mqtt_mqtt_messages_dropped_total", ["mqtt", "dropped"],
      "messages dropped by the offline queue"
    ),
    (
      "gatt2mqtt_mqtt_received_dropped_total", ["mqtt", "received_dropped"],
      "received messages lost unanswered"
    ),
    (
      "gatt2mqtt_mqtt_received_discarded_total", ["mqtt", "received_discarded"],
      "received messages answered busy or too large"
    ),
    ("gatt2mqtt_mqtt_reconnects_total", ["mqtt", "reconnects"], "MQTT reconnects"),
    (
      "gatt2mqtt_mqtt_connection_failures_total", ["mqtt", "connection_failures"],
      "failed MQTT connection attempts"
    ),
    ("gatt2mqtt_request_errors_total", ["errors", "requests"], "requests answered with an error"),
    (
      "gatt2mqtt_advertisements_received_total", ["discovery", "adverts_received"],
      "advertisements received"
    ),
    (
      "gatt2mqtt_advertisements_published_total", ["discovery", "adverts_published"],
      "advertisements published"
    ),
    (
      "gatt2mqtt_advertisements_filtered_total", ["discovery", "adverts_filtered"],
      "advertisements the filter refused"
    ),
    (
      "gatt2mqtt_connect_attempts_total", ["connections", "connect_attempts"], "connection attempts"
    ),
    (
      "gatt2mqtt_connect_failures_total", ["connections", "connect_failures"],
      "failed connection attempts"
    ),
    (
      "gatt2mqtt_unexpected_disconnects_total", ["connections", "unexpected_disconnects"],
      "links the device dropped"
    ),
    ("gatt2mqtt_notifications_total", ["connections", "notifications"], "notifications forwarded"),
    (
      "gatt2mqtt_notification_backlogs_total", ["connections", "notification_backlogs"],
      "notification channels found holding a backlog (values may have been lost)"
    ),
    (
      "gatt2mqtt_gatt_operations_total", ["connections", "gatt_operations"],
      "GATT operations carried out"
    ),
    ("gatt2mqtt_gatt_errors_total", ["connections", "gatt_errors"], "GATT operations that failed"),
    (
      "gatt2mqtt_central_transfers_total", ["connections", "transfers"],
      "texts reassembled from devices"
    ),
    (
      "gatt2mqtt_peripheral_transfers_total", ["peripheral", "transfers_sent"],
      "texts sent to centrals"
    ),
    (
      "gatt2mqtt_peripheral_transfers_aborted_total", ["peripheral", "transfers_aborted"],
      "texts to centrals aborted"
    ),
  ]

  /// Gauges: metric name → the path of its figure in the health JSON, and help text.
  private static let gauges: [(name: String, path: [String], help: String)] = [
    ("gatt2mqtt_uptime_seconds", ["uptime"], "seconds since the gateway started"),
    ("gatt2mqtt_resident_memory_bytes", ["rss_bytes"], "resident memory"),
    ("gatt2mqtt_mqtt_messages_queued", ["mqtt", "queued"], "messages waiting for the broker"),
    (
      "gatt2mqtt_mqtt_messages_inflight", ["mqtt", "inflight"],
      "QoS 1/2 messages not yet acknowledged"
    ),
    ("gatt2mqtt_devices", ["discovery", "devices"], "devices in the registry"),
    ("gatt2mqtt_connections", ["connections", "connections"], "connected devices"),
    ("gatt2mqtt_gatt_queued", ["connections", "gatt_queued"], "GATT operations waiting"),
    (
      "gatt2mqtt_peripheral_text_bytes", ["peripheral", "text_bytes"],
      "bytes of the text the peripheral serves"
    ),
  ]

  /// The connection states devices are counted by.
  private static let states = [
    "disconnected", "connecting", "connected", "discovering", "ready", "failed",
  ]

  /// Makes an empty set of metrics.
  public init() {
    factory = PrometheusMetricsFactory(registry: registry)
    for counter in Self.counters {
      _ = registry.makeCounter(descriptor: Self.descriptor(counter.name, counter.help))
    }
    for gauge in Self.gauges {
      _ = registry.makeGauge(descriptor: Self.descriptor(gauge.name, gauge.help))
    }
  }

  /// A metric's full name and help text as swift-prometheus takes them (no unit suffix: the
  /// names above carry theirs).
  private static func descriptor(_ name: String, _ help: String) -> MetricNameDescriptor {
    MetricNameDescriptor(metricName: name, unitName: "", helpText: help)
  }

  /// Records one GATT operation as it completes.
  ///
  /// - Parameters:
  ///   - kind: `read`, `write`, `notify`.
  ///   - ok: Whether it succeeded.
  ///   - seconds: How long it took.
  public func recordOperation(_ kind: String, ok: Bool, seconds: Double) {
    let dimensions = [("op", kind), ("result", ok ? "ok" : "error")]
    Timer(
      label: "gatt2mqtt_gatt_operation_duration_seconds", dimensions: dimensions,
      factory: factory
    ).recordNanoseconds(Int64((seconds * 1e9).rounded()))
  }

  /// Records one D-Bus method call to bluetoothd or the bus as it completes.
  ///
  /// - Parameters:
  ///   - method: The method's name (`Connect`, `ReadValue`, `StartDiscovery`, …).
  ///   - ok: Whether it succeeded.
  ///   - seconds: How long it took.
  public func recordDBusCall(_ method: String, ok: Bool, seconds: Double) {
    let dimensions = [("method", method), ("result", ok ? "ok" : "error")]
    Timer(
      label: "gatt2mqtt_dbus_call_duration_seconds", dimensions: dimensions, factory: factory
    ).recordNanoseconds(Int64((seconds * 1e9).rounded()))
  }

  /// The metrics in Prometheus's text format, after copying in the gateway's current figures.
  ///
  /// - Parameters:
  ///   - health: The gateway's `health_check` report.
  ///   - devices: The retained devices list (`bridge/<gw>/devices`), if any.
  /// - Returns: The exposition text.
  public func render(health: JSONValue, devices: JSONValue?) -> [UInt8] {
    func figure(_ path: [String]) -> Double? {
      var value: JSONValue? = health
      for key in path { value = value?[key] }
      return value?.doubleValue
    }
    last.withLock { last in
      for counter in Self.counters {
        guard let value = figure(counter.path) else { continue }
        let now = Int64(value)
        let delta = now - (last[counter.name] ?? 0)
        last[counter.name] = now
        if delta > 0 {
          registry.makeCounter(descriptor: Self.descriptor(counter.name, counter.help))
            .increment(by: delta)
        }
      }
    }
    for gauge in Self.gauges {
      if let value = figure(gauge.path) {
        registry.makeGauge(descriptor: Self.descriptor(gauge.name, gauge.help)).set(value)
      }
    }
    registry.makeGauge(
      descriptor: Self.descriptor("gatt2mqtt_healthy", "1 when health_check says healthy")
    ).set(health["healthy"]?.boolValue == true ? 1.0 : 0.0)
    var byState = Dictionary(uniqueKeysWithValues: Self.states.map { ($0, 0) })
    for device in devices?.arrayValue ?? [] {
      if let state = device["connection"]?.stringValue { byState[state, default: 0] += 1 }
    }
    for (state, count) in byState {
      registry.makeGauge(
        descriptor: Self.descriptor(
          "gatt2mqtt_devices_by_connection_state", "devices by the state of their link"),
        labels: [("state", state)]
      ).set(Double(count))
    }
    return registry.emitToBuffer()
  }
}
