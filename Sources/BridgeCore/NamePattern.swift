/// A device-name pattern: `*` matches any run of characters (also none), `?` exactly one, every
/// other character itself, ignoring case. `Thermo*` matches `thermo 2`; `*beacon*` any name
/// containing `Beacon`. A pattern matches the whole name.
public struct NamePattern: Sendable, Hashable, CustomStringConvertible {
  /// Why a string is not a usable pattern.
  public enum Error: Swift.Error, Sendable, Hashable, CustomStringConvertible {
    /// The pattern is empty.
    case empty
    /// The pattern has more than ``NamePattern/maximumLength`` characters.
    case tooLong(length: Int)

    /// The stable machine-readable code, `invalid_payload`.
    public var code: String { "invalid_payload" }

    /// A sentence for people.
    public var description: String {
      switch self {
      case .empty: "the name pattern is empty"
      case .tooLong(let length):
        "the name pattern has \(length) characters, at most \(NamePattern.maximumLength) are allowed"
      }
    }
  }

  /// The most characters a pattern may have.
  public static let maximumLength = 248

  /// The pattern as written.
  public let rawValue: String
  private let folded: [Character]

  /// Makes a pattern.
  ///
  /// - Parameter pattern: The pattern, for example `Thermo*`.
  /// - Throws: ``Error`` when it is empty or too long.
  public init(_ pattern: String) throws(Error) {
    guard !pattern.isEmpty else { throw .empty }
    let folded = Array(pattern.lowercased())
    guard folded.count <= Self.maximumLength else { throw .tooLong(length: folded.count) }
    rawValue = pattern
    self.folded = folded
  }

  /// Whether the whole name matches, ignoring case.
  ///
  /// - Parameter name: A device name.
  /// - Returns: `true` on a match.
  public func matches(_ name: String) -> Bool {
    let text = Array(name.lowercased())
    var textIndex = 0
    var patternIndex = 0
    var star: (pattern: Int, text: Int)?
    while textIndex < text.count {
      if patternIndex < folded.count, folded[patternIndex] == "*" {
        star = (patternIndex, textIndex)
        patternIndex += 1
      } else if patternIndex < folded.count,
        folded[patternIndex] == "?" || folded[patternIndex] == text[textIndex]
      {
        patternIndex += 1
        textIndex += 1
      } else if let last = star {
        patternIndex = last.pattern + 1
        textIndex = last.text + 1
        star = (last.pattern, last.text + 1)
      } else {
        return false
      }
    }
    while patternIndex < folded.count, folded[patternIndex] == "*" { patternIndex += 1 }
    return patternIndex == folded.count
  }

  /// The pattern as written.
  public var description: String { rawValue }
}
