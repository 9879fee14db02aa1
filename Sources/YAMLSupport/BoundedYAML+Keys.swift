extension BoundedYAML {
  /// The line of the first mapping key that is, or could hold, an alias, in a document that
  /// uses aliases; `nil` when there is none.
  ///
  /// Yams hashes each mapping key to find duplicates, which walks an alias once per use: a key
  /// holding an alias of a billion values hangs the parser, and one holding a deep chain of
  /// aliases overflows the stack, before ``compose(yaml:maxNodes:maxDepth:)`` can count
  /// anything. A key holds more than a name when it is written
  /// - `? key` (an explicit key: `?` first on its line or after `-`, `[`, `{`, `,`, `:` or `?`),
  /// - a list or mapping followed by `:` (`[a]: b`: `]` or `}`, then spaces, then `:`),
  /// - an alias followed by `:` (`*a : b`).
  ///
  /// The scan reads bytes and skips nothing, not quoted text, not comments: skipping them right
  /// takes a YAML parser of its own, and one that skipped wrongly could be led past a key. So it
  /// finds more than there is (`[x]:` inside a quoted string), and answers only for a document
  /// that uses an alias (`*name` first on its line, or after a space, `[`, `{`, `,`, `:` or
  /// `?`): without aliases a key costs what its text does, and the readers refuse it with its
  /// line.
  ///
  /// - Parameter yaml: The document.
  /// - Returns: The 1-based line of the key, or `nil`.
  static func keyThatCouldHoldAnAlias(in yaml: String) -> Int? {
    let bytes = Array(yaml.utf8)
    // For each position, the first byte from there on that is not white space (line breaks
    // included), 0 for none: one pass from the end, so that looking past a run of spaces costs
    // nothing however many `]` come before it.
    var nextVisible = [UInt8](repeating: 0, count: bytes.count + 1)
    for index in bytes.indices.reversed() {
      let byte = bytes[index]
      nextVisible[index] = isSpace(byte) || byte == newline ? nextVisible[index + 1] : byte
    }
    let colon = UInt8(ascii: ":")
    var usesAliases = false
    var firstKeyLine: Int?
    var line = 1
    var lastOnLine: UInt8?  // the last byte before this one on its line that is not a space
    for index in bytes.indices {
      let byte = bytes[index]
      defer {
        if byte == newline {
          line += 1
          lastOnLine = nil
        } else if !isSpace(byte) {
          lastOnLine = byte
        }
      }
      let isKey: Bool
      switch byte {
      case UInt8(ascii: "?"):
        // In a flow collection `?` starts a key even with no space after it (`{?*a: b}`).
        isKey = lastOnLine.map { explicitKeyFollows.contains($0) } ?? true
      case UInt8(ascii: "]"), UInt8(ascii: "}"):
        isKey = nextVisible[index + 1] == colon
      case UInt8(ascii: "*"):
        let startsNode =
          index == 0 || isSpace(bytes[index - 1]) || bytes[index - 1] == newline
          || aliasFollows.contains(bytes[index - 1])
        guard startsNode else { continue }
        let nameEnd = bytes[(index + 1)...].firstIndex { !isNameByte($0) } ?? bytes.count
        guard nameEnd > index + 1 else { continue }
        usesAliases = true
        isKey = nextVisible[nameEnd] == colon
      default: continue
      }
      if isKey, firstKeyLine == nil { firstKeyLine = line }
      if usesAliases, let firstKeyLine { return firstKeyLine }
    }
    return nil
  }

  private static let newline = UInt8(ascii: "\n")
  /// What may come before an explicit key's `?` on its line.
  private static let explicitKeyFollows = Set("-[{,:?".utf8)
  /// What may come right before an alias's `*`, besides white space.
  private static let aliasFollows = Set("[{,:?".utf8)

  private static func isSpace(_ byte: UInt8) -> Bool {
    byte == UInt8(ascii: " ") || byte == UInt8(ascii: "\t") || byte == UInt8(ascii: "\r")
  }

  /// Whether `byte` may be part of an anchor's name (libyaml: letters, digits, `-`, `_`).
  private static func isNameByte(_ byte: UInt8) -> Bool {
    switch byte {
    case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
      UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
      true
    default: false
    }
  }
}
