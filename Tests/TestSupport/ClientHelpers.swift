public import Foundation
public import Logging
public import Mosquitto
import Synchronization

/// A logger that stays quiet unless `GATT2MQTT_TEST_LOG` is set.
public func quietLogger(_ label: String) -> Logger {
  var logger = Logger(label: label)
  logger.logLevel =
    ProcessInfo.processInfo.environment["GATT2MQTT_TEST_LOG"] == nil ? .critical : .debug
  return logger
}

/// A client configuration pointing at `broker` with quick reconnects.
public func configuration(
  _ broker: Broker, id: String = "test-\(UUID().uuidString.prefix(8))",
  version: MQTTClientConfiguration.ProtocolVersion = .v311
) -> MQTTClientConfiguration {
  MQTTClientConfiguration(
    host: "127.0.0.1", port: broker.port, clientID: id, keepalive: 10,
    protocolVersion: version, minReconnectDelay: 0.05, maxReconnectDelay: 0.5)
}

/// Collects every message a client receives, for assertions.
public final class Collector: Sendable {
  private final class Box: Sendable {
    let messages = Mutex<[(message: MQTTMessage, at: Double)]>([])
  }
  private let box = Box()
  private let task: Task<Void, Never>

  /// Starts collecting what `client` receives.
  public init(_ client: MQTTClient) {
    let box = self.box
    task = Task {
      for await message in client.messages {
        let at = monotonicSeconds()
        box.messages.withLock { $0.append((message, at)) }
      }
    }
  }

  deinit { task.cancel() }

  /// Everything received so far, in order.
  public var messages: [MQTTMessage] { box.messages.withLock { $0.map(\.message) } }

  /// When each message arrived (``monotonicSeconds()``), in order.
  public var arrivals: [Double] { box.messages.withLock { $0.map(\.at) } }

  /// How many messages arrived on `topic`.
  public func count(topic: String) -> Int { messages.filter { $0.topic == topic }.count }
}

/// Seconds on the monotonic clock (for delays measured in tests).
public func monotonicSeconds() -> Double {
  var spec = timespec()
  clock_gettime(CLOCK_MONOTONIC, &spec)
  return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
}

/// Starts a client and waits for its first connection.
public func connectedClient(_ configuration: MQTTClientConfiguration) async throws -> MQTTClient {
  let client = try MQTTClient(configuration: configuration, logger: quietLogger("test"))
  client.start()
  let ok = await eventually(timeout: 10) { client.statistics.connected }
  if !ok { throw TestFailure("client \(configuration.clientID) did not connect") }
  return client
}
