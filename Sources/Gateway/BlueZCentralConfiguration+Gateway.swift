public import BlueZ
public import GatewaySettings

extension BlueZCentralConfiguration {
  /// The BlueZ central's settings from the gateway's configuration: the object model keeps as
  /// many devices as the registry (`bluetooth.max_devices`), so that neither forgets a device
  /// the other still reports; the adapter and the scan method (`bluetooth.scan_method`) are
  /// the configuration's, and so is the batch window (`bluetooth.batch_window`: the acquired
  /// notification sockets, the management scanner and the bus connection's signals gather
  /// over it). The other
  /// settings have no configuration key and keep their defaults.
  ///
  /// - Parameter configuration: The loaded configuration.
  public init(gateway configuration: GatewayConfiguration) {
    let window = Duration.microseconds(
      Int64((configuration.bluetooth.batchWindow * 1e6).rounded()))
    self.init(
      bus: BlueZSessionConfiguration(signalGathering: window),
      maxDevices: configuration.bluetooth.maxDevices, adapter: configuration.bluetooth.adapter,
      scanMethod: configuration.bluetooth.scanMethod == .management ? .management : .dbus,
      batchWindow: window)
  }
}
