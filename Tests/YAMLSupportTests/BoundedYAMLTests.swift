import Foundation
import Testing
import Yams

@testable import YAMLSupport

@Suite("YAML within bounds")
struct BoundedYAMLTests {
  /// A scalar anchored `&a`, then `lists` lists, each `depth` levels deep around an alias of the
  /// one before and anchored under the same name: `lists × depth` levels once expanded, from
  /// text that nests `depth` levels. Only the last list is the parser's `a` at the end, so only
  /// it holds the chain.
  static func chain(lists: Int, depth: Int) -> String {
    var yaml = "chain:\n  - &a x\n"
    for _ in 1...lists {
      yaml +=
        "  - &a " + String(repeating: "[", count: depth) + "*a"
        + String(repeating: "]", count: depth)
        + "\n"
    }
    return yaml
  }

  /// Nine levels of lists of ten aliases of the level before: 10^9 values in 400 bytes.
  static let laughs: String = {
    var yaml = "l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n"
    for level in 1...8 {
      let aliases = Array(repeating: "*l\(level - 1)", count: 10).joined(separator: ", ")
      yaml += "l\(level): &l\(level) [\(aliases)]\n"
    }
    return yaml
  }()

  @Test(
    "a tree whose aliases nest 90,000 levels deep is refused and freed without overflowing the stack",
    .timeLimit(.minutes(1)))
  func deepChainIsFreed() {
    // Freed as a whole, this tree overflowed the stack (signal 11) after the depth bound had
    // refused it.
    #expect(throws: BoundedYAML.Refusal.depth(BoundedYAML.defaultMaxDepth)) {
      try BoundedYAML.compose(yaml: Self.chain(lists: 100, depth: 900))
    }
  }

  @Test(
    "a document the parser refuses after a deep chain of aliases fails without overflowing the stack",
    .timeLimit(.minutes(1)))
  func syntaxErrorAfterDeepChain() {
    // Yams keeps the anchored nodes in its parser; freeing them with it overflowed the stack.
    let yaml = Self.chain(lists: 100, depth: 900) + "broken: [unclosed\n"
    #expect(throws: YamlError.self) { try BoundedYAML.compose(yaml: yaml) }
  }

  @Test(
    "a mapping key that is, or holds, an alias is refused before the parser hashes it",
    .timeLimit(.minutes(1)),
    arguments: [
      ("? *l8\n: 1\n", 10),
      ("*l8 : 1\n", 10),
      ("*l8: 1\n", 10),
      ("[*l8]: 1\n", 10),
      ("{? *l8 : 1}: 2\n", 10),
      ("m: {?*l8 : 1}\n", 10),
      ("s:\n  - ? [*l8, x]\n    : 1\n", 11),
      ("s:\n- {*l8\n : 1}\n", 11),
    ])
  func aliasKeys(key: String, line: Int) {
    // Yams hashes every key to find duplicates: `? *l8` alone hung it for good.
    #expect(throws: BoundedYAML.Refusal.aliasKey(line: line)) {
      try BoundedYAML.compose(yaml: Self.laughs + key)
    }
  }

  @Test("a key that could hold an alias, written before the first alias, is found at its line")
  func keyBeforeAlias() {
    #expect(BoundedYAML.keyThatCouldHoldAnAlias(in: "? [a]\n: 1\nb: &b x\nc: *b\n") == 1)
  }

  @Test(
    "documents with aliases whose keys are names are read",
    arguments: [
      "a: &a {x: 1}\nb: *a\n",
      "a: &a [1, 2]\nb: [*a, *a]\nc: {d: *a}\n",
      "name: Is it? Yes\nwhy: what ? for\na: &a x\nb: *a\n",
      "url: \"http://host/?q=1\"\na: &a x\nb: *a # note: later\n",
      "pattern: \"*/180d/2a37\"\nglob: AA:BB:*\npassword: \"p*ss:word\"\na: &a x\nb: *a\n",
    ])
  func aliasesInValues(yaml: String) throws {
    #expect(try BoundedYAML.compose(yaml: yaml) != nil)
  }

  @Test("a document without aliases may have keys that are lists: the reader judges them")
  func complexKeyWithoutAliases() throws {
    let root = try #require(try BoundedYAML.compose(yaml: "? [a, b]\n: 1\n[c]: 2\n"))
    #expect(root.mapping?.count == 2)
  }

  @Test("what the scan cannot tell from a key is refused only in a document that uses aliases")
  func scanFindsMoreThanThereIs() {
    // `[x]:` inside a quoted string is no key, but the scan skips nothing.
    let quoted = "note: \"[x]: y\"\n"
    #expect(BoundedYAML.keyThatCouldHoldAnAlias(in: quoted) == nil)
    #expect(BoundedYAML.keyThatCouldHoldAnAlias(in: quoted + "a: &a x\nb: *a\n") == 1)
  }

  @Test("aliases within the bounds are expanded")
  func aliasesWithinBounds() throws {
    let root = try #require(try BoundedYAML.compose(yaml: "a: &a [1, 2]\nb: [*a, *a]\n"))
    #expect(root.mapping?["b"]?.sequence?.first?.sequence?.count == 2)
  }
}
