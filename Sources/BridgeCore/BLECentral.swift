/// The central-role port: what the bridge logic needs from a Bluetooth stack, implemented by
/// the `BlueZ` module over D-Bus and by in-memory fakes in tests.
///
/// Implementations report what happens as ``CentralEvent``s and carry out discovery commands
/// (``BridgeOutput/startDiscovery(adapter:filter:)``, ``BridgeOutput/stopDiscovery(adapter:)``).
///
/// - Important: Attach (``attach(_:)``, or ``events(bufferSize:)``) before taking the
///   ``adapters()`` snapshot, so that nothing falls between the two; applying an
///   `adapterChanged` twice is harmless.
public protocol BLECentral: Sendable {
  /// Delivers everything the stack reports from now on to `sink`, in batches, in order, on
  /// the stack's own thread (the fast path: no task or thread hop between the radio and the
  /// bridge); ``EventSink/finish`` is called when the central shuts down.
  ///
  /// - Parameter sink: The receiver; it must not block.
  /// - Returns: The attachment; cancel it to stop receiving.
  func attach(_ sink: EventSink<CentralEvent>) -> EventSubscription

  /// The adapters the stack knows now.
  ///
  /// - Returns: Every adapter's current state.
  /// - Throws: ``CentralError`` when the stack cannot be asked (``CentralError/Code/unavailable``).
  func adapters() async throws(CentralError) -> [AdapterInfo]

  /// Starts LE discovery on an adapter with a filter, or applies a new filter when it is already
  /// discovering; idempotent.
  ///
  /// - Parameters:
  ///   - adapter: The adapter's id, for example `hci0`.
  ///   - filter: What to report.
  /// - Throws: ``CentralError`` when the stack refuses.
  func startDiscovery(adapter: String, filter: DiscoveryFilter) async throws(CentralError)

  /// Stops the discovery this central started on an adapter; stopping when not discovering is
  /// not an error.
  ///
  /// - Parameter adapter: The adapter's id.
  /// - Throws: ``CentralError`` when the stack refuses.
  func stopDiscovery(adapter: String) async throws(CentralError)

  /// Powers an adapter on or off (used to recover a stuck adapter).
  ///
  /// - Parameters:
  ///   - adapter: The adapter's id.
  ///   - on: Whether to power it on.
  /// - Throws: ``CentralError`` when the stack refuses.
  func setPowered(adapter: String, _ on: Bool) async throws(CentralError)

  /// Removes a device from the stack's cache (and its pairing, if any), disconnecting it first
  /// when connected (the `device/remove` request); a device the stack does not know is not an
  /// error.
  ///
  /// - Parameter address: The device's address.
  /// - Throws: ``CentralError`` when the stack refuses.
  func removeDevice(_ address: BluetoothAddress) async throws(CentralError)
}

extension BLECentral {
  /// A stream of everything the stack reports from now on (for tools and tests; the bridge
  /// attaches a sink). It keeps the newest `bufferSize` events and finishes when the central
  /// shuts down.
  ///
  /// - Parameter bufferSize: Events buffered.
  /// - Returns: The events.
  public func events(bufferSize: Int = 65_536) -> AsyncStream<CentralEvent> {
    let (stream, continuation) = AsyncStream.makeStream(
      of: CentralEvent.self, bufferingPolicy: .bufferingNewest(max(1, bufferSize)))
    let subscription = attach(
      EventSink(
        receive: { batch in for event in batch { continuation.yield(event) } },
        finish: { continuation.finish() }))
    continuation.onTermination = { _ in subscription.cancel() }
    return stream
  }
}
