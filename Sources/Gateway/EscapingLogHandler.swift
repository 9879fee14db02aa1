public import Logging

/// A log handler that escapes control characters before another handler writes the line.
///
/// Device names, characteristic values, topics and JSON keys reach the log from outside; a
/// newline, ESC or NUL in them must not forge a log line or a terminal sequence. Every message
/// and metadata value goes through ``escape(_:)``: control characters (C0, DEL, C1) and the
/// Unicode line and paragraph separators become `\n`, `\r`, `\t`, `\\`… or `\u{XX}`, and a
/// backslash is doubled so that an escape cannot be faked.
public struct EscapingLogHandler: LogHandler {
  /// The handler that writes the escaped line.
  public var base: any LogHandler

  /// Wraps `base`.
  /// - Parameter base: The handler that writes lines, such as `StreamLogHandler`.
  public init(_ base: any LogHandler) {
    self.base = base
  }

  /// The lowest level logged.
  public var logLevel: Logger.Level {
    get { base.logLevel }
    set { base.logLevel = newValue }
  }

  /// Metadata added to every line.
  public var metadata: Logger.Metadata {
    get { base.metadata }
    set { base.metadata = newValue }
  }

  /// One metadata value.
  public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
    get { base[metadataKey: key] }
    set { base[metadataKey: key] = newValue }
  }

  /// Escapes the event's message and metadata, then hands it to ``base``.
  public func log(event: LogEvent) {
    var event = event
    event.message = Logger.Message(stringLiteral: Self.escape(event.message.description))
    if let metadata = event.metadata {
      event.metadata = metadata.mapValues(Self.escape)
    }
    base.log(event: event)
  }

  /// `text` with control characters escaped (see the type's description).
  /// - Parameter text: Text that may come from outside.
  /// - Returns: The text, safe to write as one log line.
  public static func escape(_ text: String) -> String {
    guard text.unicodeScalars.contains(where: needsEscape) else { return text }
    var result = ""
    result.reserveCapacity(text.utf8.count + 8)
    for scalar in text.unicodeScalars {
      switch scalar {
      case "\n": result += "\\n"
      case "\r": result += "\\r"
      case "\t": result += "\\t"
      case "\\": result += "\\\\"
      case _ where needsEscape(scalar):
        result += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
      default: result.unicodeScalars.append(scalar)
      }
    }
    return result
  }

  private static func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
    let value = scalar.value
    return value < 0x20 || (0x7F...0x9F).contains(value) || value == 0x2028 || value == 0x2029
      || value == 0x5C
  }

  private static func escape(_ value: Logger.Metadata.Value) -> Logger.Metadata.Value {
    switch value {
    case .string(let text): .string(escape(text))
    case .stringConvertible(let convertible): .string(escape(convertible.description))
    case .array(let values): .array(values.map(escape))
    case .dictionary(let values): .dictionary(values.mapValues(escape))
    }
  }
}
