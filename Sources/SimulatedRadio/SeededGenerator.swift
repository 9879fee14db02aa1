/// A small deterministic random number generator (SplitMix64): the same seed gives the same
/// sequence on every machine and every run.
public struct SeededGenerator: RandomNumberGenerator, Sendable, Hashable {
  private var state: UInt64

  /// Creates a generator.
  /// - Parameters:
  ///   - seed: the world's seed.
  ///   - stream: an independent stream number (a device index), so each device draws from its
  ///     own sequence whatever order the others draw in.
  public init(seed: UInt64, stream: UInt64 = 0) {
    // Streams must not be shifted copies of one sequence: start each at a hash of both.
    state = Self.mix(seed ^ Self.mix(stream &+ 0x632B_E59B_D9B4_E019))
  }

  private static func mix(_ value: UInt64) -> UInt64 {
    var z = value &+ 0x9E37_79B9_7F4A_7C15
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }

  /// The next 64 random bits.
  /// - Returns: 64 random bits.
  public mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    return Self.mix(state &- 0x9E37_79B9_7F4A_7C15)
  }

  /// A number in `0..<1`.
  /// - Returns: a uniformly distributed fraction.
  public mutating func fraction() -> Double {
    Double(next() >> 11) / Double(UInt64(1) << 53)
  }
}
