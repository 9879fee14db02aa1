import Glibc

/// Buffers for reading up to ``capacity`` datagrams with one `recvmmsg(2)`: a slot of
/// ``size`` bytes per datagram, its `iovec` and its `struct mmsghdr`. Used by one thread at a
/// time.
///
/// Safety: the class owns every buffer it hands the kernel (allocated in `init`, freed in
/// `deinit`); each `iovec` covers its own slot and each header names its own `iovec`, so the
/// kernel writes only inside them, and only `msg_len`, `msg_flags` and the (empty) name and
/// control lengths of the headers.
///
/// Swift's Glibc module leaves out `recvmmsg` and `struct mmsghdr` (they need `_GNU_SOURCE`):
/// the function is looked up once with `dlsym`, and the headers are laid out by hand as C lays
/// out `struct mmsghdr { struct msghdr msg_hdr; unsigned int msg_len; }`. Without the function
/// (a C library that lacks it) each datagram is read with `recv`, as before.
final class ReceiveVector {
  /// The datagrams one call reads at most, unless the reader's batch limit is smaller.
  static let defaultCapacity = 32

  /// How many datagrams one ``receive(from:upTo:)`` can read.
  let capacity: Int
  /// The longest datagram read whole; longer ones are cut.
  let size: Int

  private let bytes: UnsafeMutablePointer<UInt8>
  private let vectors: UnsafeMutablePointer<iovec>
  private let headers: UnsafeMutableRawPointer
  /// Lengths of the datagrams the last ``receive(from:upTo:)`` read.
  private var lengths: [Int]
  /// The system calls ``receive(from:upTo:)`` made so far.
  private(set) var systemCalls = 0

  /// `msg_len` follows `msg_hdr` (C's `sizeof(struct msghdr)`, tail padding included: Swift's
  /// stride of the imported struct); the struct is padded to `msghdr`'s alignment. 64-bit Linux:
  /// 56 and 64; 32-bit (armv7): 28 and 32 (`ReceiveVectorTests` checks).
  static let lengthOffset = MemoryLayout<msghdr>.stride
  static let headerStride =
    (MemoryLayout<msghdr>.stride + MemoryLayout<UInt32>.size + MemoryLayout<msghdr>.alignment - 1)
    / MemoryLayout<msghdr>.alignment * MemoryLayout<msghdr>.alignment

  private typealias ReceiveMultiple =
    @convention(c) (Int32, UnsafeMutableRawPointer?, UInt32, Int32, UnsafeMutableRawPointer?)
    -> Int32

  /// glibc's `recvmmsg`, `nil` where the C library has none.
  private static let receiveMultiple: ReceiveMultiple? = {
    guard let library = dlopen(nil, RTLD_NOW), let symbol = dlsym(library, "recvmmsg") else {
      return nil
    }
    // Safety: `recvmmsg(int, struct mmsghdr *, unsigned int, int, struct timespec *)` returns
    // `int`; the type above has the same parameters (pointers as raw pointers). On 32-bit
    // glibc with 64-bit `time_t` this symbol is the 32-bit-time variant, which is harmless:
    // the timeout is always `NULL`.
    return unsafeBitCast(symbol, to: ReceiveMultiple.self)
  }()

  /// What ``receive(from:upTo:)`` got.
  enum Outcome: Equatable {
    /// This many datagrams, in slots `0..<count` (see ``value(at:)``).
    case received(Int)
    /// None: the system's error (`EAGAIN`: the socket is empty).
    case failed(Int32)
  }

  /// Whether ``receive(from:upTo:)`` uses `recvmmsg` (else `recv` per datagram).
  let usesReceiveMultiple: Bool

  /// Allocates the buffers.
  ///
  /// - Parameters:
  ///   - capacity: Datagrams per call (at least 1).
  ///   - size: Bytes per datagram (at least 1).
  ///   - oneByOne: Read each datagram with `recv` even where `recvmmsg` exists (tests).
  init(capacity: Int, size: Int, oneByOne: Bool = false) {
    usesReceiveMultiple = !oneByOne && Self.receiveMultiple != nil
    self.capacity = max(1, capacity)
    self.size = max(1, size)
    bytes = .allocate(capacity: self.capacity * self.size)
    vectors = .allocate(capacity: self.capacity)
    headers = .allocate(
      byteCount: self.capacity * Self.headerStride, alignment: MemoryLayout<msghdr>.alignment)
    lengths = Array(repeating: 0, count: self.capacity)
    // Each header names its slot once: the kernel writes back only `msg_len`, `msg_flags` and
    // the (empty) name and control lengths.
    for index in 0..<self.capacity {
      vectors[index] = iovec(iov_base: bytes + index * self.size, iov_len: self.size)
      var header = msghdr()
      header.msg_iov = vectors + index
      header.msg_iovlen = 1
      (headers + index * Self.headerStride).storeBytes(of: header, as: msghdr.self)
    }
  }

  deinit {
    bytes.deallocate()
    vectors.deallocate()
    headers.deallocate()
  }

  /// Reads up to `count` datagrams that wait on `fd` without waiting for more.
  ///
  /// - Parameters:
  ///   - fd: The socket.
  ///   - count: The most datagrams to read (at most ``capacity``).
  /// - Returns: How many were read, or the error when none was.
  func receive(from fd: Int32, upTo count: Int) -> Outcome {
    let count = min(max(1, count), capacity)
    guard usesReceiveMultiple, let receiveMultiple = Self.receiveMultiple else {
      return receiveOneByOne(from: fd, upTo: count)
    }
    systemCalls += 1
    let received = Int(receiveMultiple(fd, headers, UInt32(count), Int32(MSG_DONTWAIT), nil))
    guard received >= 0 else { return .failed(errno) }
    for index in 0..<received {
      let length = (headers + index * Self.headerStride + Self.lengthOffset).load(
        as: UInt32.self)
      lengths[index] = min(Int(length), size)
    }
    return .received(received)
  }

  /// The length of the datagram in slot `index` of the last ``receive(from:upTo:)`` (0 for an
  /// empty one, and for every slot read after the peer hung up).
  ///
  /// - Parameter index: Below what that call received.
  /// - Returns: Its length in bytes (cut to ``size``).
  func length(at index: Int) -> Int { lengths[index] }

  /// The datagram in slot `index` of the last ``receive(from:upTo:)``.
  ///
  /// - Parameter index: Below what that call received.
  /// - Returns: Its bytes.
  func value(at index: Int) -> [UInt8] {
    Array(UnsafeBufferPointer(start: bytes + index * size, count: lengths[index]))
  }

  private func receiveOneByOne(from fd: Int32, upTo count: Int) -> Outcome {
    var received = 0
    while received < count {
      systemCalls += 1
      let length = recv(fd, bytes + received * size, size, Int32(MSG_DONTWAIT))
      if length < 0 {
        let code = errno
        if code == EINTR { continue }
        return received > 0 ? .received(received) : .failed(code)
      }
      lengths[received] = length
      received += 1
    }
    return .received(received)
  }
}
