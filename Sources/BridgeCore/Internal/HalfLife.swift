/// Exponential decay without Foundation: the standard library has no `exp` or `pow`.
enum HalfLife {
  /// `2^(-age / halfLife)`: 1 for age 0, 0.5 after one half-life; ages below 0 count as 0.
  static func weight(age: Double, halfLife: Double) -> Double {
    guard halfLife > 0 else { return age <= 0 ? 1 : 0 }
    let halvings = max(0, age) / halfLife
    guard halvings < 1000 else { return 0 }
    let whole = halvings.rounded(.down)
    let fraction = halvings - whole
    // 2^(-fraction) = e^(-fraction·ln 2), |exponent| < 0.7: the series converges fast.
    let exponent = -fraction * 0.693_147_180_559_945_3
    var term = 1.0
    var sum = 1.0
    for index in 1...20 {
      term *= exponent / Double(index)
      sum += term
    }
    return Double(sign: .plus, exponent: -Int(whole), significand: sum)
  }
}
