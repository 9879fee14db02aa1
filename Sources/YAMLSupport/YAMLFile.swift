import Foundation

/// The text of a YAML file, read with a bound on its size.
///
/// The configuration and the simulated world are files an administrator names: one that is
/// not a file at all (`/dev/zero`, a log that grew) would otherwise be read until memory ran
/// out. The bound also caps what ``BoundedYAML`` composes and what it keeps of a document the
/// parser refused part-way.
package enum YAMLFile {
  /// The largest file read: 256 KiB, 16 times the shipped example configuration (which sets
  /// every key). It also sizes the stack ``BoundedYAML`` composes on.
  package static let defaultMaxBytes = 256 << 10

  /// Why a file could not be read.
  package enum ReadError: Error, Sendable, Hashable, CustomStringConvertible {
    /// No file at the path.
    case notFound
    /// The path names a directory.
    case isDirectory
    /// The file could not be opened or read; the system's reason.
    case unreadable(String)
    /// The file holds more than the bound (in bytes).
    case tooLarge(maxBytes: Int)
    /// The file is not UTF-8 text.
    case notUTF8

    /// What an administrator reads, after the file's name.
    package var description: String {
      switch self {
      case .notFound: "not found"
      case .isDirectory: "is a directory, not a file"
      case .unreadable(let reason): "cannot be read (\(reason))"
      case .tooLarge(let maxBytes):
        "is larger than \(maxBytes / 1024) KiB: is it the right file?"
      case .notUTF8: "is not UTF-8 text"
      }
    }
  }

  /// Reads the file at `path` as UTF-8 text, refusing one larger than `maxBytes`.
  ///
  /// - Parameters:
  ///   - path: The file.
  ///   - maxBytes: The most it may hold; no more than one byte past it is read.
  /// - Returns: The text.
  /// - Throws: ``ReadError``.
  package static func read(atPath path: String, maxBytes: Int = defaultMaxBytes) throws(ReadError)
    -> String
  {
    var isDirectory: ObjCBool = false
    guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
      throw .notFound
    }
    guard !isDirectory.boolValue else { throw .isDirectory }
    guard let handle = FileHandle(forReadingAtPath: path) else {
      throw .unreadable("check its permissions")
    }
    defer { try? handle.close() }
    let data: Data
    do {
      data = try handle.read(upToCount: maxBytes + 1) ?? Data()
    } catch {
      throw .unreadable(error.localizedDescription)
    }
    guard data.count <= maxBytes else { throw .tooLarge(maxBytes: maxBytes) }
    guard let text = String(bytes: data, encoding: .utf8) else { throw .notUTF8 }
    return text
  }
}
