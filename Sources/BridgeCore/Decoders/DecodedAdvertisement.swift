/// What the advertisement decoders made of one advertisement: measurements and identifiers in
/// one flat object, the formats they came from, and what could not be decoded.
///
/// Its JSON is the `decoded` member of `<base>/<dev>/advertisement`:
/// `{"temperature":23.45,"humidity":50.55,"battery":97,"formats":["bthome"]}`; with an
/// `"error"` string when a part was malformed (the fields before the fault stay). A field
/// decoded by two formats keeps the first value.
public struct DecodedAdvertisement: Sendable, Hashable {
  /// The decoded fields in decoding order (names as in ``AdvertisementField``).
  public private(set) var fields: JSONObject = [:]
  /// The formats that contributed, in order: `bthome`, `ibeacon`, `eddystone_uid`,
  /// `eddystone_url`, `eddystone_tlm`, `ruuvi_v5`, `sig`, `atc1441`, `pvvx`.
  public private(set) var formats: [String] = []
  /// One sentence per part that could not be decoded, naming the format.
  public private(set) var errors: [String] = []

  /// An empty result.
  public init() {}

  /// Whether nothing was decoded and nothing failed.
  public var isEmpty: Bool { fields.isEmpty && errors.isEmpty }

  /// Adds a field unless one of that name is already there.
  mutating func set(_ name: String, _ value: JSONValue) {
    if fields[name] == nil { fields[name] = value }
  }

  /// Adds a number, dropping non-finite values.
  mutating func set(_ name: String, _ value: Double) {
    if value.isFinite { set(name, .number(value)) }
  }

  /// Adds an integer.
  mutating func set(_ name: String, _ value: some BinaryInteger) {
    set(name, .integer(Int64(value)))
  }

  /// Notes that `format` contributed.
  mutating func note(_ format: String) {
    if !formats.contains(format) { formats.append(format) }
  }

  /// Notes a part of `format` that could not be decoded.
  mutating func fail(_ format: String, _ problem: String) {
    errors.append("\(format): \(problem)")
  }

  /// Writes ``json`` straight into an advertisement's bytes (no tree built for it).
  func write(to writer: inout JSONWriter) {
    writer.beginObject()
    for (name, value) in fields {
      writer.dynamicKey(name)
      writer.value(value)
    }
    writer.key("formats")
    writer.beginArray()
    for format in formats { writer.string(format) }
    writer.endArray()
    if !errors.isEmpty {
      writer.key("error")
      writer.string(errors.joined(separator: "; "))
    }
    writer.endObject()
  }

  /// The `decoded` member: the fields, then `formats`, then `error` when something failed.
  public var json: JSONValue {
    var object = fields
    object["formats"] = .array(formats.map(JSONValue.string))
    if !errors.isEmpty { object["error"] = .string(errors.joined(separator: "; ")) }
    return .object(object)
  }
}
