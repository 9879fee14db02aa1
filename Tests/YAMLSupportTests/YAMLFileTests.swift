import Foundation
import Testing

@testable import YAMLSupport

@Suite("Reading a YAML file")
struct YAMLFileTests {
  /// A new file holding `bytes`, removed when the test ends.
  func file(_ bytes: [UInt8]) throws -> URL {
    let url = FileManager.default.temporaryDirectory
      .appendingPathComponent("yamlfile-\(UUID().uuidString).yaml")
    try Data(bytes).write(to: url)
    return url
  }

  @Test("a file of UTF-8 text is read")
  func reads() throws {
    let url = try file(Array("a: é\n".utf8))
    defer { try? FileManager.default.removeItem(at: url) }
    #expect(try YAMLFile.read(atPath: url.path) == "a: é\n")
  }

  @Test("a file larger than the bound is refused; one at the bound is read")
  func tooLarge() throws {
    let url = try file(Array(repeating: UInt8(ascii: "#"), count: 1025))
    defer { try? FileManager.default.removeItem(at: url) }
    #expect(throws: YAMLFile.ReadError.tooLarge(maxBytes: 1024)) {
      try YAMLFile.read(atPath: url.path, maxBytes: 1024)
    }
    #expect(try YAMLFile.read(atPath: url.path, maxBytes: 1025).count == 1025)
  }

  @Test("a device that never ends is refused at the bound, not read until memory runs out")
  func endless() {
    #expect(throws: YAMLFile.ReadError.tooLarge(maxBytes: YAMLFile.defaultMaxBytes)) {
      try YAMLFile.read(atPath: "/dev/zero")
    }
  }

  @Test("a missing file, a directory and bytes that are not UTF-8 are refused, each by name")
  func refusals() throws {
    #expect(throws: YAMLFile.ReadError.notFound) {
      try YAMLFile.read(atPath: "/nonexistent/gatt2mqtt.yaml")
    }
    #expect(throws: YAMLFile.ReadError.isDirectory) {
      try YAMLFile.read(atPath: FileManager.default.temporaryDirectory.path)
    }
    let url = try file([0x61, 0x3A, 0x20, 0xFF, 0xFE, 0x0A])
    defer { try? FileManager.default.removeItem(at: url) }
    #expect(throws: YAMLFile.ReadError.notUTF8) { try YAMLFile.read(atPath: url.path) }
    #expect(YAMLFile.ReadError.tooLarge(maxBytes: 256 << 10).description.contains("256 KiB"))
  }
}
