import Dispatch
import LoopSupport
package import Yams

/// YAML composed with bounds on what it stands for once its aliases are expanded.
///
/// An alias (`*name`) stands for the node anchored earlier (`&name`), so a few lines can stand
/// for billions of values: in the "billion laughs" document each line is a list of ten aliases
/// of the line before. Yams shares an aliased node instead of copying it, but three things walk
/// the expanded tree, once per alias:
/// - a reader of the document (the configuration's schema check, the world file's), which hung;
/// - Yams itself, which hashes every mapping key to find duplicates: a key that is an alias of
///   such a list (`? *bomb`, or `{*bomb}`) hung the parser before it returned anything;
/// - Swift, freeing the tree, and Yams, hashing a key: aliases also nest. The parser refuses
///   text nested more than 1,000 levels deep, but a list 900 levels deep holding an alias of
///   another such list is 1,800 levels deep once expanded; freeing a chain of a hundred of them
///   overflowed the stack (signal 11).
///
/// ``compose(yaml:maxNodes:maxDepth:timeLimit:)`` counts the nodes a reader's walk would visit
/// and how deep it goes, stopping at either bound, before anyone walks the tree. What happens
/// inside Yams cannot be bounded from outside (a byte scan for such keys, tried first, was led
/// past them by line breaks other than `\n` and by flow mappings' keys without `:`), so Yams
/// composes on a thread of its own whose stack holds the deepest tree the text can stand for
/// (``stackSize(forTextOf:)``), within a time limit; a refused tree is freed there too.
package enum BoundedYAML {
  /// The most nodes (scalars, lists, mappings, keys counted) a document may stand for: about
  /// 500 times the largest shipped file (`config/gatt2mqtt.example.yaml`, under 200 nodes).
  package static let defaultMaxNodes = 100_000
  /// The deepest a document may nest, aliases expanded: the shipped files nest 6 levels.
  package static let defaultMaxDepth = 64
  /// How long composing may take: a file of 256 KiB (``YAMLFile/defaultMaxBytes``) takes well
  /// under a second here.
  package static let defaultTimeLimit: Duration = .seconds(10)

  /// A document refused before it is read.
  package struct Refusal: Error, Sendable, Hashable, CustomStringConvertible {
    /// What an administrator reads.
    package var description: String

    /// More nodes than `maxNodes`.
    package static func values(_ maxNodes: Int) -> Refusal {
      Refusal(
        description: "the document stands for more than \(maxNodes) values once its aliases "
          + "(*name) are expanded: write the values out, or use fewer aliases of aliases")
    }

    /// Deeper than `maxDepth`.
    package static func depth(_ maxDepth: Int) -> Refusal {
      Refusal(
        description: "the document nests more than \(maxDepth) levels deep once its aliases "
          + "(*name) are expanded")
    }

    /// Longer than `maxBytes`, the bound the composing thread's stack is sized for.
    package static func size(_ maxBytes: Int) -> Refusal {
      Refusal(description: "the document is longer than \(maxBytes / 1024) KiB")
    }

    /// Not composed: the system refused the thread that composes (`reason` says why).
    package static func noThread(_ reason: String) -> Refusal {
      Refusal(description: "the document was not read: no thread to read it on (\(reason))")
    }

    /// Not composed within `timeLimit`.
    package static func time(_ timeLimit: Duration) -> Refusal {
      Refusal(
        description: "the document was not read within \(timeLimit): a mapping key that is an "
          + "alias (`? *name`, `{*name}`) makes the parser compare everything the alias stands "
          + "for; keys must be names")
    }
  }

  /// Composes a YAML document, refusing one that stands for more than `maxNodes` nodes or nests
  /// deeper than `maxDepth` levels, aliases expanded, that is not composed within `timeLimit`,
  /// or that is longer than ``YAMLFile/defaultMaxBytes``.
  ///
  /// The calling thread waits for the composing thread. After a refusal for time, that thread
  /// runs on until Yams returns; the caller, refused its configuration, ends the process.
  ///
  /// - Parameters:
  ///   - yaml: The document.
  ///   - maxNodes: The most nodes it may stand for.
  ///   - maxDepth: The deepest it may nest (the root is level 1).
  ///   - timeLimit: How long composing may take.
  /// - Returns: The root node, `nil` for an empty document.
  /// - Throws: `YamlError` for invalid YAML (as `Yams.compose`), ``Refusal`` past a bound or
  ///   when the system refuses the composing thread.
  package static func compose(
    yaml: String, maxNodes: Int = defaultMaxNodes, maxDepth: Int = defaultMaxDepth,
    timeLimit: Duration = defaultTimeLimit
  ) throws -> Node? {
    try compose(
      yaml: yaml, maxNodes: maxNodes, maxDepth: maxDepth, timeLimit: timeLimit,
      stackSize: stackSize(forTextOf: yaml))
  }

  /// ``compose(yaml:maxNodes:maxDepth:timeLimit:)`` on a thread with a stack of `stackSize`
  /// bytes (tests ask for one the system refuses).
  ///
  /// - Throws: As ``compose(yaml:maxNodes:maxDepth:timeLimit:)``.
  static func compose(
    yaml: String, maxNodes: Int, maxDepth: Int, timeLimit: Duration, stackSize: Int
  ) throws -> Node? {
    // The stack is sized from the text (270 MB of address space at this bound); the files'
    // reader holds to the bound already.
    guard yaml.utf8.count <= YAMLFile.defaultMaxBytes else {
      throw Refusal.size(YAMLFile.defaultMaxBytes)
    }
    let handoff = Handoff()
    do throws(LoopError) {
      try startThread(named: "yaml-compose", stackSize: stackSize) {
        handoff.outcome = Result {
          guard let root = try Yams.compose(yaml: yaml) else { return nil }
          var budget = maxNodes
          switch walk(root, budget: &budget, levelsLeft: maxDepth) {
          case .fits: return root
          case .tooMany: throw Refusal.values(maxNodes)
          case .tooDeep: throw Refusal.depth(maxDepth)
          }
        }
        handoff.done.signal()
      }
    } catch {
      throw Refusal.noThread("\(error)")
    }
    guard handoff.done.wait(timeout: .now() + timeLimit / .seconds(1)) == .success else {
      throw Refusal.time(timeLimit)
    }
    return try handoff.outcome.get()
  }

  /// What the composing thread hands back.
  private final class Handoff: @unchecked Sendable {
    // Safety: the composing thread writes `outcome` once, before it signals `done`; the caller
    // reads it only after `done` was signalled (and never after a refusal for time).
    var outcome: Result<Node?, any Error> = .success(nil)
    let done = DispatchSemaphore(value: 0)
  }

  /// The stack the composing thread needs for `yaml`: Swift frees a tree, and Yams hashes a
  /// key, recursively, one level per level of nesting, and a text of n bytes nests at most n/2
  /// levels once its aliases are expanded (`[` and `]`, or `- `, per level), whatever it says.
  /// ``bytesPerLevel`` was measured (`BoundedYAMLTests`); at least 8 MiB, the main thread's.
  /// The stack is address space: only a document that nests that deep touches it.
  ///
  /// - Parameter yaml: The document.
  /// - Returns: The stack size in bytes.
  static func stackSize(forTextOf yaml: String) -> Int {
    max(8 << 20, (yaml.utf8.count / 2 + 1_000) * bytesPerLevel)
  }

  /// Stack bytes per level of nesting that freeing a tree or hashing a key takes, measured in a
  /// debug build: hashing a key 500,000 levels deep overflowed 512 bytes a level and fit in
  /// 2,048; at the files' bound (256 KiB) a key standing for a chain of lists 126,000 levels
  /// deep overflowed 512 and fit in 2,048, and one of mappings (`{k: {k: …}}`, 5 bytes of
  /// text a level where lists take 2) 51,300 levels deep fit in 512 too.
  static let bytesPerLevel = 2048

  /// What ``walk(_:budget:levelsLeft:)`` found.
  enum Walk { case fits, tooMany, tooDeep }

  /// Walks `node` and everything under it, lowering `budget` by one per node, and stops as soon
  /// as the budget or the levels run out: the walk costs at most the bounds, and its recursion
  /// is at most `levelsLeft` deep.
  static func walk(_ node: Node, budget: inout Int, levelsLeft: Int) -> Walk {
    budget -= 1
    guard budget >= 0 else { return .tooMany }
    guard levelsLeft > 0 else { return .tooDeep }
    func children(_ nodes: some Sequence<Node>) -> Walk {
      for child in nodes {
        let found = walk(child, budget: &budget, levelsLeft: levelsLeft - 1)
        guard found == .fits else { return found }
      }
      return .fits
    }
    switch node {
    case .scalar, .alias: return .fits
    case .sequence(let sequence): return children(sequence)
    case .mapping(let mapping): return children(mapping.lazy.flatMap { [$0.key, $0.value] })
    }
  }
}
