import BridgeCore
import Synchronization

/// An in-memory ``BLEPeripheral`` for tests: records notifications and read values; events are
/// injected with ``emit(_:)``.
final class FakePeripheral: BLEPeripheral {
  struct State {
    var started: [PeripheralService] = []
    var stopped = 0
    var readValue: [UInt8] = []
    var notifications: [[UInt8]] = []
    /// Notifications under way at once (must never exceed 1).
    var inFlight = 0
    var maxInFlight = 0
  }

  let state = Mutex(State())
  private let stream: AsyncStream<PeripheralEvent>
  private let continuation: AsyncStream<PeripheralEvent>.Continuation

  init() {
    (stream, continuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingOldest(1024))
  }

  func emit(_ event: PeripheralEvent) { continuation.yield(event) }

  func peripheralEvents() -> AsyncStream<PeripheralEvent> { stream }

  func startPeripheral(_ service: PeripheralService) async throws(CentralError) {
    state.withLock { $0.started.append(service) }
    emit(.stateChanged(.advertising))
  }

  func stopPeripheral() async {
    state.withLock { $0.stopped += 1 }
    emit(.stateChanged(.stopped))
  }

  func setReadValue(_ value: [UInt8]) async { state.withLock { $0.readValue = value } }

  func notify(_ value: [UInt8]) async throws(CentralError) -> NotificationPath {
    state.withLock {
      $0.inFlight += 1
      $0.maxInFlight = max($0.maxInFlight, $0.inFlight)
    }
    try? await Task.sleep(for: .milliseconds(1))
    state.withLock {
      $0.inFlight -= 1
      $0.notifications.append(value)
    }
    return .unpaced
  }
}
