import Foundation
import Glibc

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

  /// Gives the allocator's free pages back to the kernel (glibc's `malloc_trim`): after a spike —
  /// a broker restart re-publishing every retained topic at once, a burst of large requests — the
  /// heap keeps its high-water mark resident otherwise (measured by `Benchmarks/soak`).
  static func releaseFreeMemory() {
    _ = trim?(0)
  }

  /// glibc's `int malloc_trim(size_t pad)`, looked up once (`<malloc.h>` is not in the Glibc
  /// module); `nil` on a C library without it.
  private static let trim: (@convention(c) (Int) -> Int32)? = {
    // RTLD_DEFAULT: the global symbol scope.
    guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "malloc_trim") else {
      return nil
    }
    return unsafeBitCast(symbol, to: (@convention(c) (Int) -> Int32).self)
  }()
}
