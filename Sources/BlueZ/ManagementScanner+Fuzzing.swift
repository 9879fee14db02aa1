public import BridgeCore

/// For the fuzzers in `Fuzz/` (not part of the supported API): what the management scanner
/// makes of the packets a control socket hands it.
@_spi(Fuzzing)
public enum ManagementFuzzing {
  /// Reads each packet as the scanner's reader thread does (``ManagementPacket/event(_:)``),
  /// and applies every Device Found report to one device table (``AdvertisementReports``, with
  /// a small bound so that eviction runs too).
  ///
  /// - Parameter packets: The packets, in order.
  /// - Returns: The advertisements of the device events that came of them.
  public static func advertisements(_ packets: [[UInt8]]) -> [Advertisement] {
    var reports = AdvertisementReports(maxDevices: 4)
    var result: [Advertisement] = []
    for packet in packets {
      guard case .deviceFound(_, let report) = ManagementPacket.event(packet) else { continue }
      switch reports.apply(report, filter: DiscoveryFilter()) {
      case .deviceAppeared(let advertisement), .deviceUpdated(let advertisement):
        result.append(advertisement)
      default:
        break
      }
    }
    precondition(reports.count <= 4, "the device table grew past its bound")
    return result
  }
}
