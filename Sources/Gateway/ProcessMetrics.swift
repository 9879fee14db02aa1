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

  /// Sets glibc's allocator up for a long-running daemon, once, as the gateway starts (glibc reads
  /// both settings when it next needs them; arenas made before stay):
  ///
  /// - `M_MMAP_THRESHOLD` fixed at 64 KiB: every larger block (a 70 KB request payload, an
  ///   offline queue's storage after a broker outage) gets pages of its own that go back to the
  ///   kernel when freed. Left dynamic, glibc raises the threshold to the largest block freed so
  ///   far (up to 32 MiB), after which such blocks come from the heap and their holes stay
  ///   resident.
  /// - `M_ARENA_MAX` 2: one heap per thread that ever allocated (up to 8 per core) each keep
  ///   their own high-water mark; the gateway's few threads share two.
  ///
  /// No effect on a C library without `mallopt`.
  static func configureAllocator() {
    guard let mallopt = optionSetter else { return }
    _ = mallopt(-3, 64 * 1024)  // M_MMAP_THRESHOLD
    _ = mallopt(-8, 2)  // M_ARENA_MAX
  }

  /// glibc's `int mallopt(int param, int value)`, looked up once.
  private static let optionSetter: (@convention(c) (Int32, Int32) -> Int32)? = {
    guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "mallopt") else {
      return nil
    }
    return unsafeBitCast(symbol, to: (@convention(c) (Int32, Int32) -> Int32).self)
  }()

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
