import Foundation
import YAMLSupport
import Yams

/// Reads the YAML configuration file and checks it against the schema.
///
/// It reports what swift-configuration's `YAMLSnapshot` does not: unknown keys (with a
/// suggestion), values of the wrong type or out of range, and `null` for keys that need a
/// value, each with the dotted key path and the line. Values are judged by their text, so a
/// quoted number is accepted for an integer key. `null` (or an empty value) leaves an optional
/// key unset, and an empty section (`tls:` with nothing under it) is allowed. A list key takes a
/// sequence of scalars (`uuids: [180f, 180d]`, or one item per `-` line) or a comma-separated
/// string (`uuids: 180f, 180d`). An empty file, or one with only comments, sets nothing.
enum YAMLConfigurationParser {
  /// Reads and checks the file at `path`.
  ///
  /// - Parameter path: The file's path, also the source name in errors.
  /// - Returns: The file's settings.
  /// - Throws: ``ConfigurationError`` for a missing, unreadable or over-large file
  ///   (``YAMLFile/defaultMaxBytes``), invalid YAML, a top
  ///   level that is not a mapping, or any key or value that does not fit the schema.
  static func layer(fromFileAt path: String) throws(ConfigurationError) -> ConfigurationLayer {
    func failure(_ message: String) -> ConfigurationError {
      ConfigurationError(key: nil, source: path, message: message)
    }
    let text: String
    do {
      text = try YAMLFile.read(atPath: path)
    } catch {
      switch error {
      case .notFound: throw failure("configuration file not found")
      case .isDirectory: throw failure("is a directory, not a configuration file")
      case .unreadable(let reason): throw failure("cannot read the configuration file (\(reason))")
      case .tooLarge(let maxBytes):
        throw failure(
          "the configuration file is larger than \(maxBytes / 1024) KiB: is it the right file?")
      case .notUTF8: throw failure("the configuration file is not UTF-8 text")
      }
    }
    return try layer(yaml: text, source: path)
  }

  /// Parses and checks YAML text.
  ///
  /// - Parameters:
  ///   - yaml: The YAML document.
  ///   - source: The source name used in errors (the file's path).
  /// - Returns: The document's settings.
  /// - Throws: ``ConfigurationError`` as ``layer(fromFileAt:)`` does, except for file access.
  static func layer(yaml: String, source: String) throws(ConfigurationError) -> ConfigurationLayer {
    let root: Node?
    do {
      root = try BoundedYAML.compose(yaml: yaml)
    } catch let error as BoundedYAML.Refusal {
      throw ConfigurationError(key: nil, source: source, message: error.description)
    } catch let error as YamlError {
      throw syntaxError(error, source: source)
    } catch {
      throw ConfigurationError(key: nil, source: source, message: "invalid YAML: \(error)")
    }
    var layer = ConfigurationLayer(source: source)
    guard let root else { return layer }
    guard case .mapping(let mapping) = root else {
      let sections = Set(ConfigurationKey.all.map { $0.path.prefix { $0 != "." } } + ["devices"])
        .sorted()
      throw ConfigurationError(
        key: nil, source: source, line: root.mark?.line,
        message: "the top level must be a mapping of the sections "
          + sections.joined(separator: ", ") + ", got \(describe(root))")
    }
    var devices: DeviceSection.Items = [:]
    try walk(mapping, prefix: nil, into: &layer, devices: &devices)
    try DeviceSection.apply(devices, to: &layer)
    return layer
  }

  private static func walk(
    _ mapping: Node.Mapping, prefix: String?, into layer: inout ConfigurationLayer,
    devices: inout DeviceSection.Items
  ) throws(ConfigurationError) {
    for (keyNode, value) in mapping {
      let line = keyNode.mark?.line
      guard case .scalar(let name) = keyNode else {
        throw ConfigurationError(
          key: prefix, source: layer.source, line: line,
          message: "keys must be names, got \(describe(keyNode)) as a key")
      }
      let path = prefix.map { "\($0).\(name.string)" } ?? name.string
      if let key = ConfigurationKey.byPath[path] {
        switch value {
        case .scalar(let scalar) where isNull(scalar):
          guard key.isOptional else {
            throw layer.invalidValue(key, text: nil, line: line, spelling: path)
          }
        case .scalar(let scalar):
          try layer.set(key, text: scalar.string, line: line, spelling: path)
        case .sequence(let sequence) where isList(key):
          try layer.set(
            key, items: items(of: sequence, key, layer.source), line: line, spelling: path)
        default:
          throw ConfigurationError(
            key: path, source: layer.source, line: line,
            message: "expected \(key.type), got \(describe(value))")
        }
      } else if ConfigurationKey.sections.contains(path) {
        switch value {
        case .mapping(let section):
          try walk(section, prefix: path, into: &layer, devices: &devices)
        case .scalar(let scalar) where isNull(scalar):
          continue
        default:
          let children = ConfigurationKey.all.compactMap { key -> String? in
            guard key.path.hasPrefix(path + ".") else { return nil }
            return String(key.path.dropFirst(path.count + 1).prefix { $0 != "." })
          }
          var seen = Set<String>()
          let names = children.filter { seen.insert($0).inserted }
          throw ConfigurationError(
            key: path, source: layer.source, line: line,
            message: "expected a mapping with the keys \(names.joined(separator: ", ")), got "
              + describe(value))
        }
      } else if path == "devices" {
        devices = try DeviceSection.read(value, line: line, source: layer.source)
      } else {
        throw unknownKey(path, source: layer.source, line: line)
      }
    }
  }

  private static func isList(_ key: ConfigurationKey) -> Bool {
    if case .list = key.type { return true }
    return false
  }

  /// The items of a sequence given for a list key: each a scalar, `null` an empty item.
  private static func items(
    of sequence: Node.Sequence, _ key: ConfigurationKey, _ source: String
  ) throws(ConfigurationError) -> [(text: String, line: Int?)] {
    var items: [(text: String, line: Int?)] = []
    for node in sequence {
      guard case .scalar(let scalar) = node else {
        throw ConfigurationError(
          key: key.path, source: source, line: node.mark?.line,
          message: "expected \(key.type), got a list holding \(describe(node))")
      }
      items.append((isNull(scalar) ? "" : scalar.string, node.mark?.line))
    }
    return items
  }

  private static func unknownKey(_ path: String, source: String, line: Int?)
    -> ConfigurationError
  {
    let candidates =
      ConfigurationKey.all.map(\.path) + ConfigurationKey.sections.sorted() + ["devices"]
    var message = "unknown key"
    if let suggestion = KeySuggestion.closest(to: path, among: candidates, separator: ".") {
      message += " (did you mean '\(suggestion)'?)"
    }
    return ConfigurationError(key: path, source: source, line: line, message: message)
  }

  private static func syntaxError(_ error: YamlError, source: String) -> ConfigurationError {
    switch error {
    case .scanner(let context, let problem, let mark, _),
      .parser(let context, let problem, let mark, _),
      .composer(let context, let problem, let mark, _):
      if context?.text == "expected a single document in the stream" {
        return ConfigurationError(
          key: nil, source: source, line: mark.line,
          message: "invalid YAML: a second document starts here; the file must hold one")
      }
      var message = "invalid YAML at column \(mark.column): \(problem)"
      if let context { message += " (\(context.text) at line \(context.mark.line))" }
      return ConfigurationError(key: nil, source: source, line: mark.line, message: message)
    case .duplicatedKeysInMapping(let duplicates, let context):
      let names = duplicates.sorted().map { "'\($0)'" }.joined(separator: ", ")
      return ConfigurationError(
        key: nil, source: source, line: context.mark.line,
        message: "invalid YAML: duplicate key \(names) in one mapping")
    case .reader(let problem, _, _, _):
      return ConfigurationError(key: nil, source: source, message: "invalid YAML: \(problem)")
    default:
      return ConfigurationError(key: nil, source: source, message: "invalid YAML: \(error)")
    }
  }

  /// A plain `~`, `null`, `Null`, `NULL` or nothing; a quoted "null" is the text null.
  static func isNull(_ scalar: Node.Scalar) -> Bool {
    scalar.style == .plain && ["", "~", "null", "Null", "NULL"].contains(scalar.string)
  }

  private static func describe(_ node: Node) -> String {
    switch node {
    case .mapping: "a mapping"
    case .sequence: "a list"
    case .scalar(let scalar) where isNull(scalar): "null"
    case .scalar(let scalar): "\"\(ConfigurationLayer.abbreviated(scalar.string))\""
    case .alias: "an alias"
    }
  }
}
