import Foundation
import GatewaySettings
import TestSupport
import Testing

@testable import Gateway

@Suite("systemd notifications: the sd_notify datagram protocol")
struct SystemdNotifierTests {
  @Test("without NOTIFY_SOCKET nothing is sent and there is no watchdog")
  func unsupervised() {
    let notifier = SystemdNotifier(environment: ["WATCHDOG_USEC": "1000000"])
    #expect(!notifier.isEnabled)
    #expect(notifier.watchdogInterval == nil)
    #expect(!notifier.send("READY=1"))
  }

  @Test("WATCHDOG_USEC gives the interval, unless WATCHDOG_PID names another process")
  func watchdogInterval() {
    let ours = SystemdNotifier(environment: [
      "NOTIFY_SOCKET": "/run/x", "WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "\(getpid())",
    ])
    #expect(ours.watchdogInterval == .seconds(30))
    let theirs = SystemdNotifier(environment: [
      "NOTIFY_SOCKET": "/run/x", "WATCHDOG_USEC": "30000000", "WATCHDOG_PID": "1",
    ])
    #expect(theirs.watchdogInterval == nil)
    let broken = SystemdNotifier(environment: ["NOTIFY_SOCKET": "/run/x", "WATCHDOG_USEC": "x"])
    #expect(broken.watchdogInterval == nil)
  }

  @Test(
    "datagrams reach a socket bound to a path and one in the abstract namespace",
    arguments: [false, true])
  func sends(abstract: Bool) async throws {
    let listener = try NotifyListener(abstract: abstract)
    let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": listener.address])
    #expect(notifier.send("READY=1\nSTATUS=up"))
    #expect(notifier.send("WATCHDOG=1"))
    #expect(await listener.next(within: 2) { $0 == "WATCHDOG=1" } != nil)
    #expect(listener.received == ["READY=1\nSTATUS=up", "WATCHDOG=1"])
  }

  @Test("a socket that does not exist is a failed send, not a crash; status lines stay one line")
  func failuresAndStatus() {
    let notifier = SystemdNotifier(environment: ["NOTIFY_SOCKET": "/nonexistent/notify.sock"])
    #expect(!notifier.send("READY=1"))
    let long = SystemdNotifier(environment: ["NOTIFY_SOCKET": String(repeating: "x", count: 200)])
    #expect(!long.send("READY=1"))
    #expect(SystemdNotifier.status("a\nb\u{1B}c") == "STATUS=a b c")
  }
}

@Suite(
  "systemd watchdog: WATCHDOG=1 only while every loop answers",
  .enabled(if: Broker.isAvailable, "mosquitto is not installed"))
struct SystemdWatchdogTests {
  func service(_ broker: Broker, _ listener: NotifyListener, radioAnswers: Bool) throws
    -> GatewayService
  {
    var configuration = GatewayConfiguration()
    configuration.mqtt.host = "127.0.0.1"
    configuration.mqtt.port = broker.port
    configuration.gateway.id = "watchdog"
    let check = LivenessCheck(name: "the test radio") {
      if radioAnswers { return true }
      try? await Task.sleep(for: .seconds(3600))  // a radio thread that hangs
      return true
    }
    return try GatewayService(
      configuration: configuration, logger: quietLogger("gw"), liveness: [check],
      notifier: SystemdNotifier(environment: [
        // A period of 4 s (half of it): under full-suite load a loop that answers may be a
        // second or more late, and a period of 1 s named the MQTT loop and the bridges too.
        "NOTIFY_SOCKET": listener.address, "WATCHDOG_USEC": "8000000",
      ]))
  }

  @Test(
    "READY=1, then WATCHDOG=1 every period while every loop answers; none, and unhealthy, while one hangs",
    arguments: [true, false])
  func watchdog(radioAnswers: Bool) async throws {
    let broker = try Broker()
    try await broker.start()
    defer { broker.stop() }
    let listener = try NotifyListener()
    let service = try service(broker, listener, radioAnswers: radioAnswers)
    service.client.start()
    defer { Task { await service.client.shutdown(finalMessages: [], timeout: 1) } }
    let supervising = Task { await service.superviseLoops() }
    defer { supervising.cancel() }
    #expect(await listener.next(within: 10) { $0 == "READY=1" } != nil)
    if radioAnswers {
      // Every period (4 s); a loaded test machine may delay the first ones, never stop them.
      #expect(await listener.next(within: 20) { $0 == "WATCHDOG=1" } != nil, "\(listener.received)")
    } else {
      // Two periods and a little: the hang is judged a period after the first question.
      try await Task.sleep(for: .seconds(9))
      listener.drain()
      let beats = listener.received.filter { $0.contains("WATCHDOG=1") }.count
      #expect(beats == 0, "a hung radio thread must stop the watchdog: \(listener.received)")
      // The same notion of stalled makes health unhealthy, with the loop named.
      let report = service.health()
      #expect(!report.healthy)
      #expect(report.reasons == ["the test radio does not answer"], "\(report.reasons)")
      #expect(service.statusLine().contains("unhealthy: the test radio does not answer"))
    }
    if radioAnswers {
      #expect(service.health().healthy, "\(service.health().reasons)")
    }
  }
}
