import BridgeCore
import Mosquitto

extension GatewayService {
  /// How long `READY=1` waits for the first connection to the broker; past it the gateway is
  /// ready and says it is retrying, so that a broker outage does not fail the boot.
  static let readyWait: Duration = .seconds(5)

  /// Tells the service manager how the gateway is (``SystemdNotifier``): `READY=1` once the
  /// broker answered or the first attempts failed, a `STATUS=` line whenever it changes, and
  /// `WATCHDOG=1` at half the watchdog interval while every loop answers: the MQTT loop thread,
  /// the radio's threads (the D-Bus bus thread) and the bridges' locks. A loop that hangs stops
  /// the `WATCHDOG=1`s, and systemd restarts the gateway. Does nothing when not supervised.
  func superviseForSystemd() async {
    guard notifier.isEnabled else { return }
    let deadline = ContinuousClock.now + Self.readyWait
    while !client.statistics.connected, ContinuousClock.now < deadline, !Task.isCancelled {
      try? await Task.sleep(for: .milliseconds(50))
    }
    guard !Task.isCancelled else { return }
    var shown = statusLine()
    notifier.send("READY=1\n" + SystemdNotifier.status(shown))
    let period = min(notifier.watchdogInterval.map { $0 / 2 } ?? .seconds(5), .seconds(5))
    while !Task.isCancelled {
      try? await Task.sleep(for: period)
      guard !Task.isCancelled else { return }
      var lines: [String] = []
      let status = statusLine()
      if status != shown {
        lines.append(SystemdNotifier.status(status))
        shown = status
      }
      if notifier.watchdogInterval != nil {
        if await loopsAnswer(within: period) {
          lines.append("WATCHDOG=1")
        } else {
          logger.critical("a loop did not answer in time: no watchdog notification")
        }
      }
      if !lines.isEmpty { notifier.send(lines.joined(separator: "\n")) }
    }
  }

  /// One line for `systemctl status`: broker, adapters, devices, connections, peripheral.
  func statusLine() -> String {
    let report = health()
    var parts = [
      client.statistics.connected ? "broker connected" : "broker unreachable, retrying"
    ]
    if case .object(let discovery)? = report.sections["discovery"] {
      if case .integer(let devices)? = discovery["devices"] { parts.append("\(devices) devices") }
    }
    if case .object(let connections)? = report.sections["connections"] {
      if case .integer(let count)? = connections["connections"] {
        parts.append("\(count) connected")
      }
    }
    if let peripheralRole { parts.append("peripheral \(peripheralRole.stateName)") }
    return parts.joined(separator: ", ")
  }

  /// Whether the MQTT loop thread, the radio's threads and the bridges answer within `limit`.
  private func loopsAnswer(within limit: Duration) async -> Bool {
    let client = self.client
    let checks =
      [
        { @Sendable () async -> Bool in
          do {
            try await client.ping()
            return true
          } catch {
            return false
          }
        }
      ] + liveness
    for check in checks {
      let answered = await withTaskGroup(of: Bool.self) { race in
        race.addTask { await check() }
        race.addTask {
          try? await Task.sleep(for: limit)
          return false
        }
        let first = await race.next() ?? false
        race.cancelAll()
        return first
      }
      guard answered else { return false }
    }
    // The bridges: each read takes the bridge's lock, which a stuck step would hold.
    _ = statusLine()
    return true
  }
}
