import BridgeCore

/// A simulated central of the gateway's peripheral role: subscribes to the transfer
/// characteristic and reassembles `EOM`-terminated texts from the notifications it receives.
struct SimulatedCentral {
  let address: BluetoothAddress
  let group: SimulatedWorld.CentralGroup
  var subscribed = false
  var buffer: [UInt8] = []
  var chunks = 0
  var largestChunk = 0
  /// Complete texts received.
  var texts = 0

  init(address: BluetoothAddress, group: SimulatedWorld.CentralGroup) {
    self.address = address
    self.group = group
  }

  /// Takes one notification. A value longer than MTU−3 is cut there, as the stack would.
  /// - Returns: The line to echo when this notification completed a text, else nil.
  mutating func receive(_ value: [UInt8]) -> (line: String?, oversized: Bool) {
    let limit = group.mtu - 3
    if value == Array("EOM".utf8) {
      texts += 1
      let text = String(decoding: buffer, as: UTF8.self)
      var line =
        "received \(buffer.count) bytes in \(chunks) chunks, largest \(largestChunk), mtu \(group.mtu)"
      if buffer.count <= 200 { line += ": \(text)" }
      reset()
      return (line, false)
    }
    let kept = Array(value.prefix(limit))
    buffer += kept
    chunks += 1
    largestChunk = max(largestChunk, kept.count)
    return (nil, value.count > limit)
  }

  /// Forgets a partial text (unsubscribed or disconnected).
  mutating func reset() {
    buffer = []
    chunks = 0
    largestChunk = 0
  }
}
