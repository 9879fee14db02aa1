package import Yams

/// YAML composed with a bound on how many values it stands for once its aliases are expanded.
///
/// An alias (`*name`) stands for the node anchored earlier (`&name`), so a few lines can stand
/// for billions of values: in the "billion laughs" document each line is a list of ten aliases
/// of the line before. Yams shares an aliased node instead of copying it, but a reader that
/// walks the document (the configuration's schema check, the world file's) visits it once per
/// alias, and hung there. ``compose(yaml:maxNodes:)`` counts the nodes such a walk visits,
/// stopping at the bound, before anyone walks it. Nesting needs no bound of ours: the YAML
/// parser refuses documents nested more than 1,000 levels deep.
package enum BoundedYAML {
  /// The most nodes (scalars, lists, mappings, keys counted) a document may stand for: a
  /// thousand times what the largest shipped file holds.
  package static let defaultMaxNodes = 1_000_000

  /// A document that stands for more nodes than the bound.
  package struct TooLarge: Error, Sendable, Hashable, CustomStringConvertible {
    /// The bound that was passed.
    package var maxNodes: Int

    /// What an administrator reads.
    package var description: String {
      "the document stands for more than \(maxNodes) values once its aliases (*name) are "
        + "expanded: write the values out, or use fewer aliases of aliases"
    }
  }

  /// Composes a YAML document, refusing one that stands for more than `maxNodes` nodes.
  ///
  /// - Parameters:
  ///   - yaml: The document.
  ///   - maxNodes: The most nodes it may stand for, aliases expanded.
  /// - Returns: The root node, `nil` for an empty document.
  /// - Throws: `YamlError` for invalid YAML (as `Yams.compose`), ``TooLarge`` past the bound.
  package static func compose(yaml: String, maxNodes: Int = defaultMaxNodes) throws -> Node? {
    guard let root = try Yams.compose(yaml: yaml) else { return nil }
    var budget = maxNodes
    guard fits(root, within: &budget) else { throw TooLarge(maxNodes: maxNodes) }
    return root
  }

  /// Whether `node` and everything under it fits within `budget` nodes (which it lowers); stops
  /// as soon as it does not, so the walk costs at most the bound.
  private static func fits(_ node: Node, within budget: inout Int) -> Bool {
    budget -= 1
    guard budget >= 0 else { return false }
    switch node {
    case .scalar, .alias:
      return true
    case .sequence(let sequence):
      return sequence.allSatisfy { fits($0, within: &budget) }
    case .mapping(let mapping):
      return mapping.allSatisfy { fits($0.key, within: &budget) && fits($0.value, within: &budget) }
    }
  }
}
