/// This gateway's id, the `<gw>` level of the bridge topics: only `A-Z a-z 0-9 _ -`.
///
/// Built from `gateway.id` in the configuration or from the host name, reduced to the allowed
/// characters so it is always one safe topic level and a valid MQTT client id part.
public struct GatewayID: Sendable, Hashable, Comparable, CustomStringConvertible {
  /// The id used when nothing usable is left after reduction.
  public static let fallback = "gateway"

  /// The most characters an id keeps.
  public static let maximumLength = 64

  /// Levels that name the fleet's own topics under `<base>/bridge/` (`request/<verb>`,
  /// `peripheral/text/set`, `names/<address>`), never a gateway: such an id gets `_gw`
  /// appended.
  public static let reserved: Set<String> = ["request", "peripheral", "names"]

  /// The id, for example `raspberrypi`.
  public let rawValue: String

  /// Reduces any string to a gateway id.
  ///
  /// Surrounding whitespace is dropped; every other character outside `A-Z a-z 0-9 _ -` becomes
  /// `_`, a run of them a single `_` (`pi.local` → `pi_local`, `küche 2` → `k_che_2`); the result
  /// is cut to ``maximumLength`` characters. If it has no letter or digit left (empty, `___`,
  /// `日本`), the id is ``fallback``. A ``reserved`` level gets `_gw` appended (`request` →
  /// `request_gw`).
  ///
  /// - Parameter raw: The configured id or the host name.
  public init(_ raw: String) {
    var out: [UInt8] = []
    var lastWasReplacement = false
    for scalar in raw.unicodeScalars.trimmingWhitespace() {
      if scalar.isASCII, Self.isAllowed(UInt8(scalar.value)) {
        out.append(UInt8(scalar.value))
        lastWasReplacement = false
      } else if !lastWasReplacement {
        out.append(UInt8(ascii: "_"))
        lastWasReplacement = true
      }
      if out.count == Self.maximumLength { break }
    }
    let hasAlphanumeric = out.contains { Self.isAllowed($0) && $0 != 0x5F && $0 != 0x2D }
    let id = hasAlphanumeric ? String(decoding: out, as: UTF8.self) : Self.fallback
    rawValue = Self.reserved.contains(id) ? id + "_gw" : id
  }

  /// Whether `raw` is already a gateway id, so ``init(_:)`` keeps it unchanged.
  ///
  /// Use it to warn when a configured id had to be reduced.
  ///
  /// - Parameter raw: A candidate id.
  /// - Returns: `true` when `GatewayID(raw).rawValue == raw`.
  public static func isValid(_ raw: String) -> Bool {
    GatewayID(raw).rawValue == raw
  }

  /// The id itself.
  public var description: String { rawValue }

  /// Orders ids by their strings.
  public static func < (lhs: GatewayID, rhs: GatewayID) -> Bool { lhs.rawValue < rhs.rawValue }

  private static func isAllowed(_ byte: UInt8) -> Bool {
    switch byte {
    case 0x30...0x39, 0x41...0x5A, 0x61...0x7A, 0x5F, 0x2D: true
    default: false
    }
  }
}
