import BridgeCore
import Yams

/// The file's `devices:` section: each device's settings in one place, keyed by its address.
///
/// ```yaml
/// devices:
///   "A4:C1:38:1E:29:DF":
///     name: porch/thermometer    # bluetooth.names:                "A4:C1:38:1E:29:DF=porch/thermometer"
///     connect: true              # bluetooth.connect.addresses:    "A4:C1:38:1E:29:DF"
///     notify: [180f/2a19]        # bluetooth.gatt.notify:          "A4:C1:38:1E:29:DF/180f/2a19"
///     notify_method: start       # bluetooth.gatt.notify_methods:  "A4:C1:38:1E:29:DF=start"
///   "11:22:33:44:55:66": hall    # a name alone
/// ```
///
/// Each setting adds an item to the list key it stands for, after the items the file gives that
/// key itself, and is checked as that key's items are (a name another device has, a bad UUID,
/// an unknown method: the error names the key, the line and `devices`). `notify: true` turns on
/// every characteristic of the device that can notify; `connect: false` and `notify: false` add
/// nothing. Like every list key, a list set in the environment or on the command line replaces
/// the file's, `devices:` items included.
enum DeviceSection {
  /// The keys a device's mapping may hold.
  static let keys = ["name", "connect", "notify", "notify_method"]

  /// Items to add, by the list key's path, each with its line.
  typealias Items = [String: [(text: String, line: Int?)]]

  /// Reads the section's value.
  ///
  /// - Parameters:
  ///   - value: What `devices:` holds: a mapping of addresses, or nothing.
  ///   - line: The line of `devices:`.
  ///   - source: The file, for errors.
  /// - Returns: The items to add to each list key.
  /// - Throws: ``ConfigurationError`` naming `devices.<address>[.<key>]` and the line.
  static func read(_ value: Node, line: Int?, source: String) throws(ConfigurationError) -> Items {
    var items: Items = [:]
    switch value {
    case .scalar(let scalar) where YAMLConfigurationParser.isNull(scalar):
      return items
    case .mapping(let mapping):
      var seen: [BluetoothAddress: String] = [:]
      for (keyNode, entry) in mapping {
        try read(keyNode, entry, source: source, into: &items, seen: &seen)
      }
      return items
    default:
      throw ConfigurationError(
        key: "devices", source: source, line: line,
        message: "expected a mapping of device addresses to their settings")
    }
  }

  private static func read(
    _ keyNode: Node, _ entry: Node, source: String, into items: inout Items,
    seen: inout [BluetoothAddress: String]
  ) throws(ConfigurationError) {
    let line = keyNode.mark?.line
    guard case .scalar(let key) = keyNode, let parsed = try? BluetoothAddress(key.string) else {
      let text = keyNode.scalar.map { "\"\(ConfigurationLayer.abbreviated($0.string))\"" }
      throw ConfigurationError(
        key: "devices", source: source, line: line,
        message: "\(text ?? "a key that is not text") is not a Bluetooth address "
          + "(quote addresses: \"A4:C1:38:1E:29:DF\")")
    }
    let address = key.string
    let path = "devices.\(address)"
    if let first = seen[parsed] {
      throw ConfigurationError(
        key: path, source: source, line: line,
        message: "the device is given twice (also as \"\(first)\"): give its settings once")
    }
    seen[parsed] = address
    func add(_ listKey: String, _ text: String, _ line: Int?) {
      items[listKey, default: []].append((text, line))
    }
    func fail(_ key: String?, _ message: String, _ line: Int?) -> ConfigurationError {
      ConfigurationError(
        key: key.map { "\(path).\($0)" } ?? path, source: source, line: line, message: message)
    }
    let settings: Node.Mapping
    switch entry {
    case .scalar(let name) where YAMLConfigurationParser.isNull(name):
      throw fail(
        nil, "expected a name or a mapping with the keys \(keys.joined(separator: ", ")), got null",
        line)
    case .scalar(let name):
      add("bluetooth.names", "\(address)=\(name.string)", line)
      return
    case .mapping(let mapping):
      settings = mapping
    default:
      throw fail(
        nil, "expected a name or a mapping with the keys \(keys.joined(separator: ", "))", line)
    }
    for (settingNode, setting) in settings {
      let line = settingNode.mark?.line ?? line
      guard case .scalar(let name) = settingNode, keys.contains(name.string) else {
        var message = "unknown key"
        if let name = settingNode.scalar?.string,
          let suggestion = KeySuggestion.closest(to: name, among: keys, separator: ".")
        {
          message += " (did you mean '\(suggestion)'?)"
        }
        throw fail(settingNode.scalar?.string ?? "?", message, line)
      }
      if case .scalar(let value) = setting, YAMLConfigurationParser.isNull(value) {
        throw fail(name.string, "expected a value, got null", line)
      }
      switch (name.string, setting) {
      case ("name", .scalar(let value)):
        add("bluetooth.names", "\(address)=\(value.string)", line)
      case ("connect", .scalar(let value)):
        guard let on = boolean(value.string) else {
          throw fail("connect", "expected true or false, got \"\(value.string)\"", line)
        }
        add(on ? "bluetooth.connect.addresses" : "bluetooth.connect.exclude", address, line)
      case ("notify", .scalar(let value)):
        if let on = boolean(value.string) {
          if on { add("bluetooth.gatt.notify", address, line) }
        } else {
          for part in ConfigurationLoader.KeyType.listItems(value.string) {
            add("bluetooth.gatt.notify", "\(address)/\(part)", line)
          }
        }
      case ("notify", .sequence(let list)):
        for node in list {
          guard case .scalar(let part) = node else {
            throw fail("notify", "expected '<svc>/<chr>' items", node.mark?.line ?? line)
          }
          add("bluetooth.gatt.notify", "\(address)/\(part.string)", node.mark?.line ?? line)
        }
      case ("notify_method", .scalar(let value)):
        add("bluetooth.gatt.notify_methods", "\(address)=\(value.string)", line)
      default:
        throw fail(name.string, "expected a single value", line)
      }
    }
  }

  private static func boolean(_ text: String) -> Bool? {
    switch text.lowercased() {
    case "true", "yes", "on": true
    case "false", "no", "off": false
    default: nil
    }
  }

  /// Adds the section's items to the layer's list keys, after the items the file set itself.
  ///
  /// - Throws: ``ConfigurationError`` for an item its key refuses.
  static func apply(_ items: Items, to layer: inout ConfigurationLayer) throws(ConfigurationError) {
    for (path, added) in items.sorted(by: { $0.key < $1.key }) {
      guard let key = ConfigurationKey.byPath[path] else { continue }
      var all: [(text: String, line: Int?)] = []
      if let existing = layer.settings[path], case .stringArray(let values) = existing.content {
        all = values.map { (text: $0, line: existing.line) }
      }
      all += added
      try layer.set(key, items: all, line: added.first?.line, spelling: "devices")
    }
  }
}
