/// The desired notification state received on `<base>/<dev>/gatt/<svc>/<chr>/notify`.
public struct NotifyRequest: Sendable, Hashable {
  /// Why a `/notify` payload is not a notification state.
  public typealias Error = PayloadError

  /// Whether notifications (or indications) should be on.
  public var enabled: Bool

  /// Makes a notification state.
  ///
  /// - Parameter enabled: Whether notifications should be on.
  public init(enabled: Bool) {
    self.enabled = enabled
  }

  /// Parses a `/notify` payload: `on` or `off` in any case, surrounding whitespace ignored.
  ///
  /// An empty payload is what subscribers receive when the retained desired state is cleared;
  /// it means `off`.
  ///
  /// - Parameter payload: The payload bytes.
  /// - Throws: ``PayloadError/unsupportedValue(key:allowed:)`` for anything else.
  public init(parsing payload: [UInt8]) throws(PayloadError) {
    let range = UTF8Rules.trimmedRange(payload)
    let word = String(decoding: payload[range], as: UTF8.self).lowercased()
    switch word {
    case "on": self.init(enabled: true)
    case "off", "": self.init(enabled: false)
    default: throw .unsupportedValue(key: nil, allowed: ["on", "off"])
    }
  }
}
