import BridgeCore
import Mosquitto
import Synchronization

extension GatewayService {
  /// How long the gateway waits, after the broker acknowledged its subscription, for the
  /// devices list an earlier run left (the broker sent it before the acknowledgement; this is
  /// the time for it to pass through the client).
  static let previousDevicesWait: Duration = .seconds(2)

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
  /// (``CentralRoleService/restore(previous:client:homeAssistantPrefix:)``).
  ///
  /// The subscription to the list is made before the central role publishes anything
  /// (``subscribeToPreviousDevices()``); subscribing once more here waits for the broker (for
  /// as long as it takes to reach it) and its acknowledgement, before which it sent the
  /// retained list of the first. Then the subscription is dropped. Nothing is restored unless
  /// the broker handed this run's `online` state back and no other run with this
  /// `gateway.id` is online: the list would be that run's, its devices alive.
  func restorePreviousDevices() async {
    guard let centralRole else { return }
    // Whatever happens below, the devices list goes out in the end.
    var restored = false
    defer { if !restored { centralRole.releaseDevicesList() } }
    let filter = topics.bridgeDevices.rawValue
    do {
      try await client.subscribe(filter)
    } catch {
      if error.code != .cancelled {
        logger.warning("cannot read the devices list an earlier run left: \(error)")
      }
      return
    }
    let payload = await previousDevices.first(within: Self.previousDevicesWait)
    try? await client.unsubscribe(filter)
    guard let payload, !Task.isCancelled else { return }
    // The broker hands our own `online` state back around the same time (after a reconnect
    // its subscription may come later than this one's).
    var clear = duplicates.withLock { $0.mayAct }
    for _ in 0..<50 where !clear {
      try? await Task.sleep(for: .milliseconds(100))
      clear = duplicates.withLock { $0.mayAct }
    }
    guard clear else {
      logger.warning(
        "the devices list an earlier run left is not restored: another run with this gateway.id may be online"
      )
      return
    }
    restored = true
    await centralRole.restore(
      previous: payload, client: client, homeAssistantPrefix: configuration.homeAssistant.prefix)
  }

  /// Subscribes to the gateway's own retained devices list (before any publication of it by
  /// this run).
  func subscribeToPreviousDevices() {
    guard let centralRole else { return }
    centralRole.holdDevicesList()
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
  func first(within timeout: Duration) async -> [UInt8]? { await stream.first(within: timeout) }
}
