import BridgeCore
import DBus
import Logging

extension BlueZCentral {
  /// One look of the scanner watchdog at every adapter this central keeps discovering.
  func watchdogTick() async {
    let settings = configuration.watchdog
    guard settings.enabled, synced else { return }
    for id in sessions.keys.sorted() {
      guard let session = sessions[id], session.started, adapterLocks[id] == nil,
        let adapter = model.adapter(id: id), adapter.powered,
        var state = watchdogs[id]
      else { continue }
      let now = clock.now
      if let seen = lastSighting(id, adapter.path), seen > state.since {
        if state.stage != .watching {
          logger.info("advertisements arrive again", metadata: ["ble.adapter": "\(id)"])
          hub.yield(.scannerWatchdog(.recovered(adapter: id)))
        }
        watchdogs[id] = WatchdogState(since: seen, silentSince: seen)
        continue
      }
      let silence = now - state.silentSince
      let elapsed = now - state.since
      switch state.stage {
      case .watching, .powerCycled:
        guard elapsed >= settings.restartAfter else { continue }
        state.stage = .restarted
      case .restarted:
        guard settings.powerCycleAfter > .zero, elapsed >= settings.powerCycleAfter else {
          continue
        }
        if state.powerCycleAllowed {
          state.stage = .powerCycled
          state.powerCycleAllowed = false
        } else {
          state.stage = .restarted
        }
      }
      state.since = now
      watchdogs[id] = state
      if state.stage == .powerCycled {
        await powerCycle(id, session.filter, silence: silence)
      } else {
        await restartDiscovery(id, session.filter, silence: silence)
      }
    }
  }

  /// Watchdog step 1: `StopDiscovery` then `SetDiscoveryFilter` + `StartDiscovery`.
  private func restartDiscovery(_ id: String, _ filter: DiscoveryFilter, silence: Duration) async {
    guard (try? await lock(id)) != nil else { return }
    defer { unlock(id) }
    logger.warning(
      "no advertisement for \(silence); restarting discovery", metadata: ["ble.adapter": "\(id)"])
    do throws(CentralError) {
      try await stopCall(id)
      sessions[id]?.started = false
      try await applyDiscovery(id, filter, byWatchdog: true)
      watchdogs[id]?.since = clock.now
      hub.yield(.scannerWatchdog(.discoveryRestarted(adapter: id, silence: silence)))
    } catch {
      hub.yield(.scannerWatchdog(.stepFailed(adapter: id, step: .restartDiscovery, error: error)))
    }
  }

  /// Watchdog step 2: power off, power on, start discovery; the adapter is reported
  /// `resetting` meanwhile.
  private func powerCycle(_ id: String, _ filter: DiscoveryFilter, silence: Duration) async {
    guard (try? await lock(id)) != nil else { return }
    defer { unlock(id) }
    logger.warning(
      "no advertisement for \(silence) after restarting discovery; power-cycling the adapter",
      metadata: ["ble.adapter": "\(id)"])
    setResetting(id, true)
    do throws(CentralError) {
      try await poweredCall(id, false)
      sessions[id]?.started = false
      try await poweredCall(id, true)
      try await applyDiscovery(id, filter, byWatchdog: true)
      watchdogs[id]?.since = clock.now
      hub.yield(.scannerWatchdog(.adapterPowerCycled(adapter: id, silence: silence)))
    } catch {
      hub.yield(.scannerWatchdog(.stepFailed(adapter: id, step: .powerCycle, error: error)))
    }
    setResetting(id, false)
  }

  private func setResetting(_ id: String, _ resetting: Bool) {
    if resetting { model.resetting.insert(id) } else { model.resetting.remove(id) }
    if let adapter = model.adapter(id: id) { deliver([.adapterChanged(model.info(adapter))]) }
  }
}
