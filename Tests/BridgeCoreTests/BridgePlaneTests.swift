import BridgeCore
import Testing

@Suite("Bridge plane payloads and requests")
struct BridgePlaneTests {
  let router = BridgeRequestRouter()
  let health = { HealthReport(uptime: 12.34, residentMemoryBytes: 4096, published: 7, dropped: 2) }

  let instance = GatewayInstance(id: "0123456789abcdef", started: 1_700_000_000.25)

  @Test("state payloads: TOPICS.md's state with this run's instance id (and start when online)")
  func statePayloads() {
    #expect(
      String(decoding: instance.statePayload(online: true), as: UTF8.self)
        == #"{"state":"online","instance":"0123456789abcdef","started":1700000000250}"#)
    #expect(
      String(decoding: instance.statePayload(online: false), as: UTF8.self)
        == #"{"state":"offline","instance":"0123456789abcdef"}"#
    )
  }

  @Test("an event carries its type and data")
  func eventPayload() {
    let bytes = BridgePayload.event(type: "adapter_recovered", data: ["adapter": "hci0"])
    #expect(
      String(decoding: bytes, as: UTF8.self)
        == #"{"type":"adapter_recovered","data":{"adapter":"hci0"}}"#)
  }

  @Test("health JSON holds the MQTT counters, uptime and memory")
  func healthJSON() {
    let json = health().json
    #expect(json["mqtt"]?["published"]?.integerValue == 7)
    #expect(json["mqtt"]?["dropped"]?.integerValue == 2)
    #expect(json["mqtt"]?["reconnects"]?.integerValue == 0)
    #expect(json["uptime"]?.doubleValue == 12.3)
    #expect(json["rss_bytes"]?.integerValue == 4096)
  }

  @Test("health_check answers ok with the health figures and echoes the transaction")
  func healthCheck() {
    let response = router.respond(
      verb: "health_check", payload: Array(#"{"transaction":42}"#.utf8), health: health)
    #expect(response.ok)
    #expect(response.transaction == .integer(42))
    let json = response.json
    #expect(json["status"]?.stringValue == "ok")
    #expect(json["data"]?["healthy"]?.boolValue == true)
    #expect(json["data"]?["mqtt"]?["published"]?.integerValue == 7)
    #expect(json["transaction"]?.integerValue == 42)
    #expect(json["data"]?["reasons"] == .array([]))
  }

  @Test("health_check says unhealthy, with the reasons, when the report has any")
  func unhealthy() {
    let response = router.respond(
      verb: "health_check", payload: [],
      health: {
        var report = HealthReport(uptime: 1)
        report.reasons = ["not connected to the MQTT broker", "adapter hci0 is powered off"]
        return report
      })
    #expect(response.ok)
    #expect(response.json["data"]?["healthy"]?.boolValue == false)
    #expect(
      response.json["data"]?["reasons"]
        == ["not connected to the MQTT broker", "adapter hci0 is powered off"])
  }

  @Test("devices answers the devices list; without a central role, not_supported")
  func devicesVerb() {
    let list: JSONValue = [["id": "A4C1381E29DF", "connection": "ready"]]
    let response = router.respond(
      verb: "devices", payload: Array(#"{"transaction":"d"}"#.utf8), health: health,
      devices: { list })
    #expect(response.ok)
    #expect(response.json["data"]?["devices"] == list)
    #expect(response.transaction == .string("d"))
    let none = router.respond(verb: "devices", payload: [], health: health)
    #expect(none.errorCode == "not_supported")
  }

  @Test("an empty payload is a request without transaction")
  func emptyPayload() {
    let response = router.respond(verb: "health_check", payload: Array("  \n".utf8), health: health)
    #expect(response.ok)
    #expect(response.json["transaction"] == nil)
  }

  @Test(
    "malformed payloads get invalid_payload",
    arguments: [[UInt8]("not json".utf8), [0xFF, 0xFE], Array("[1,2]".utf8), Array(#""x""#.utf8)])
  func malformed(payload: [UInt8]) {
    let response = router.respond(verb: "health_check", payload: payload, health: health)
    #expect(!response.ok)
    #expect(response.errorCode == "invalid_payload")
    #expect(response.json["status"]?.stringValue == "error")
    #expect((response.message ?? "").isEmpty == false)
  }

  @Test("an unknown verb gets unknown_request listing the known verbs")
  func unknownVerb() {
    let response = router.respond(
      verb: "reboot", payload: Array(#"{"transaction":"a"}"#.utf8), health: health)
    #expect(response.errorCode == "unknown_request")
    #expect(response.message?.contains("health_check") == true)
    #expect(response.transaction == .string("a"))
  }

  @Test(
    "without a radio (no handler given), Bluetooth verbs answer not_supported",
    arguments: [
      "device/connect", "device/disconnect", "device/remove", "peripheral/start",
      "peripheral/stop",
    ])
  func bluetoothVerbsWithoutRadio(verb: String) {
    let response = router.respond(verb: verb, payload: [], health: health)
    #expect(response.errorCode == "not_supported")
  }

  @Test(
    "with a radio, device/connect and device/disconnect reach the handler, transaction echoed",
    arguments: [("device/connect", true), ("device/disconnect", false)])
  func deviceVerbsReachTheHandler(verb: String, connect: Bool) {
    let response = router.respond(
      verb: verb, payload: Array(#"{"device":"AA:BB:CC:DD:EE:FF","transaction":3}"#.utf8),
      health: health,
      device: { asked, body in
        #expect(asked == connect)
        #expect(body["device"] == "AA:BB:CC:DD:EE:FF")
        return .success(["queued": true], transaction: nil)
      })
    #expect(response.ok)
    #expect(response.data["queued"] == true)
    #expect(response.transaction == .integer(3))
  }

  @Test("device/remove reaches its handler with the request's object, transaction echoed")
  func removeReachesTheHandler() {
    let response = router.respond(
      verb: "device/remove", payload: Array(#"{"device":"AABBCCDDEEFF","transaction":"r"}"#.utf8),
      health: health,
      remove: { body in
        #expect(body["device"] == "AABBCCDDEEFF")
        return .success(["forgotten": true], transaction: nil)
      })
    #expect(response.ok)
    #expect(response.data["forgotten"] == true)
    #expect(response.transaction == "r")
  }

  @Test(
    "with a peripheral role, peripheral/start and stop are routed to it with the transaction",
    arguments: [("peripheral/start", true), ("peripheral/stop", false)])
  func peripheralVerbsAreRouted(verb: String, start: Bool) {
    let route = router.route(
      verb: verb, payload: Array(#"{"transaction":7}"#.utf8), health: health, peripheral: true)
    #expect(route == .peripheral(start: start, transaction: .integer(7)))
    let invalid = router.route(
      verb: verb, payload: Array("[]".utf8), health: health, peripheral: true)
    guard case .answer(let response) = invalid else {
      Issue.record("an invalid payload must be answered at once, got \(invalid)")
      return
    }
    #expect(response.errorCode == "invalid_payload")
  }

  @Test("device/rename reaches its handler; device/rssi is routed to the radio with its object")
  func renameAndRSSI() {
    let renamed = router.respond(
      verb: "device/rename",
      payload: Array(#"{"device":"AABBCCDDEEFF","name":"kitchen","transaction":1}"#.utf8),
      health: health)
    #expect(renamed.errorCode == "not_supported")
    let route = router.route(
      verb: "device/rename",
      payload: Array(#"{"device":"AABBCCDDEEFF","name":"kitchen","transaction":1}"#.utf8),
      health: health,
      rename: { body in
        #expect(body["name"] == "kitchen")
        return .success(["device": "kitchen"], transaction: nil)
      })
    guard case .answer(let response) = route else {
      Issue.record("expected an answer, got \(route)")
      return
    }
    #expect(response.ok)
    #expect(response.data["device"] == "kitchen")
    #expect(response.transaction == .integer(1))
    let rssi = router.route(
      verb: "device/rssi", payload: Array(#"{"device":"AABBCCDDEEFF","transaction":"q"}"#.utf8),
      health: health, linkQuality: true)
    #expect(rssi == .linkQuality(["device": "AABBCCDDEEFF", "transaction": "q"], transaction: "q"))
    #expect(
      router.respond(verb: "device/rssi", payload: [], health: health).errorCode
        == "not_supported")
  }

  @Test(
    "sent to the whole fleet, a verb that is not fleet-wide answers not_supported naming this gateway's request topic; fleet verbs are served"
  )
  func fleetWideVerbs() {
    let route = router.route(
      verb: "device/connect", payload: Array(#"{"device":"AABBCCDDEEFF","transaction":2}"#.utf8),
      health: health, device: { _, _ in .success(transaction: nil) },
      fleetWide: "gatt2mqtt/bridge/gw1/request/")
    guard case .answer(let refused) = route else {
      Issue.record("expected an answer, got \(route)")
      return
    }
    #expect(refused.errorCode == "not_supported")
    #expect(
      refused.message
        == "'device/connect' is not a fleet-wide request: send it to gatt2mqtt/bridge/gw1/request/…; fleet-wide: devices, health_check, scan"
    )
    #expect(refused.transaction == .integer(2))
    let served = router.route(
      verb: "health_check", payload: [], health: health, fleetWide: "gatt2mqtt/bridge/gw1/request/")
    guard case .answer(let health) = served else {
      Issue.record("expected an answer, got \(served)")
      return
    }
    #expect(health.ok)
  }

  @Test("a valid scan request without a scanner answers not_supported, with the transaction")
  func scanWithoutScanner() {
    let response = router.respond(
      verb: "scan", payload: Array(#"{"action":"start","transaction":5}"#.utf8), health: health)
    #expect(response.errorCode == "not_supported")
    #expect(response.transaction == .integer(5))
  }

  @Test(
    "an invalid scan request gets invalid_payload before reaching the scanner",
    arguments: [
      "", #"{"action":"pause"}"#, #"{"action":"start","filter":{"min_rssi":"loud"}}"#,
      #"{"action":"stop","filter":{}}"#,
    ])
  func invalidScan(payload: String) {
    var called = false
    let response = router.respond(verb: "scan", payload: Array(payload.utf8), health: health) { _ in
      called = true
      return .success(transaction: nil)
    }
    #expect(response.errorCode == "invalid_payload")
    #expect(!called)
  }
}

extension BridgeRequestRouter {
  /// The answer to a request routed without a peripheral role or link-quality reading (always
  /// an answer then).
  func respond(
    verb: String, payload: [UInt8], health: () -> HealthReport,
    scan: ((ScanCommand) -> BridgeResponse)? = nil,
    device: ((Bool, JSONObject) -> BridgeResponse)? = nil,
    remove: ((JSONObject) -> BridgeResponse)? = nil, devices: (() -> JSONValue)? = nil
  ) -> BridgeResponse {
    let route = route(
      verb: verb, payload: payload, health: health, scan: scan, device: device, remove: remove,
      devices: devices)
    guard case .answer(let response) = route else {
      Issue.record("expected an answer, got \(route)")
      return .failure(code: "unexpected", message: "\(route)", transaction: nil)
    }
    return response
  }
}
