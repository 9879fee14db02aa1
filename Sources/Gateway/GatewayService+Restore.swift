import Mosquitto
import Synchronization

extension GatewayService {
  /// How long after it starts acting the gateway waits for the devices list an earlier run
  /// left retained.
  static let previousDevicesWait: Duration = .seconds(30)

  /// Takes the first retained `<base>/bridge/<gw>/devices` the broker hands back: the list an
  /// earlier run of this gateway left (its own publications arrive unretained).
  func takePreviousDevices(_ message: MQTTMessage) {
    guard message.retain else { return }
    if let reason = message.discarded {
      logger.warning(
        "the devices list an earlier run left was dropped (\(reason)): its devices are not restored, and what it published for devices not heard again stays retained",
        metadata: ["mqtt.topic": "\(message.topic)"])
      return
    }
    previousDevices.offer(message.payload)
  }

  /// Restores the devices an earlier run left in its retained devices list, so that what it
  /// published for devices not heard again is cleared on schedule
  /// (``CentralRoleService/restore(previous:client:homeAssistantPrefix:)``). The subscription
  /// to the list is made before the central role publishes anything
  /// (``subscribeToPreviousDevices()``) and dropped after the first list, or after
  /// ``previousDevicesWait`` when the broker holds none.
  func restorePreviousDevices() async {
    guard let centralRole else { return }
    let payload = await previousDevices.first(within: Self.previousDevicesWait)
    try? await client.unsubscribe(topics.bridgeDevices.rawValue)
    guard let payload, !Task.isCancelled else { return }
    await centralRole.restore(
      previous: payload, client: client, homeAssistantPrefix: configuration.homeAssistant.prefix)
  }

  /// Subscribes to the gateway's own retained devices list (before any publication of it by
  /// this run).
  func subscribeToPreviousDevices() {
    guard centralRole != nil else { return }
    client.addSubscription(topics.bridgeDevices.rawValue)
  }
}

/// The first retained devices list handed back by the broker, once.
final class PreviousDevicesList: Sendable {
  private let taken = Mutex(false)
  private let stream: AsyncStream<[UInt8]>
  private let sink: AsyncStream<[UInt8]>.Continuation

  init() {
    (stream, sink) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1))
  }

  /// Offers a list; only the first one counts.
  func offer(_ payload: [UInt8]) {
    guard
      taken.withLock({ taken in
        defer { taken = true }
        return !taken
      })
    else { return }
    sink.yield(payload)
    sink.finish()
  }

  /// The first list, or `nil` when none came within `timeout` (or the task was cancelled).
  func first(within timeout: Duration) async -> [UInt8]? {
    await withTaskGroup(of: [UInt8]?.self) { group in
      group.addTask { [stream] in
        for await payload in stream { return payload }
        return nil
      }
      group.addTask {
        try? await Task.sleep(for: timeout)
        return nil
      }
      let first = await group.next() ?? nil
      group.cancelAll()
      return first
    }
  }
}
