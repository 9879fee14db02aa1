import Foundation
import Testing
import Yams

@testable import YAMLSupport

@Suite("YAML within bounds", .serialized)
struct BoundedYAMLTests {
  /// A scalar anchored `&a`, then `lists` lists, each `depth` levels deep around an alias of the
  /// one before and anchored under the same name: `lists × depth` levels once expanded, from
  /// text that nests `depth` levels. Only the last list is the parser's `a` at the end, so only
  /// it holds the chain.
  static func chain(lists: Int, depth: Int, open: String = "[", close: String = "]") -> String {
    var yaml = "chain:\n  - &a x\n"
    for _ in 1...lists {
      yaml +=
        "  - &a " + String(repeating: open, count: depth) + "*a"
        + String(repeating: close, count: depth) + "\n"
    }
    return yaml
  }

  /// As ``chain(lists:depth:open:close:)``, with mappings (`{k: {k: *a}}`) in place of lists: 5
  /// bytes of text a level where lists take 2, and a tree of more frames a level (keys and
  /// values).
  static func mappingChain(maps: Int, depth: Int) -> String {
    chain(lists: maps, depth: depth, open: "{k: ", close: "}")
  }

  /// `levels` levels of lists of ten aliases of the level before, the last `l<levels - 1>`:
  /// 10^levels values in 45 bytes a level.
  static func laughs(levels: Int) -> String {
    var yaml = "l0: &l0 [x, x, x, x, x, x, x, x, x, x]\n"
    for level in 1..<levels {
      let aliases = Array(repeating: "*l\(level - 1)", count: 10).joined(separator: ", ")
      yaml += "l\(level): &l\(level) [\(aliases)]\n"
    }
    return yaml
  }

  /// What ``BoundedYAML/compose(yaml:maxNodes:maxDepth:timeLimit:)`` made of a document.
  enum Outcome: Sendable, Hashable {
    case composed
    case refused(BoundedYAML.Refusal)
    case invalid
    case failed(String)
  }

  /// Composes `yaml` on a thread of its own. `compose` blocks its caller, and these documents
  /// take seconds: on the tests' cooperative threads (two on this host) they held up other
  /// suites' tasks, whose brokers then missed their start-up deadline.
  static func outcome(
    _ yaml: String, timeLimit: Duration = BoundedYAML.defaultTimeLimit
  ) async -> Outcome {
    await withCheckedContinuation { continuation in
      Thread {
        do {
          _ = try BoundedYAML.compose(yaml: yaml, timeLimit: timeLimit)
          continuation.resume(returning: .composed)
        } catch let refusal as BoundedYAML.Refusal {
          continuation.resume(returning: .refused(refusal))
        } catch {
          continuation.resume(returning: error is YamlError ? .invalid : .failed("\(error)"))
        }
      }.start()
    }
  }

  @Test(
    "a tree whose aliases nest 90,000 levels deep is refused and freed without overflowing the stack",
    .timeLimit(.minutes(1)))
  func deepChainIsFreed() async {
    // Freed on the caller's thread, this chain overflowed the stack (signal 11) after the depth
    // bound had refused it. (With ``BoundedYAML/bytesPerLevel`` at 2,048, a chain filling 1 MiB,
    // 500,000 levels, was freed and hashed as a key in a debug build; the tests stay smaller,
    // not to hold up the tests beside them.)
    let yaml = Self.chain(lists: 100, depth: 900)
    #expect(await Self.outcome(yaml) == .refused(.depth(BoundedYAML.defaultMaxDepth)))
  }

  @Test(
    "a tree of mappings whose aliases nest 45,000 levels deep is refused and freed without overflowing the stack",
    .timeLimit(.minutes(1)))
  func deepMappingChainIsFreed() async {
    // ``BoundedYAML/bytesPerLevel`` was measured on lists; a level of mappings takes more
    // frames to free, and its text more bytes, so the stack sized from the text must hold it.
    let yaml = Self.mappingChain(maps: 50, depth: 900)
    #expect(await Self.outcome(yaml) == .refused(.depth(BoundedYAML.defaultMaxDepth)))
  }

  @Test(
    "a key that is an alias of a chain 27,000 levels deep is hashed without overflowing the stack",
    .timeLimit(.minutes(1)))
  func deepKeyIsHashed() async {
    // Yams hashes every mapping key to find duplicates, one level of recursion per level: more
    // stack a level than freeing takes.
    let yaml = Self.chain(lists: 30, depth: 900) + "keys:\n  ? *a\n  : 1\n"
    #expect(await Self.outcome(yaml) == .refused(.depth(BoundedYAML.defaultMaxDepth)))
  }

  @Test(
    "a document the parser refuses after a deep chain of aliases fails without overflowing the stack",
    .timeLimit(.minutes(1)))
  func syntaxErrorAfterDeepChain() async {
    // Yams frees what it had composed as it gives up, here the list that holds the chain
    // (`a` anchored again after it): 90,000 levels.
    let yaml = Self.chain(lists: 100, depth: 900) + "  - &a x\nbroken: [unclosed\n"
    #expect(await Self.outcome(yaml) == .invalid)
  }

  @Test(
    "a mapping key that is an alias of a great many values is refused within the time limit",
    .timeLimit(.minutes(1)))
  func aliasKey() async {
    // Yams hashes every key to find duplicates: a key standing for 10^9 values hung it for
    // good. Here 10^5, which the thread left behind finishes in about 0.2 s (debug build), not
    // to slow the tests that run beside this one.
    let limit = Duration.milliseconds(5)
    let yaml = Self.laughs(levels: 5) + "? *l4\n: 1\n"
    #expect(await Self.outcome(yaml, timeLimit: limit) == .refused(.time(limit)))
  }

  @Test(
    "10^9 values standing in aliases in values are refused by the count at once: the parser walks only keys",
    .timeLimit(.minutes(1)))
  func aliasesInValuesAreCounted() async {
    // The partner of the test above: the parser shares an alias in a value (a key that stood
    // for these 10^9 values would hang it for good), and the count stops at its bound.
    let yaml = Self.laughs(levels: 9)
    #expect(await Self.outcome(yaml) == .refused(.values(BoundedYAML.defaultMaxNodes)))
  }

  @Test("a composing thread the system refuses is reported at once, not after the time limit")
  func noThread() throws {
    let started = ContinuousClock.now
    do {
      // A stack of 1 EiB: `pthread_create` cannot map it (EAGAIN).
      _ = try BoundedYAML.compose(
        yaml: "a: 1\n", maxNodes: 10, maxDepth: 10, timeLimit: .seconds(60), stackSize: 1 << 60)
      Issue.record("composed on a thread the system cannot make")
    } catch let refusal as BoundedYAML.Refusal {
      #expect(refusal.description.hasPrefix("the document was not read: no thread to read it on"))
      #expect(refusal.description.contains("pthread_create"))
    }
    // Not the 60 s a thread that never ran would have been waited for.
    #expect(ContinuousClock.now - started < .seconds(30))
  }

  @Test(
    "documents with aliases whose keys are names are read",
    arguments: [
      "a: &a {x: 1}\nb: *a\n",
      "a: &a [1, 2]\nb: [*a, *a]\nc: {d: *a}\n",
      "name: Is it? Yes\nwhy: what ? for\na: &a x\nb: *a\n",
      "pattern: \"*/180d/2a37\"\nglob: AA:BB:*\npassword: \"p*ss:word\"\na: &a x\nb: *a\n",
    ])
  func aliasesInValues(yaml: String) throws {
    #expect(try BoundedYAML.compose(yaml: yaml) != nil)
  }

  @Test("keys that are lists are composed: the readers judge them")
  func complexKeys() throws {
    let root = try #require(try BoundedYAML.compose(yaml: "? [a, b]\n: 1\n[c]: 2\n"))
    #expect(root.mapping?.count == 2)
  }

  @Test("aliases within the bounds are expanded")
  func aliasesWithinBounds() throws {
    let root = try #require(try BoundedYAML.compose(yaml: "a: &a [1, 2]\nb: [*a, *a]\n"))
    #expect(root.mapping?["b"]?.sequence?.first?.sequence?.count == 2)
  }

  @Test("a text longer than the files' bound is refused before a stack is sized for it")
  func tooLong() {
    let text = "# " + String(repeating: "x", count: YAMLFile.defaultMaxBytes) + "\n"
    #expect(throws: BoundedYAML.Refusal.size(YAMLFile.defaultMaxBytes)) {
      try BoundedYAML.compose(yaml: text)
    }
  }

  @Test("the composing thread's stack grows with the text: at least 8 MiB")
  func stackSize() {
    #expect(BoundedYAML.stackSize(forTextOf: "a: 1\n") == 8 << 20)
    let big = String(repeating: "#", count: 256 << 10)
    #expect(
      BoundedYAML.stackSize(forTextOf: big) == ((128 << 10) + 1_000) * BoundedYAML.bytesPerLevel)
  }
}
