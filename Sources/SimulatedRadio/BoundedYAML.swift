package import Yams

/// YAML composed with bounds on what it stands for once its aliases are expanded.
///
/// An alias (`*name`) stands for the node anchored earlier (`&name`), so a few lines can stand
/// for billions of values: in the "billion laughs" document each line is a list of ten aliases
/// of the line before. Yams shares an aliased node instead of copying it, but a reader that
/// walks the document (the configuration's schema check, the world file's) visits it once per
/// alias, and hung there. Aliases also nest: the parser refuses text nested more than 1,000
/// levels deep, but a list 900 levels deep that holds an alias of another such list is 1,800
/// levels deep once expanded, and a recursive walk of a chain of them overflows the stack.
/// ``compose(yaml:maxNodes:maxDepth:)`` counts the nodes such a walk visits and how deep it
/// goes, stopping at either bound, before anyone walks it.
package enum BoundedYAML {
  /// The most nodes (scalars, lists, mappings, keys counted) a document may stand for: about
  /// 500 times the largest shipped file (`config/gatt2mqtt.example.yaml`, under 200 nodes).
  package static let defaultMaxNodes = 100_000
  /// The deepest a document may nest, aliases expanded: the shipped files nest 6 levels.
  package static let defaultMaxDepth = 64

  /// A document past a bound.
  package struct TooLarge: Error, Sendable, Hashable, CustomStringConvertible {
    /// What an administrator reads.
    package var description: String

    /// More nodes than `maxNodes`.
    package static func values(_ maxNodes: Int) -> TooLarge {
      TooLarge(
        description: "the document stands for more than \(maxNodes) values once its aliases "
          + "(*name) are expanded: write the values out, or use fewer aliases of aliases")
    }

    /// Deeper than `maxDepth`.
    package static func depth(_ maxDepth: Int) -> TooLarge {
      TooLarge(
        description: "the document nests more than \(maxDepth) levels deep once its aliases "
          + "(*name) are expanded")
    }
  }

  /// Composes a YAML document, refusing one that stands for more than `maxNodes` nodes or nests
  /// deeper than `maxDepth` levels, aliases expanded.
  ///
  /// - Parameters:
  ///   - yaml: The document.
  ///   - maxNodes: The most nodes it may stand for.
  ///   - maxDepth: The deepest it may nest (the root is level 1).
  /// - Returns: The root node, `nil` for an empty document.
  /// - Throws: `YamlError` for invalid YAML (as `Yams.compose`), ``TooLarge`` past a bound.
  package static func compose(
    yaml: String, maxNodes: Int = defaultMaxNodes, maxDepth: Int = defaultMaxDepth
  ) throws -> Node? {
    guard let root = try Yams.compose(yaml: yaml) else { return nil }
    var budget = maxNodes
    switch walk(root, budget: &budget, levelsLeft: maxDepth) {
    case .fits: return root
    case .tooMany: throw TooLarge.values(maxNodes)
    case .tooDeep: throw TooLarge.depth(maxDepth)
    }
  }

  /// What ``walk(_:budget:levelsLeft:)`` found.
  private enum Walk { case fits, tooMany, tooDeep }

  /// Walks `node` and everything under it, lowering `budget` by one per node, and stops as soon
  /// as the budget or the levels run out: the walk costs at most the bounds, and its recursion
  /// is at most `levelsLeft` deep.
  private static func walk(_ node: Node, budget: inout Int, levelsLeft: Int) -> Walk {
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
