/// Finds the known key a misspelt one was probably meant to be.
enum KeySuggestion {
  /// The candidate closest to `name`, or `nil` if none is close enough.
  ///
  /// A candidate qualifies when its edit distance (insertions, deletions, substitutions and
  /// transpositions, ignoring letter case) is at most a quarter of `name`'s length (1...3); the
  /// nearest wins. Failing that, the only candidate that ends with `separator + name` qualifies
  /// (`host` → `mqtt.host`: a key put at the wrong level).
  static func closest(to name: String, among candidates: [String], separator: Character)
    -> String?
  {
    let target = Array(name.lowercased())
    let limit = max(1, min(3, target.count / 4))
    var best: (candidate: String, distance: Int)?
    for candidate in candidates {
      let letters = Array(candidate.lowercased())
      // The distance is at least the difference in length: no need to compute it (a
      // 6,000-character argument against every key took seconds under the fuzzer).
      guard abs(letters.count - target.count) <= limit else { continue }
      let distance = editDistance(target, letters)
      if distance <= limit, distance < (best?.distance ?? Int.max) {
        best = (candidate, distance)
      }
    }
    if let best { return best.candidate }
    let suffix = String(separator) + name.lowercased()
    let endings = candidates.filter { $0.lowercased().hasSuffix(suffix) }
    return endings.count == 1 ? endings[0] : nil
  }

  /// The optimal-string-alignment distance between two strings.
  static func editDistance(_ a: [Character], _ b: [Character]) -> Int {
    if a.isEmpty { return b.count }
    if b.isEmpty { return a.count }
    var previous2 = [Int](repeating: 0, count: b.count + 1)
    var previous = Array(0...b.count)
    var current = [Int](repeating: 0, count: b.count + 1)
    for i in 1...a.count {
      current[0] = i
      for j in 1...b.count {
        let cost = a[i - 1] == b[j - 1] ? 0 : 1
        current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
        if i > 1, j > 1, a[i - 1] == b[j - 2], a[i - 2] == b[j - 1] {
          current[j] = min(current[j], previous2[j - 2] + 1)
        }
      }
      (previous2, previous, current) = (previous, current, previous2)
    }
    return previous[b.count]
  }
}
