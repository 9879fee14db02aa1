import Foundation

/// Figures about this process read from `/proc` (Linux).
enum ProcessMetrics {
  /// Resident set size in bytes, or nil where `/proc/self/statm` is unreadable.
  static func residentMemoryBytes() -> Int? {
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else {
      return nil
    }
    let fields = text.split(separator: " ")
    guard fields.count > 1, let pages = Int(fields[1]) else { return nil }
    return pages * Int(sysconf(Int32(_SC_PAGESIZE)))
  }
}
