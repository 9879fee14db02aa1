/// How a characteristic's value is written in MQTT payloads (TOPICS.md "Value formats").
public enum ValueFormat: String, CaseIterable, Sendable {
  /// Lower-case hex digits, two per byte: `0a1b`. The default.
  case hex
  /// Standard padded base64: `Chs=`.
  case base64
  /// The bytes as UTF-8 text; only for values that are valid UTF-8.
  case utf8
  /// The bytes as they are.
  case raw
  /// `{"hex":"0a1b","ts":1700000000000,"gw":"pi"}`.
  case json
  /// Known Bluetooth SIG characteristics as typed JSON members (see ``SIGValueDecoder``) followed
  /// by the members of ``json``: `{"battery_level":87,"hex":"57","ts":1700000000000,"gw":"pi"}`.
  /// Other characteristics and malformed values are published exactly as ``json``. Payloads
  /// sent to the gateway are read as ``json``.
  case decoded

  /// Why a payload cannot be decoded or a value cannot be encoded.
  public typealias Error = PayloadError

  /// The MQTT payload for a value, without knowing its characteristic.
  ///
  /// The same as ``encode(_:characteristic:timestamp:gateway:)`` with no characteristic, so
  /// ``decoded`` gives the ``json`` payload.
  ///
  /// - Parameters:
  ///   - bytes: The value.
  ///   - timestamp: When the value was read or notified, in milliseconds since the Unix epoch;
  ///     only ``json`` and ``decoded`` use it (`"ts"`).
  ///   - gateway: The gateway publishing it; only ``json`` and ``decoded`` use it (`"gw"`).
  /// - Returns: The payload bytes.
  /// - Throws: ``PayloadError/notEncodable(format:_:)`` wrapping
  ///   ``PayloadError/invalidUTF8(offset:)`` for ``utf8`` and bytes that are not UTF-8.
  public func encode(
    _ bytes: [UInt8], timestamp: Int64, gateway: GatewayID
  ) throws(PayloadError) -> [UInt8] {
    try encode(bytes, characteristic: nil, timestamp: timestamp, gateway: gateway)
  }

  /// The MQTT payload for a value of a characteristic.
  ///
  /// Only ``utf8`` can fail: bytes that are not valid UTF-8 are refused rather than published as
  /// invalid text or silently in another format; publish them with ``hex`` or ``json`` instead.
  ///
  /// - Parameters:
  ///   - bytes: The value.
  ///   - characteristic: The characteristic's UUID; only ``decoded`` uses it, and without it
  ///     ``decoded`` gives the ``json`` payload.
  ///   - timestamp: When the value was read or notified, in milliseconds since the Unix epoch;
  ///     only ``json`` and ``decoded`` use it (`"ts"`).
  ///   - gateway: The gateway publishing it; only ``json`` and ``decoded`` use it (`"gw"`).
  /// - Returns: The payload bytes.
  /// - Throws: ``PayloadError/notEncodable(format:_:)`` wrapping
  ///   ``PayloadError/invalidUTF8(offset:)`` for ``utf8`` and bytes that are not UTF-8.
  public func encode(
    _ bytes: [UInt8], characteristic: BluetoothUUID?, timestamp: Int64, gateway: GatewayID
  ) throws(PayloadError) -> [UInt8] {
    switch self {
    case .hex:
      return Hex.ascii(bytes)
    case .base64:
      return Array(Base64.encode(bytes).utf8)
    case .utf8:
      if let offset = UTF8Rules.firstInvalidOffset(bytes) {
        throw .notEncodable(format: rawValue, .invalidUTF8(offset: offset))
      }
      return bytes
    case .raw:
      return bytes
    case .json:
      return Self.jsonPayload(bytes, decoded: [:], timestamp: timestamp, gateway: gateway)
    case .decoded:
      let members =
        characteristic.flatMap { SIGValueDecoder.decode(bytes, characteristic: $0) } ?? [:]
      return Self.jsonPayload(bytes, decoded: members, timestamp: timestamp, gateway: gateway)
    }
  }

  /// `decoded` followed by `"hex"`, `"ts"` and `"gw"` (a decoded member of one of those names
  /// keeps its place and takes their value), written straight into the bytes.
  private static func jsonPayload(
    _ bytes: [UInt8], decoded: JSONObject, timestamp: Int64, gateway: GatewayID
  ) -> [UInt8] {
    var writer = JSONWriter(capacity: 64 + 2 * bytes.count)
    func ours(_ key: String) -> Bool {
      switch key {
      case "hex":
        writer.dynamicKey(key)
        writer.string(Hex.encode(bytes))
      case "ts":
        writer.dynamicKey(key)
        writer.integer(timestamp)
      case "gw":
        writer.dynamicKey(key)
        writer.string(gateway.rawValue)
      default: return false
      }
      return true
    }
    writer.beginObject()
    for (key, value) in decoded {
      if !ours(key) {
        writer.dynamicKey(key)
        writer.value(value)
      }
    }
    for key in ["hex", "ts", "gw"] where decoded[key] == nil { _ = ours(key) }
    writer.endObject()
    return writer.bytes
  }

  /// The value carried by a payload in this format.
  ///
  /// - ``hex``: digits of either case; surrounding whitespace, a `0x` prefix and one separator
  ///   (space, `:` or `-`) between bytes are allowed: `0A 1B`, `0a:1b`. Empty means no bytes.
  /// - ``base64``: strict standard base64 with padding; only surrounding whitespace is allowed.
  /// - ``utf8``: the payload must be valid UTF-8 and is taken as it is.
  /// - ``raw``: the payload as it is.
  /// - ``json``: an object with exactly one of `"hex"`, `"base64"`, `"utf8"` (a string, decoded
  ///   as above); `"ts"` and `"gw"` may be present (so a published value can be sent back) and
  ///   are ignored; other keys are refused.
  /// - ``decoded``: a JSON object as for ``json``, or else bare ``hex`` (typed values are
  ///   published, not written: members such as `"battery_level"` are refused as unknown keys).
  ///
  /// - Parameter payload: The payload bytes.
  /// - Returns: The value.
  /// - Throws: ``PayloadError`` naming the problem and where it is.
  public func decode(_ payload: [UInt8]) throws(PayloadError) -> [UInt8] {
    switch self {
    case .hex:
      return try Self.decodeHex(payload, UTF8Rules.trimmedRange(payload))
    case .base64:
      return try Base64.decode(payload, UTF8Rules.trimmedRange(payload))
    case .utf8:
      if let offset = UTF8Rules.firstInvalidOffset(payload) { throw .invalidUTF8(offset: offset) }
      return payload
    case .raw:
      return payload
    case .decoded where !PayloadFields.looksLikeJSONObject(payload):
      return try Self.decodeHex(payload, UTF8Rules.trimmedRange(payload))
    case .json, .decoded:
      let object = try Self.parseObject(payload)
      for key in object.keys where !Self.valueKeys.contains(key) && key != "ts" && key != "gw" {
        throw .unknownKey(key)
      }
      return try Self.value(in: object)
    }
  }

  // MARK: Shared with the request parsers

  /// The keys that carry a value in JSON payloads, in the order they are looked for.
  static let valueKeys = ["hex", "base64", "utf8"]

  /// Parses a payload that must be a JSON object.
  static func parseObject(_ payload: [UInt8]) throws(PayloadError) -> JSONObject {
    let value: JSONValue
    do {
      value = try JSONValue.parse(payload)
    } catch {
      throw .invalidJSON(error)
    }
    guard case .object(let object) = value else { throw .notAnObject(found: value.typeName) }
    return object
  }

  /// The value of the one value key of `object`.
  static func value(in object: JSONObject) throws(PayloadError) -> [UInt8] {
    let present = object.keys.filter { valueKeys.contains($0) }
    guard let key = present.first else { throw .missingValue }
    guard present.count == 1 else { throw .multipleValues(keys: present) }
    guard case .string(let text) = object[key] else {
      throw .wrongType(key: key, expected: "a string", found: object[key]?.typeName ?? "nothing")
    }
    let bytes = Array(text.utf8)
    do {
      switch key {
      case "hex": return try decodeHex(bytes, 0..<bytes.count)
      case "base64": return try Base64.decode(bytes, 0..<bytes.count)
      default: return bytes
      }
    } catch {
      throw .invalidField(key: key, error)
    }
  }

  private static func decodeHex(_ bytes: [UInt8], _ range: Range<Int>) throws(PayloadError)
    -> [UInt8]
  {
    var index = range.lowerBound
    let end = range.upperBound
    if end - index > 2, bytes[index] == UInt8(ascii: "0"),
      bytes[index + 1] == UInt8(ascii: "x") || bytes[index + 1] == UInt8(ascii: "X")
    {
      index += 2
    }
    var out: [UInt8] = []
    out.reserveCapacity((end - index) / 2)
    var highNibble: UInt8?
    var digitCount = 0
    var lastWasSeparator = false
    while index < end {
      let byte = bytes[index]
      if let digit = Hex.value(of: byte) {
        if let high = highNibble {
          out.append(high << 4 | digit)
          highNibble = nil
        } else {
          highNibble = digit
        }
        digitCount += 1
        lastWasSeparator = false
      } else if byte == UInt8(ascii: " ") || byte == UInt8(ascii: ":")
        || byte == UInt8(ascii: "-")
      {
        guard highNibble == nil, !out.isEmpty, !lastWasSeparator else {
          throw .misplacedHexSeparator(offset: index)
        }
        lastWasSeparator = true
      } else {
        throw .invalidHexDigit(offset: index)
      }
      index += 1
    }
    if lastWasSeparator { throw .misplacedHexSeparator(offset: end - 1) }
    if highNibble != nil { throw .oddHexDigitCount(digitCount) }
    return out
  }
}
