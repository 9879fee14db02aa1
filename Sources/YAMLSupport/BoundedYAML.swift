package import Yams

/// YAML composed with bounds on what it stands for once its aliases are expanded.
///
/// An alias (`*name`) stands for the node anchored earlier (`&name`), so a few lines can stand
/// for billions of values: in the "billion laughs" document each line is a list of ten aliases
/// of the line before. Yams shares an aliased node instead of copying it, but three things walk
/// the expanded tree, once per alias:
/// - a reader of the document (the configuration's schema check, the world file's), which hung;
/// - Yams itself, which hashes every mapping key to find duplicates: a key that is an alias of
///   such a list (`? *bomb`) hangs the parser before it returns anything;
/// - Swift, freeing the tree: aliases also nest, the parser refuses text nested more than 1,000
///   levels deep, but a list 900 levels deep holding an alias of another such list is 1,800
///   levels deep once expanded, and freeing a chain of a hundred of them overflowed the stack.
///
/// ``compose(yaml:maxNodes:maxDepth:)`` guards all three: it refuses a key that could hold an
/// alias before the parser starts (``keyThatCouldHoldAnAlias(in:)``); it counts the nodes a walk
/// would visit and how deep it goes, stopping at either bound, before anyone walks the tree; and
/// it frees a refused tree one anchored node at a time (``Composition``).
package enum BoundedYAML {
  /// The most nodes (scalars, lists, mappings, keys counted) a document may stand for: about
  /// 500 times the largest shipped file (`config/gatt2mqtt.example.yaml`, under 200 nodes).
  package static let defaultMaxNodes = 100_000
  /// The deepest a document may nest, aliases expanded: the shipped files nest 6 levels.
  package static let defaultMaxDepth = 64

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

    /// A mapping key on `line` that is, or may hold, an alias, in a document that uses aliases.
    package static func aliasKey(line: Int) -> Refusal {
      Refusal(
        description: "line \(line): a mapping key that is an alias, a list or a mapping (`? `, "
          + "`[…]:`, `{…}:` or `*name:`), in a document that uses aliases (*name); keys must "
          + "be names")
    }
  }

  /// Composes a YAML document, refusing one that stands for more than `maxNodes` nodes or nests
  /// deeper than `maxDepth` levels, aliases expanded, or whose mapping keys could hold an alias.
  ///
  /// - Parameters:
  ///   - yaml: The document.
  ///   - maxNodes: The most nodes it may stand for.
  ///   - maxDepth: The deepest it may nest (the root is level 1).
  /// - Returns: The root node, `nil` for an empty document.
  /// - Throws: `YamlError` for invalid YAML (as `Yams.compose`), ``Refusal`` past a bound.
  package static func compose(
    yaml: String, maxNodes: Int = defaultMaxNodes, maxDepth: Int = defaultMaxDepth
  ) throws -> Node? {
    if let line = keyThatCouldHoldAnAlias(in: yaml) { throw Refusal.aliasKey(line: line) }
    let composition = try Composition(yaml: yaml)
    switch composition.measure(maxNodes: maxNodes, maxDepth: maxDepth) {
    case .fits: return composition.root
    case .tooMany:
      composition.dismantle()
      throw Refusal.values(maxNodes)
    case .tooDeep:
      composition.dismantle()
      throw Refusal.depth(maxDepth)
    }
  }

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
