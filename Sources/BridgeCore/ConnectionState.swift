/// A device's connection state as published on `<base>/<dev>/connection` (TOPICS.md, C3/C4).
///
/// The discovery half only needs to know whether a device is connected (a connected device is
/// never evicted, forgotten or marked away); the connection half drives the other states.
public enum ConnectionState: String, Sendable, Hashable, CaseIterable {
  /// Not connected.
  case disconnected
  /// A connection is being set up.
  case connecting
  /// Connected.
  case connected
  /// Connected, discovering services.
  case discovering
  /// Connected and the GATT tree is known.
  case ready
  /// The last connection attempt failed.
  case failed

  /// Whether there is a link to the device: ``connected``, ``discovering`` or ``ready``.
  public var isConnected: Bool {
    switch self {
    case .connected, .discovering, .ready: true
    case .disconnected, .connecting, .failed: false
    }
  }

  /// Whether a link is being made or is up (`connecting` or connected): such a device is
  /// never evicted or forgotten, heard or not.
  public var isLive: Bool { self == .connecting || isConnected }
}
