import Glibc

/// Starts a thread that runs `body`, named `name` where the system shows it (`top -H`, `perf`,
/// `/proc/<pid>/task/*/comm`; the system refuses names longer than 15 bytes, which then stay
/// unnamed there).
///
/// The thread is made with `pthread_create` itself, not through Foundation's `Thread`, whose
/// `start()` ignores `pthread_create`'s result: a thread the system refused (no memory for its
/// stack, `TasksMax` or `ulimit -u` reached) never ran, and whoever waited for it waited for
/// ever. Here the refusal is thrown.
///
/// - Parameters:
///   - name: The thread's name.
///   - stackSize: The thread's stack in bytes (`nil`: the system's default, `ulimit -s`).
///   - body: What the thread runs; the thread ends when it returns.
/// - Throws: ``LoopError`` when the system refuses the thread or the stack size.
public func startThread(
  named name: String, stackSize: Int? = nil, _ body: @escaping @Sendable () -> Void
) throws(LoopError) {
  var attributes = pthread_attr_t()
  var code = pthread_attr_init(&attributes)
  guard code == 0 else { throw LoopError("pthread_attr_init", errno: code) }
  defer { pthread_attr_destroy(&attributes) }
  code = pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
  guard code == 0 else { throw LoopError("pthread_attr_setdetachstate", errno: code) }
  if let stackSize {
    code = pthread_attr_setstacksize(&attributes, stackSize)
    guard code == 0 else {
      throw LoopError("pthread_attr_setstacksize(\(stackSize))", errno: code)
    }
  }
  let start = Unmanaged.passRetained(ThreadStart(name: name, body: body)).toOpaque()
  var thread = pthread_t()
  code = pthread_create(&thread, &attributes, runThreadStart, start)
  guard code == 0 else {
    Unmanaged<ThreadStart>.fromOpaque(start).release()
    throw LoopError("pthread_create (thread \(name))", errno: code)
  }
}

/// What a thread started by ``startThread(named:stackSize:_:)`` runs, handed to it through
/// `pthread_create`'s argument (retained once, released by the thread).
private final class ThreadStart: Sendable {
  let name: String
  let body: @Sendable () -> Void

  init(name: String, body: @escaping @Sendable () -> Void) {
    self.name = name
    self.body = body
  }
}

/// The C entry point of every thread ``startThread(named:stackSize:_:)`` starts.
private func runThreadStart(_ argument: UnsafeMutableRawPointer?) -> UnsafeMutableRawPointer? {
  guard let argument else { return nil }
  let start = Unmanaged<ThreadStart>.fromOpaque(argument).takeRetainedValue()
  // Named from the thread itself: in one lab run (2026-11-28), a name set by Foundation before
  // the thread ran left the management scanner's thread under the name of the pool thread
  // that made it, its CPU counted as the pool's by `lab-cpu`.
  if let setName = ThreadNaming.setName {
    _ = start.name.withCString { setName(pthread_self(), $0) }
  }
  start.body()
  return nil
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
