import BridgeCore
import Foundation
import Mosquitto
import TestSupport
import Testing

/// `healthy` computed from what the gateway sees, through the real binary, the simulated radio
/// and a real mosquitto.
@Suite(
  "Health: healthy computed, with the reasons when it is not", .serialized,
  .enabled(if: Broker.isAvailable, "mosquitto is not installed (apt-get install mosquitto)"))
struct HealthTests {
  /// The `data` of the answer to one `health_check`.
  func check(_ run: SimulatedRun) async throws -> JSONValue? {
    let transaction = UUID().uuidString
    try await run.publish(
      "\(run.base)/request/health_check", #"{"transaction":"\#(transaction)"}"#)
    let answer: @Sendable () -> JSONValue? = {
      run.json("\(run.base)/response/health_check").first {
        $0["transaction"]?.stringValue == transaction
      }
    }
    _ = await eventually(timeout: 10) { answer() != nil }
    return answer()?["data"]
  }

  @Test("an adapter powered off: unhealthy, the adapter named, on health_check and on health")
  func adapterOff() async throws {
    let run = try await SimulatedRun(
      world: """
        adapters:
          - id: hci0
            powered: false
        devices:
          - kind: beacon
        """, ["--gateway.health_interval", "0.5"])
    #expect(await eventually { run.gateway.log.contains("subscribed to bridge requests") })
    #expect(
      await eventually(timeout: 10) {
        run.json("\(run.base)/adapters").contains {
          $0.arrayValue?.first?["state"]?.stringValue == "poweredOff"
        }
      })
    let data = try #require(try await check(run))
    #expect(data["healthy"]?.boolValue == false)
    #expect(data["reasons"] == ["adapter hci0 is powered off"], "\(data)")
    #expect(
      await eventually(timeout: 5) {
        run.json("\(run.base)/health").contains { $0["healthy"]?.boolValue == false }
      })
    await run.finish()
  }

  @Test("a powered adapter that scans: healthy, no reasons; info names no BlueZ version")
  func allWell() async throws {
    let run = try await SimulatedRun(
      world: """
        devices:
          - kind: beacon
        """)
    #expect(await eventually { run.gateway.log.contains("subscribed to bridge requests") })
    #expect(
      await eventually(timeout: 10) {
        run.json("\(run.base)/adapters").contains {
          $0.arrayValue?.first?["discovering"]?.boolValue == true
        }
      })
    let data = try #require(try await check(run))
    #expect(data["healthy"]?.boolValue == true, "\(data)")
    #expect(data["reasons"] == .array([]))
    #expect(run.json("\(run.base)/info").last?["bluez"] == .null)
    await run.finish()
  }
}
