import Yams

extension BoundedYAML {
  /// A composed document and the parser that composed it, so that a refused tree can be freed
  /// without overflowing the stack.
  ///
  /// Freeing a node frees what only it holds, recursively: a tree whose aliases nest 90,000
  /// levels deep overflowed the stack when its last reference went (signal 11). Every node two
  /// parents share in a Yams tree is one anchored in the text (an alias stands for an anchored
  /// node), and between two anchored nodes the tree nests no deeper than the text (the parser
  /// refuses more than 1,000 levels). So ``dismantle()`` holds every anchored node, lets go of
  /// the root, then lets go of the anchored nodes, each before the ones it holds: each release
  /// stops at the next anchored node, still held.
  final class Composition {
    /// The document's root, `nil` for an empty document or once dismantled.
    private(set) var root: Node?
    /// Holds the anchors, which the nodes reference weakly, while ``dismantle()`` looks for them.
    private var parser: Parser?

    /// Composes `yaml`.
    /// - Throws: `YamlError` for invalid YAML.
    init(yaml: String) throws {
      let parser = try Parser(yaml: yaml)
      do {
        root = try parser.singleRoot()
      } catch {
        // The parser holds the anchored nodes of a document it refused part-way, and freeing
        // them could recurse as deep as their aliases nest. Only aliases nest deeper than the
        // text: a document with one keeps its parser for the life of the process (no more than
        // the file holds; a refused file ends a start-up).
        if yaml.utf8.contains(UInt8(ascii: "*")) { _ = Unmanaged.passRetained(parser) }
        throw error
      }
      self.parser = parser
    }

    /// Walks the tree within the bounds (``BoundedYAML/walk(_:budget:levelsLeft:)``).
    func measure(maxNodes: Int, maxDepth: Int) -> Walk {
      guard let root else { return .fits }
      var budget = maxNodes
      return BoundedYAML.walk(root, budget: &budget, levelsLeft: maxDepth)
    }

    /// One step of the walk in ``dismantle()``: visit a node, or, once everything under it has
    /// been visited, record it.
    private enum Step {
      case visit(Node)
      case finish(Node)
    }

    /// Frees the tree one anchored node at a time; ``root`` is `nil` afterwards.
    func dismantle() {
      // Every anchored node once, after everything under it (post-order): reversed, each comes
      // before the nodes it holds. The walk visits each anchored node once and every other node
      // once (it has one parent), so it costs what the text does, not what it stands for.
      var order: [Node] = []
      do {
        var steps: [Step] = []
        if let root { steps.append(.visit(root)) }
        root = nil
        var seen = Set<ObjectIdentifier>()
        while let step = steps.popLast() {
          switch step {
          case .finish(let node): order.append(node)
          case .visit(let node):
            if let anchor = node.anchor {
              guard seen.insert(ObjectIdentifier(anchor)).inserted else { continue }
              steps.append(.finish(node))
            }
            switch node {
            case .scalar, .alias: break
            case .sequence(let sequence): steps.append(contentsOf: sequence.map(Step.visit))
            case .mapping(let mapping):
              for (key, value) in mapping {
                steps.append(contentsOf: [.visit(key), .visit(value)])
              }
            }
          }
        }
      }
      // The parser's own references to anchored nodes go first (they are all in `order`), then
      // the anchored nodes, outermost first.
      parser = nil
      while order.popLast() != nil {}
    }
  }
}
