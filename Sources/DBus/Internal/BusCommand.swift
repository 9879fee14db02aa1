/// A waiter for the outcome of one operation on the bus thread.
typealias ResultWaiter<T> = CheckedContinuation<Result<T, DBusError>, Never>

/// A method call to send, validated by the caller.
struct OutgoingCall: Sendable {
  var destination: String?
  var path: DBusObjectPath
  var interface: String?
  var member: String
  var arguments: [DBusValue]
  /// Sent with the no-reply flag and not awaited.
  var noReply = false
}

/// A signal to emit, validated by the caller.
struct OutgoingSignal: Sendable {
  var path: DBusObjectPath
  var interface: String
  var member: String
  var arguments: [DBusValue]
  var destination: String?
}

/// Requests from any thread to the bus thread.
enum BusCommand: Sendable {
  case call(token: UInt64, OutgoingCall, timeoutMilliseconds: Int32, ResultWaiter<CallReply>)
  case cancelCall(token: UInt64)
  case emit(OutgoingSignal, ResultWaiter<Void>?)
  case subscribe(id: UInt64, DBusMatchRule, SignalSink)
  case unsubscribe(id: UInt64)
  /// Starts (or counts another use of) tracking the owner of a well-known name.
  case trackName(String)
  /// The answer of `GetNameOwner` for a tracked name; ignored if a change was seen since.
  case initialOwner(name: String, owner: String?)
  case export(
    DBusObjectPath, DBusExportedObject, properties: [String: [String: DBusValue]],
    ResultWaiter<Void>)
  case unexport(DBusObjectPath, ResultWaiter<Void>)
  case addObjectManager(DBusObjectPath, ResultWaiter<Void>)
  /// The outcome of an exported method's handler, for the call with this token.
  case reply(token: UInt64, Result<[DBusValue], DBusError>)
  case awaitClose(CheckedContinuation<Void, Never>)
  case close
}

/// Where a subscription's signals go: a stream, signal by signal, or a queue that hands a
/// bus-thread turn's signals over at once.
enum SignalSink: Sendable {
  case stream(AsyncStream<DBusSignal>.Continuation)
  case batches(SignalQueue)

  /// Hands a signal on (queued, for batches); `false` when it was dropped.
  func offer(_ signal: DBusSignal) -> Bool {
    switch self {
    case .stream(let continuation):
      if case .dropped = continuation.yield(signal) { return false }
      return true
    case .batches(let queue):
      return queue.append(signal)
    }
  }

  /// No more signals.
  func finish() {
    switch self {
    case .stream(let continuation): continuation.finish()
    case .batches(let queue): queue.finish()
    }
  }
}

/// A method call's reply: its values, and the serial its sender gave it.
struct CallReply: Sendable {
  var arguments: [DBusValue]
  var serial: UInt32
}
