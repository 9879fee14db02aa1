/// Exponential decay without Foundation: the standard library has no `exp` or `pow`.
enum HalfLife {
  /// `2^(-age / halfLife)`: 1 for age 0, 0.5 after one half-life; ages below 0 count as 0.
  static func weight(age: Double, halfLife: Double) -> Double {
    guard halfLife > 0 else { return age <= 0 ? 1 : 0 }
    let halvings = max(0, age) / halfLife
    guard halvings < 1000 else { return 0 }
    return power(-halvings)
  }

  /// `2^x` for |x| < 1000.
  static func power(_ x: Double) -> Double {
    let whole = x.rounded(.down)
    // 2^fraction = e^(fraction·ln 2), 0 ≤ exponent < 0.7: the Taylor series, evaluated by
    // Horner's rule, is within 1e-15 after 15 terms (0.7^16/16! < 2e-16). Multiplications
    // only: this runs for every presence sample of every advertisement.
    let exponent = (x - whole) * 0.693_147_180_559_945_3
    var sum = 1.0
    for reciprocal in inverseFactorials.reversed() {
      sum = 1.0 + exponent * reciprocal * sum
    }
    return Double(sign: .plus, exponent: Int(whole), significand: sum)
  }

  /// 1/1 … 1/15 as Horner's rule needs them: term n is `1 + x/n · (term n+1)`.
  private static let inverseFactorials: [Double] = (1...15).map { 1.0 / Double($0) }
}
