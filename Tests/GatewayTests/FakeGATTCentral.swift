import BridgeCore
import Synchronization

/// An in-memory ``GATTCentral`` for tests: connects at once, serves reads and writes from a
/// value store after a short delay, and records any overlap of two operations on one
/// characteristic (which BlueZ would answer with `InProgress`).
final class FakeGATTCentral: GATTCentral {
  struct State {
    var values: [GATTCharacteristicID: [UInt8]] = [:]
    var writes: [GATTCharacteristicID: [[UInt8]]] = [:]
    var busy: Set<GATTCharacteristicID> = []
    var overlaps = 0
    var notifyCalls: [(GATTCharacteristicID, Bool, NotifyMethod)] = []
    var connects: [BluetoothAddress] = []
    var disconnects: [BluetoothAddress] = []
    /// How long a `disconnect` takes; a cancelled caller's call fails as a cancelled D-Bus
    /// call does.
    var disconnectDelay: Duration = .zero
    /// The disconnections that completed.
    var disconnected: [BluetoothAddress] = []
    /// Switching notifications off never answers (until the caller is cancelled).
    var notifyOffHangs = false
    var removals: [BluetoothAddress] = []
  }

  let state = Mutex(State())
  let tree: GATTTree
  private let stream: AsyncStream<CentralEvent>
  private let continuation: AsyncStream<CentralEvent>.Continuation

  init(tree: GATTTree) {
    self.tree = tree
    (stream, continuation) = AsyncStream.makeStream(bufferingPolicy: .bufferingOldest(4096))
  }

  func attach(_ sink: EventSink<CentralEvent>) -> EventSubscription { stream.pump(into: sink) }
  func emit(_ event: CentralEvent) { continuation.yield(event) }

  func adapters() async throws(CentralError) -> [AdapterInfo] { [] }
  func startDiscovery(adapter: String, filter: DiscoveryFilter) async throws(CentralError) {}
  func stopDiscovery(adapter: String) async throws(CentralError) {}
  func setPowered(adapter: String, _ on: Bool) async throws(CentralError) {}
  func removeDevice(_ address: BluetoothAddress) async throws(CentralError) {
    state.withLock { $0.removals.append(address) }
  }

  func connect(_ address: BluetoothAddress, timeout: Double) async throws(CentralError) {
    state.withLock { $0.connects.append(address) }
    emit(.connectionChanged(address, connected: true))
    emit(.servicesResolved(address, tree))
  }

  func disconnect(_ address: BluetoothAddress) async throws(CentralError) {
    let delay = state.withLock { state in
      state.disconnects.append(address)
      return state.disconnectDelay
    }
    if delay > .zero {
      do {
        try await Task.sleep(for: delay)
      } catch {
        throw CentralError(.bluezError, message: "Disconnect: the call was cancelled")
      }
    }
    state.withLock { $0.disconnected.append(address) }
    emit(.connectionChanged(address, connected: false))
  }

  func read(_ characteristic: GATTCharacteristicID, timeout: Double) async throws(CentralError)
    -> [UInt8]
  {
    try await exclusive(characteristic) { $0.values[characteristic] ?? [] }
  }

  func write(
    _ characteristic: GATTCharacteristicID, value: [UInt8], withResponse: Bool, timeout: Double
  ) async throws(CentralError) {
    try await exclusive(characteristic) { state in
      state.values[characteristic] = value
      state.writes[characteristic, default: []].append(value)
    }
  }

  func setNotify(
    _ characteristic: GATTCharacteristicID, enabled: Bool, method: NotifyMethod, timeout: Double
  ) async throws(CentralError) {
    if !enabled && state.withLock({ $0.notifyOffHangs }) {
      try? await Task.sleep(for: .seconds(3600))
      throw CentralError(.bluezError, message: "StopNotify: the call was cancelled")
    }
    try await exclusive(characteristic) {
      $0.notifyCalls.append((characteristic, enabled, method))
    }
    emit(.notifyingChanged(characteristic, enabled))
  }

  /// Runs `body` as one operation on `characteristic`, noting overlaps; fails like BlueZ.
  private func exclusive<T>(
    _ characteristic: GATTCharacteristicID, _ body: (inout State) -> T
  ) async throws(CentralError) -> T {
    let clash = state.withLock { state in
      if state.busy.contains(characteristic) {
        state.overlaps += 1
        return true
      }
      state.busy.insert(characteristic)
      return false
    }
    if clash { throw CentralError(.inProgress, message: "operation in progress") }
    try? await Task.sleep(for: .milliseconds(2))
    return state.withLock { state in
      state.busy.remove(characteristic)
      return body(&state)
    }
  }
}
