public import BridgeCore

extension GatewayConfiguration {
  /// The peripheral role: the transfer service fed by MQTT (rows P1–P6, `peripheral.*`).
  public struct Peripheral: Sendable, Equatable {
    /// Publish and advertise the transfer service at start (`peripheral.enabled`). Default
    /// `false`; the `peripheral/start` request starts it too.
    public var enabled: Bool
    /// The transfer service's UUID (`peripheral.service`). Default Apple's "BTLE Transfer"
    /// `e20a39f4-73f5-4bc4-a12f-17d1ad07a961`.
    public var service: String
    /// The transfer characteristic's UUID (`peripheral.characteristic`). Default
    /// `08590f7e-db05-467e-8757-72f6faeb13d4`.
    public var characteristic: String
    /// A characteristic centrals may write, published as `written` events
    /// (`peripheral.write_characteristic`); `nil`: none.
    public var writeCharacteristic: String?
    /// The local name advertised when it fits the 31 bytes (`peripheral.local_name`). Default
    /// `gatt2mqtt`.
    public var localName: String
    /// The adapter to advertise on (`peripheral.adapter`); `nil`: the first powered one.
    public var adapter: String?
    /// Require an encrypted link for reads and notifications
    /// (`peripheral.require_encryption`). Default `false`.
    public var requireEncryption: Bool
    /// The only centrals served, as `AA:BB:CC:DD:EE:FF` (`peripheral.allow`); empty: all.
    public var allow: [String]
    /// The longest text accepted, in bytes (`peripheral.max_text_bytes`). Default 1 MiB.
    public var maxTextBytes: Int
    /// Seconds per notification of a transfer sent as a D-Bus signal
    /// (`peripheral.chunk_interval`), which BlueZ sends on without back-pressure: at most one
    /// per interval leaves (a rate, not a pause after each). Notifications through the socket
    /// (`notifySocket`) are not paced. Default 0.005 (at most 200 per second; in the lab the
    /// signal path itself carries about 150, every chunk intact: Benchmarks/README.md,
    /// peripheral-throughput).
    public var chunkInterval: Double
    /// Offer bluetoothd a socket for the notifications (`peripheral.notify_socket`): with one
    /// central connected, a transfer then goes at the rate bluetoothd takes it, in chunks cut
    /// for that central's MTU. Default `true`.
    public var notifySocket: Bool
    /// How a transfer reaches two or more connected centrals while bluetoothd holds the
    /// socket (`peripheral.several_centrals`): `signals` (the socket let go of, every
    /// subscription seen) or `socket` (kept, chunks for an unknown MTU of 23 unless told).
    /// Default `signals` (Benchmarks/README.md, peripheral-two-centrals).
    public var severalCentrals: SeveralCentralsPath

    /// Creates peripheral settings with the documented defaults.
    public init(
      enabled: Bool = false, service: String = "e20a39f4-73f5-4bc4-a12f-17d1ad07a961",
      characteristic: String = "08590f7e-db05-467e-8757-72f6faeb13d4",
      writeCharacteristic: String? = nil, localName: String = "gatt2mqtt",
      adapter: String? = nil, requireEncryption: Bool = false, allow: [String] = [],
      maxTextBytes: Int = 1_048_576, chunkInterval: Double = 0.005, notifySocket: Bool = true,
      severalCentrals: SeveralCentralsPath = .signals
    ) {
      self.enabled = enabled
      self.service = service
      self.characteristic = characteristic
      self.writeCharacteristic = writeCharacteristic
      self.localName = localName
      self.adapter = adapter
      self.requireEncryption = requireEncryption
      self.allow = allow
      self.maxTextBytes = maxTextBytes
      self.chunkInterval = chunkInterval
      self.notifySocket = notifySocket
      self.severalCentrals = severalCentrals
    }
  }
}
