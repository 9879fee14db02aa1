import BridgeCore

/// An in-memory ``BLECentral`` for tests: events are injected with ``emit(_:)``, commands are
/// recorded in ``calls``.
actor FakeCentral: BLECentral {
  /// The commands received, as text: `start hci0`, `stop hci0`, `power hci0 on`.
  private(set) var calls: [String] = []
  /// The adapters ``adapters()`` reports.
  var knownAdapters: [AdapterInfo] = []
  /// When set, ``startDiscovery(adapter:filter:)`` throws it.
  var startError: CentralError?

  private nonisolated let stream: AsyncStream<CentralEvent>
  private nonisolated let continuation: AsyncStream<CentralEvent>.Continuation

  init() {
    (stream, continuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingOldest(1024))
  }

  nonisolated func attach(_ sink: EventSink<CentralEvent>) -> EventSubscription {
    stream.pump(into: sink)
  }

  /// Injects an event.
  nonisolated func emit(_ event: CentralEvent) { continuation.yield(event) }

  /// Ends the event stream.
  nonisolated func finish() { continuation.finish() }

  func adapters() async throws(CentralError) -> [AdapterInfo] { knownAdapters }

  func startDiscovery(adapter: String, filter: DiscoveryFilter) async throws(CentralError) {
    calls.append("start \(adapter)")
    if let startError { throw startError }
  }

  func stopDiscovery(adapter: String) async throws(CentralError) {
    calls.append("stop \(adapter)")
  }

  func setPowered(adapter: String, _ on: Bool) async throws(CentralError) {
    calls.append("power \(adapter) \(on ? "on" : "off")")
  }

  func removeDevice(_ address: BluetoothAddress) async throws(CentralError) {
    calls.append("remove \(address)")
  }

  func failStarts(with error: CentralError?) { startError = error }
}
