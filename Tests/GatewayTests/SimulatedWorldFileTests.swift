import Foundation
import Testing

@testable import Gateway

@Suite("bluetooth.simulation: the world file")
struct SimulatedWorldFileTests {
  @Test("no file: the built-in world")
  func builtIn() throws {
    #expect(try GatewayRunner.simulatedWorld(nil) == .builtIn)
  }

  @Test("a file that never ends is refused at 256 KiB, naming the key and the file")
  func endless() {
    let error = #expect(throws: GatewayError.self) {
      try GatewayRunner.simulatedWorld("/dev/zero")
    }
    #expect(
      error?.description
        == "bluetooth.simulation: /dev/zero is larger than 256 KiB: is it the right file?")
  }

  @Test("a missing file and a bad key are errors naming the key, the file and what is wrong")
  func refusals() throws {
    let missing = #expect(throws: GatewayError.self) {
      try GatewayRunner.simulatedWorld("/nonexistent/world.yaml")
    }
    #expect(missing?.description == "bluetooth.simulation: /nonexistent/world.yaml not found")
    let url = FileManager.default.temporaryDirectory
      .appendingPathComponent("world-\(UUID().uuidString).yaml")
    try Data("seed: 1\nsede: 2\n".utf8).write(to: url)
    defer { try? FileManager.default.removeItem(at: url) }
    let badKey = #expect(throws: GatewayError.self) { try GatewayRunner.simulatedWorld(url.path) }
    let text = badKey?.description ?? ""
    #expect(text.hasPrefix("bluetooth.simulation: \(url.path): ") && text.contains("sede"))
  }
}
