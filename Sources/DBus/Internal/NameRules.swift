/// The D-Bus grammar for object paths, signatures and names, checked in Swift so that nothing
/// invalid ever reaches libdbus (whose argument checks abort the process by default).
enum NameRules {
  private static func isAlpha(_ c: UInt8) -> Bool {
    (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c == 95  // A-Z a-z _
  }

  private static func isDigit(_ c: UInt8) -> Bool { c >= 48 && c <= 57 }

  /// `/` or `/seg(/seg)*` with segments of `[A-Za-z0-9_]+`.
  static func isValidObjectPath(_ text: String) -> Bool {
    let bytes = Array(text.utf8)
    guard bytes.first == 47 else { return false }
    if bytes.count == 1 { return true }
    guard bytes.last != 47 else { return false }
    var previousSlash = true
    for c in bytes.dropFirst() {
      if c == 47 {
        if previousSlash { return false }
        previousSlash = true
      } else if isAlpha(c) || isDigit(c) {
        previousSlash = false
      } else {
        return false
      }
    }
    return true
  }

  /// Interface and error names: two or more dot-separated elements `[A-Za-z_][A-Za-z0-9_]*`.
  static func isValidInterfaceName(_ text: String) -> Bool {
    let bytes = Array(text.utf8)
    guard !bytes.isEmpty, bytes.count <= 255 else { return false }
    let elements = bytes.split(separator: 46, omittingEmptySubsequences: false)
    guard elements.count >= 2 else { return false }
    return elements.allSatisfy { element in
      guard let first = element.first, isAlpha(first) else { return false }
      return element.allSatisfy { isAlpha($0) || isDigit($0) }
    }
  }

  /// Member names: `[A-Za-z_][A-Za-z0-9_]*`, at most 255 bytes.
  static func isValidMemberName(_ text: String) -> Bool {
    let bytes = Array(text.utf8)
    guard let first = bytes.first, bytes.count <= 255, isAlpha(first) else { return false }
    return bytes.allSatisfy { isAlpha($0) || isDigit($0) }
  }

  /// Unique (`:1.42`) or well-known (`org.bluez`) bus names.
  static func isValidBusName(_ text: String) -> Bool {
    var bytes = Array(text.utf8)
    guard !bytes.isEmpty, bytes.count <= 255 else { return false }
    let unique = bytes.first == 58
    if unique { bytes.removeFirst() }
    let elements = bytes.split(separator: 46, omittingEmptySubsequences: false)
    guard elements.count >= 2 else { return false }
    return elements.allSatisfy { element in
      guard let first = element.first else { return false }
      if !unique && isDigit(first) { return false }
      return element.allSatisfy { isAlpha($0) || isDigit($0) || $0 == 45 }
    }
  }

  /// Splits a signature into its complete types, or returns nil when it is invalid
  /// (unknown codes, unbalanced containers, dict entries outside arrays, non-basic dict keys,
  /// empty structs, more than 32 nested arrays or structs, more than 255 bytes).
  static func completeTypes(_ signature: String) -> [String]? {
    let bytes = Array(signature.utf8)
    guard bytes.count <= 255 else { return nil }
    var index = 0
    var types: [String] = []
    while index < bytes.count {
      let start = index
      guard parseCompleteType(bytes, &index, arrays: 0, structs: 0) else { return nil }
      types.append(String(decoding: bytes[start..<index], as: UTF8.self))
    }
    return types
  }

  private static let basicCodes = Set("ybnqiuxtdsogh".utf8)

  private static func parseCompleteType(
    _ bytes: [UInt8], _ index: inout Int, arrays: Int, structs: Int
  ) -> Bool {
    guard index < bytes.count else { return false }
    let c = bytes[index]
    index += 1
    if basicCodes.contains(c) || c == UInt8(ascii: "v") { return true }
    switch c {
    case UInt8(ascii: "a"):
      guard arrays < 32, index < bytes.count else { return false }
      if bytes[index] == UInt8(ascii: "{") {
        guard structs < 32 else { return false }
        index += 1
        guard index < bytes.count, basicCodes.contains(bytes[index]) else { return false }
        index += 1
        guard parseCompleteType(bytes, &index, arrays: arrays + 1, structs: structs + 1),
          index < bytes.count, bytes[index] == UInt8(ascii: "}")
        else { return false }
        index += 1
        return true
      }
      return parseCompleteType(bytes, &index, arrays: arrays + 1, structs: structs)
    case UInt8(ascii: "("):
      guard structs < 32 else { return false }
      var members = 0
      while index < bytes.count && bytes[index] != UInt8(ascii: ")") {
        guard parseCompleteType(bytes, &index, arrays: arrays, structs: structs + 1) else {
          return false
        }
        members += 1
      }
      guard index < bytes.count, members > 0 else { return false }
      index += 1
      return true
    default:
      return false
    }
  }
}
