import BridgeCore
import Mosquitto

extension GatewayService {
  /// How long `READY=1` waits for the first connection to the broker; past it the gateway is
  /// ready and says it is retrying, so that a broker outage does not fail the boot.
  static let readyWait: Duration = .seconds(5)

  /// Watches the loops that must stay alive (``LoopMonitor``) every ``loopPeriod``, whether or
  /// not a service manager supervises the gateway: a stalled loop makes health unhealthy and is
  /// logged. Under systemd (``SystemdNotifier``) it also sends `READY=1` once the broker answered
  /// or the first attempts failed, a `STATUS=` line whenever it changes, and `WATCHDOG=1` after
  /// each round in which every loop had answered the question of the round before (asked a
  /// period earlier): the MQTT loop thread, the radio's threads (the D-Bus bus thread) and the
  /// bridges' locks. A loop that hangs stops the `WATCHDOG=1`s from the round after it was
  /// asked, and systemd restarts the gateway.
  func superviseLoops() async {
    var shown = ""
    if notifier.isEnabled {
      let deadline = ContinuousClock.now + Self.readyWait
      while !client.statistics.connected, ContinuousClock.now < deadline, !Task.isCancelled {
        try? await Task.sleep(for: .milliseconds(50))
      }
      guard !Task.isCancelled else { return }
      shown = statusLine()
      notifier.send("READY=1\n" + SystemdNotifier.status(shown))
    }
    var stalledBefore: [String] = []
    loops.ask()
    while !Task.isCancelled {
      try? await Task.sleep(for: loopPeriod)
      guard !Task.isCancelled else { return }
      // The last round's questions have had a period to be answered (a sleep never ends
      // early): judge them, then ask again.
      let stalled = loops.stalled(limit: loopPeriod)
      loops.ask()
      if stalled != stalledBefore {
        if stalled.isEmpty {
          logger.notice("every loop answers again")
        } else {
          logger.critical(
            "\(stalled.joined(separator: ", ")) did not answer within \(loopPeriod): unhealthy\(notifier.watchdogInterval == nil ? "" : ", no watchdog notification")"
          )
        }
        stalledBefore = stalled
      }
      refreshInfo()
      guard notifier.isEnabled else { continue }
      var lines: [String] = []
      let status = statusLine()
      if status != shown {
        lines.append(SystemdNotifier.status(status))
        shown = status
      }
      if notifier.watchdogInterval != nil, stalled.isEmpty { lines.append("WATCHDOG=1") }
      if !lines.isEmpty { notifier.send(lines.joined(separator: "\n")) }
    }
  }

  /// One line for `systemctl status`: broker, adapters, devices, connections, peripheral, and
  /// what is wrong when health is not healthy.
  func statusLine() -> String {
    let report = health()
    var parts = [
      client.statistics.connected ? "broker connected" : "broker unreachable, retrying"
    ]
    if let centralRole { parts.append(centralRole.adapterSummary) }
    if case .object(let discovery)? = report.sections["discovery"] {
      if case .integer(let devices)? = discovery["devices"] { parts.append("\(devices) devices") }
    }
    if case .object(let connections)? = report.sections["connections"] {
      if case .integer(let count)? = connections["connections"] {
        parts.append("\(count) connected")
      }
    }
    if let peripheralRole { parts.append("peripheral \(peripheralRole.stateName)") }
    let problems = report.reasons.filter { $0 != "not connected to the MQTT broker" }
    if !problems.isEmpty { parts.append("unhealthy: " + problems.joined(separator: "; ")) }
    return parts.joined(separator: ", ")
  }
}
