/// The peripheral side of the transfer protocol (MISSION.md P4): a text cut into notifications
/// of at most MTU − 3 bytes, in order, followed by one notification holding exactly `EOM`.
///
/// Chunks cut bytes, not characters: a multi-byte UTF-8 character may straddle two chunks, and
/// a receiver joins bytes before decoding (``TransferReassembler``). An empty text is the `EOM`
/// notification alone.
public struct TransferChunker: Sendable, Hashable {
  /// The ATT MTU assumed when the stack does not tell it: the default of the ATT protocol.
  public static let defaultMTU = 23
  /// The largest ATT MTU (Core spec: 517).
  public static let maximumMTU = 517
  /// The longest attribute value (Core spec: 512 bytes): bluetoothd cuts longer notifications
  /// there (`BT_ATT_MAX_VALUE_LEN`, and its 512-byte read of the notification socket), so
  /// chunks stop at 512 even at MTU 516 and 517.
  public static let maximumChunk = 512

  /// The text.
  public let text: [UInt8]
  /// The payload bytes of each notification but the last: MTU − 3, at most
  /// ``maximumChunk``.
  public let chunkSize: Int
  /// Notifications handed out so far (chunks, then `EOM`).
  public private(set) var sent = 0

  /// Makes a chunker.
  ///
  /// - Parameters:
  ///   - text: The text's bytes.
  ///   - mtu: The ATT MTU (23…517; smaller values count as 23, larger as 517).
  public init(text: [UInt8], mtu: Int) {
    self.text = text
    chunkSize = min(min(max(mtu, Self.defaultMTU), Self.maximumMTU) - 3, Self.maximumChunk)
  }

  /// How many notifications the transfer takes, `EOM` included.
  public var count: Int { (text.count + chunkSize - 1) / chunkSize + 1 }

  /// Whether every notification, `EOM` included, was handed out.
  public var isFinished: Bool { sent >= count }

  /// The notification at a position: chunk `index`, or `EOM` after the last chunk.
  ///
  /// - Parameter index: 0 ..< ``count``.
  /// - Returns: Its bytes.
  public func notification(at index: Int) -> [UInt8] {
    precondition(index >= 0 && index < count, "notification index out of range")
    let start = index * chunkSize
    guard start < text.count else { return TransferReassembler.endOfMessage }
    return Array(text[start..<min(start + chunkSize, text.count)])
  }

  /// The next notification, or `nil` when finished.
  ///
  /// - Returns: Its bytes.
  public mutating func next() -> [UInt8]? {
    guard !isFinished else { return nil }
    defer { sent += 1 }
    return notification(at: sent)
  }
}
