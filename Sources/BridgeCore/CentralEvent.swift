/// Something a ``BLECentral`` observed, delivered in the order it happened.
public enum CentralEvent: Sendable, Hashable {
  /// An adapter appeared or one of its properties changed; the value is its full current state.
  case adapterChanged(AdapterInfo)
  /// An adapter disappeared (unplugged, or removed from the stack).
  case adapterRemoved(id: String)
  /// The Bluetooth stack itself went away (bluetoothd stopped or restarted): every adapter,
  /// device and discovery session is gone. The stack's return shows as `adapterChanged` events.
  case stackLost
  /// The stack runs but will not serve the gateway (the system bus's policy denies its user:
  /// ``CentralError/Code/accessDenied``). Sent when it starts; `nil` when the stack serves the
  /// gateway again (its adapters follow as `adapterChanged`, if it has any).
  case stackRefused(CentralError?)
  /// A device appeared in the stack (first advertisement, or from its cache at start-up, then
  /// with `rssi == nil`).
  case deviceAppeared(Advertisement)
  /// A device's advertised properties changed or another advertisement arrived; the value holds
  /// all its current properties, not only the changed ones.
  case deviceUpdated(Advertisement)
  /// The stack dropped a device from its cache. The gateway keeps its own timing (the
  /// ``DeviceRegistry``) except for private random addresses, which do not come back
  /// (``DiscoveryBridge``).
  case deviceRemoved(BluetoothAddress)
  /// A device connected or disconnected.
  case connectionChanged(BluetoothAddress, connected: Bool)
  /// The RSSI of a connected device, read from the connection on request (a connected device
  /// usually stops advertising; the field notes: it must be asked for each time).
  case connectionRSSI(BluetoothAddress, rssi: Int)
  /// The GATT tree of a connected device is known (BlueZ `ServicesResolved`); sent again when
  /// the services change.
  case servicesResolved(BluetoothAddress, GATTTree)
  /// A characteristic notified (or indicated) a value, in arrival order.
  case notification(GATTCharacteristicID, [UInt8])
  /// Notifications of a characteristic were turned on or off (by us, or by the stack when the
  /// link went down).
  case notifyingChanged(GATTCharacteristicID, Bool)
  /// The gateway read `waiting` values at once from the channel that carries a characteristic's
  /// notifications (at most one read's worth: 256 on BlueZ's socket): it fell behind, and the
  /// stack may have dropped values it could not buffer (BlueZ does so unseen on the socket of
  /// `AcquireNotify`). Reported once per channel (after a reconnection, again).
  case notificationBacklog(GATTCharacteristicID, waiting: Int)
  /// The central's scanner watchdog took a step (``ScannerWatchdogEvent``).
  case scannerWatchdog(ScannerWatchdogEvent)
}
