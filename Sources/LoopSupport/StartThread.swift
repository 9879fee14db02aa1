import Foundation
import Glibc

/// Starts a thread that runs `body`, named `name` where the system shows it (`top -H`, `perf`,
/// `/proc/<pid>/task/*/comm`; the system refuses names longer than 15 bytes, which then stay
/// unnamed there).
///
/// - Parameters:
///   - name: The thread's name.
///   - body: What the thread runs; the thread ends when it returns.
public func startThread(named name: String, _ body: @escaping @Sendable () -> Void) {
  let thread = Thread {
    // Named from the thread itself with `pthread_setname_np`, not only through Foundation's
    // `Thread.name`: in one lab run (2026-11-28) the management scanner's thread showed under
    // the name of the pool thread that made it, its CPU counted as the pool's by `lab-cpu`.
    if let setName = ThreadNaming.setName {
      _ = name.withCString { setName(pthread_self(), $0) }
    } else {
      Thread.current.name = name
    }
    body()
  }
  thread.name = name
  thread.start()
}

/// glibc's `pthread_setname_np`, which Swift's Glibc module leaves out (it needs
/// `_GNU_SOURCE`): looked up once with `dlsym`; `nil` where the C library has none.
private enum ThreadNaming {
  typealias SetName = @convention(c) (pthread_t, UnsafePointer<CChar>) -> Int32

  static let setName: SetName? = {
    guard let library = dlopen(nil, RTLD_NOW), let symbol = dlsym(library, "pthread_setname_np")
    else { return nil }
    // Safety: `int pthread_setname_np(pthread_t, const char *)`; the type above matches.
    return unsafeBitCast(symbol, to: SetName.self)
  }()
}
