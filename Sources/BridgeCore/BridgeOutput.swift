/// Something the bridge logic wants done, returned as a value so the gateway only forwards it.
///
/// The pure types of this module (``DiscoveryBridge``, ``AdapterTracker``, …) never publish or
/// call BlueZ themselves; they return outputs in the order they must happen.
public enum BridgeOutput: Sendable, Hashable {
  /// Publish `payload` on `topic`. An empty payload with `retain` set deletes the retained
  /// message (used when a device is forgotten).
  case publish(topic: TopicName, payload: [UInt8], retain: Bool)
  /// Start LE discovery on the adapter with this filter (``BLECentral/startDiscovery(adapter:filter:)``).
  /// Also sent while discovering when the filter changes: starting is idempotent and updates it.
  case startDiscovery(adapter: String, filter: DiscoveryFilter)
  /// Stop LE discovery on the adapter (``BLECentral/stopDiscovery(adapter:)``).
  case stopDiscovery(adapter: String)
  /// Ask the central to remove a device from the stack's cache (``BLECentral/removeDevice(_:)``).
  case removeDevice(BluetoothAddress)
}

extension BridgeOutput {
  /// A JSON publish.
  static func publish(_ topic: TopicName, _ value: JSONValue, retain: Bool) -> BridgeOutput {
    .publish(topic: topic, payload: value.serializedBytes(), retain: retain)
  }
}
