/// The peripheral-role port (rows P1–P6): a GATT service published through the Bluetooth stack
/// and advertised, implemented by the `BlueZ` module (`GattManager1.RegisterApplication`,
/// `LEAdvertisingManager1.RegisterAdvertisement`) and by fakes in tests.
///
/// The service is the transfer service of MISSION.md P2: one characteristic that notifies and
/// can be read (the current text, long reads served with offsets), optionally one that centrals
/// may write. What happens arrives as ``PeripheralEvent``s.
public protocol BLEPeripheral: Sendable {
  /// A stream of everything the peripheral reports from now on; it finishes when the
  /// peripheral shuts down.
  ///
  /// - Returns: The events.
  func peripheralEvents() -> AsyncStream<PeripheralEvent>

  /// Publishes and advertises the service, and keeps it published: after a bluetoothd restart
  /// or an adapter power cycle the implementation registers again by itself (reporting
  /// ``PeripheralEvent/stateChanged(_:)``). Calling it again replaces the definition.
  ///
  /// - Parameter service: What to publish and advertise.
  /// - Throws: ``CentralError`` when the stack refuses for good (bad definition); transient
  ///   refusals are retried and reported as events instead.
  func startPeripheral(_ service: PeripheralService) async throws(CentralError)

  /// Withdraws the advertisement and the service (clean unregistration on shutdown).
  func stopPeripheral() async

  /// The value reads of the transfer characteristic return from now on (read offsets are
  /// served from it).
  ///
  /// - Parameter value: The current text's bytes.
  func setReadValue(_ value: [UInt8]) async

  /// Sends one notification of the transfer characteristic to every subscribed central.
  ///
  /// The stack cuts a value at MTU − 3 bytes. Whether the caller must pace the next one is the
  /// answer: a path with back-pressure returns only once the stack took the value.
  ///
  /// - Parameter value: The notification's bytes.
  /// - Returns: The path the value took.
  /// - Throws: ``CentralError`` when the service is not published or nobody is subscribed.
  @discardableResult
  func notify(_ value: [UInt8]) async throws(CentralError) -> NotificationPath
}

/// The path a notification of the peripheral role took (``BLEPeripheral/notify(_:)``), which
/// tells the sender whether to pace.
public enum NotificationPath: Sendable, Hashable {
  /// Through a channel with back-pressure (BlueZ's `AcquireNotify` socket): the next value may
  /// follow at once; a full channel made the call wait.
  case flowControlled
  /// As a message the stack sends on without back-pressure (a `PropertiesChanged` signal):
  /// the caller paces (`peripheral.chunk_interval`).
  case unpaced
}

/// What the peripheral role publishes and advertises.
public struct PeripheralService: Sendable, Hashable {
  /// The transfer service's UUID.
  public var service: BluetoothUUID
  /// The transfer characteristic's UUID (notify, read).
  public var characteristic: BluetoothUUID
  /// A characteristic centrals may write (text from centrals), or `nil` for none.
  public var writeCharacteristic: BluetoothUUID?
  /// The local name to advertise, if it fits the 31-byte advertising data.
  public var localName: String?
  /// The adapter to use (`hci0`), or `nil` for the first powered one.
  public var adapter: String?
  /// Whether reads and notifications need an encrypted link.
  public var requireEncryption: Bool
  /// The only centrals served (addresses); empty for all.
  public var allowedCentrals: Set<BluetoothAddress>

  /// Makes a definition.
  ///
  /// - Parameters:
  ///   - service: The transfer service's UUID.
  ///   - characteristic: The transfer characteristic's UUID.
  ///   - writeCharacteristic: A writable characteristic, or `nil`.
  ///   - localName: The local name to advertise.
  ///   - adapter: The adapter to use.
  ///   - requireEncryption: Whether reads and notifications need an encrypted link.
  ///   - allowedCentrals: The only centrals served; empty for all.
  public init(
    service: BluetoothUUID = GATTBridge.defaultTransferService,
    characteristic: BluetoothUUID = GATTBridge.defaultTransferCharacteristic,
    writeCharacteristic: BluetoothUUID? = nil, localName: String? = nil, adapter: String? = nil,
    requireEncryption: Bool = false, allowedCentrals: Set<BluetoothAddress> = []
  ) {
    self.service = service
    self.characteristic = characteristic
    self.writeCharacteristic = writeCharacteristic
    self.localName = localName
    self.adapter = adapter
    self.requireEncryption = requireEncryption
    self.allowedCentrals = allowedCentrals
  }
}

/// Something the ``BLEPeripheral`` observed, in the order it happened.
public enum PeripheralEvent: Sendable, Hashable {
  /// The role's state: `advertising` (service and advertisement registered), `stopped`, or
  /// `unavailable` (no bluetoothd, no powered adapter, or the stack refused; `reason` says).
  case stateChanged(PeripheralState)
  /// A central subscribed to the transfer characteristic. `central` and `mtu` come from the
  /// stack when it tells them (BlueZ passes them with `AcquireNotify`, `ReadValue` and
  /// `WriteValue`); `nil` when unknown.
  case subscribed(central: BluetoothAddress?, mtu: Int?)
  /// A central unsubscribed (or its link went down).
  case unsubscribed(central: BluetoothAddress?)
  /// The stack told the ATT MTU of a central (from a read or write's options).
  case mtu(central: BluetoothAddress, mtu: Int)
  /// A central wrote the writable characteristic.
  case written(central: BluetoothAddress?, value: [UInt8])
  /// A central that is not allowed was refused.
  case refused(central: BluetoothAddress)
}

/// The peripheral role's state, as published on `<base>/bridge/<gw>/peripheral/state`.
public enum PeripheralState: Sendable, Hashable {
  /// Registered and advertising.
  case advertising
  /// Not started, or stopped on request.
  case stopped
  /// Cannot be published now; the reason for people.
  case unavailable(reason: String)
}
