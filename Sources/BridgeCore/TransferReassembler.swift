/// The central side of the "BTLE Transfer" protocol: joins the chunks of a text that arrive as
/// notifications until a notification whose value is exactly the three bytes `EOM`.
///
/// Chunks are joined as bytes, never decoded one by one, so a multi-byte UTF-8 character split
/// between two notifications arrives whole. The text is not checked to be UTF-8: it is published
/// as the peripheral sent it.
///
/// A text longer than ``maxBytes`` is reported once as ``Outcome/tooLong(bytes:)`` and dropped;
/// its remaining chunks are ignored up to and including its `EOM`, and the next text starts fresh.
///
/// The protocol cannot tell a chunk of text that is exactly `EOM` from the end marker: such a
/// chunk ends the text.
///
/// ```swift
/// var reassembler = TransferReassembler(maxBytes: 1024)
/// reassembler.append(Array("Hel".utf8))  // nil
/// reassembler.append(Array("lo".utf8))  // nil
/// reassembler.append(Array("EOM".utf8))  // .complete(Array("Hello".utf8))
/// ```
public struct TransferReassembler: Sendable, Hashable {
  /// What a chunk completed.
  public enum Outcome: Sendable, Hashable {
    /// A whole text (possibly empty), ended by `EOM`.
    case complete([UInt8])
    /// The text under way outgrew ``TransferReassembler/maxBytes`` and was dropped; `bytes` is
    /// its length with the chunk that did not fit.
    case tooLong(bytes: Int)
  }

  /// The value of the notification that ends a text: `EOM` in ASCII.
  public static let endOfMessage: [UInt8] = Array("EOM".utf8)

  /// The longest text that is kept, in bytes.
  public let maxBytes: Int

  private var pending: [UInt8] = []
  private var discarding = false

  /// Makes a reassembler waiting for the first chunk of a text.
  ///
  /// - Parameter maxBytes: The longest text kept, in bytes; `0` allows only empty texts.
  ///   Must not be negative.
  public init(maxBytes: Int) {
    precondition(maxBytes >= 0, "maxBytes must not be negative")
    self.maxBytes = maxBytes
  }

  /// The bytes of the text under way (`0` while a too-long text is being skipped).
  public var pendingBytes: Int { pending.count }

  /// Whether the chunks of a too-long text are being ignored until its `EOM`.
  public var isDiscarding: Bool { discarding }

  /// Takes the value of one notification.
  ///
  /// - Parameter chunk: The notification's value; exactly `EOM` ends the text.
  /// - Returns: ``Outcome/complete(_:)`` when `chunk` is `EOM` ending a text (an `EOM` with
  ///   nothing pending completes an empty text), ``Outcome/tooLong(bytes:)`` once when the text
  ///   outgrows ``maxBytes``, otherwise `nil` (also for the `EOM` ending a dropped text).
  public mutating func append(_ chunk: [UInt8]) -> Outcome? {
    if chunk == Self.endOfMessage {
      if discarding {
        discarding = false
        return nil
      }
      let text = pending
      pending = []
      return .complete(text)
    }
    if discarding { return nil }
    let length = pending.count + chunk.count
    guard length <= maxBytes else {
      pending = []
      discarding = true
      return .tooLong(bytes: length)
    }
    pending += chunk
    return nil
  }

  /// Drops the text under way, for example when the link is lost, and waits for a new text.
  ///
  /// - Returns: The number of bytes dropped (``pendingBytes`` before the call).
  @discardableResult
  public mutating func reset() -> Int {
    let discarded = pending.count
    pending = []
    discarding = false
    return discarded
  }
}
