extension GATTBridge {
  /// One device the bridge connects to (or was asked to).
  struct Link: Sendable {
    let address: BluetoothAddress
    var id: DeviceID
    var state: ConnectionState = .disconnected
    var since: Double
    /// Whether the stack may know the device (cleared when a connect says it does not).
    var known = true
    /// Whether the policy selects it.
    var selected = false
    /// An explicit request: `true` connect, `false` stay disconnected; overrides the policy.
    var request: Bool?
    /// Whether this gateway owns the device (always, without fleet ownership); only an owned
    /// device is connected.
    var owned = true
    /// Connection attempts since the last success.
    var attempts = 0
    /// When the next attempt may start.
    var retryAt: Double?
    /// Why the last attempt failed.
    var error: CentralError?
    var tree: GATTTree?
    var notifying: Set<GATTCharacteristicID> = []
    /// Tearing down: notifications off, then disconnect.
    var closing = false
    var reassembler: TransferReassembler?

    init(address: BluetoothAddress, id: DeviceID? = nil, now: Double) {
      self.address = address
      self.id = id ?? DeviceID(address: address)
      since = now
    }

    /// Whether the gateway should keep the device connected.
    var wants: Bool { owned && (request ?? selected) }

    /// The retained `<dev>/connection` payload.
    func json(gateway: GatewayID, wallClockOffset: Double) -> JSONValue {
      var object: JSONObject = [
        "state": .string(state.rawValue), "owner": .string(gateway.rawValue),
        "since": .integer(Timestamps.milliseconds(since + wallClockOffset)),
      ]
      if state.isConnected, let mtu = tree?.mtu { object["mtu"] = .integer(Int64(mtu)) }
      if state == .failed || state == .connecting, attempts > 0 {
        object["attempt"] = .integer(Int64(attempts))
      }
      if state == .failed, let error {
        object["error"] = .string(error.code.rawValue)
        object["message"] = .string(error.message)
        if let detail = error.detail { object["bluez"] = .string(detail) }
        if let retryAt, wants { object["retry_in"] = .number(max(0, retryAt - since)) }
      }
      return .object(object)
    }
  }

  /// An operation waiting for, or holding, its characteristic.
  struct Pending: Sendable {
    var operation: GATTOperation
    var path: CharacteristicPath
    var transaction: JSONValue?
    var reply: ReplyAddress?
    /// Whether the outcome is published on the result topic.
    var report: Bool
  }
}
