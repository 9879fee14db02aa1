import Backoff

extension GATTBridge {
  /// Takes in one event from the central.
  ///
  /// - Parameters:
  ///   - event: The event.
  ///   - now: When it happened, in seconds since the Unix epoch.
  /// - Returns: What to do, in order.
  public mutating func handle(_ event: CentralEvent, now: Double) -> [GATTOutput] {
    switch event {
    case .deviceAppeared(let advertisement), .deviceUpdated(let advertisement):
      return sighted(advertisement, now: now)
    case .adapterChanged(let adapter):
      guard adapter.state == .poweredOn else {
        poweredAdapters.remove(adapter.id)
        return []
      }
      // Only an adapter becoming powered (not a property change of one that already is).
      guard poweredAdapters.insert(adapter.id).inserted else { return [] }
      return adapterReady(now: now)
    case .adapterRemoved(let id):
      poweredAdapters.remove(id)
      return []
    case .deviceRemoved, .connectionRSSI, .scannerWatchdog, .stackRefused:
      return []
    case .stackLost:
      stackDown = true
      poweredAdapters = []
      seen = []
      seenBefore = []
      var outputs: [GATTOutput] = []
      for address in links.keys.sorted() {
        if links[address]?.state == .connecting || links[address]?.state.isConnected == true {
          outputs += linkDown(address, now: now)
        }
      }
      return outputs
    case .connectionChanged(let address, let connected):
      if connected { return linkUp(address, now: now) }
      guard let link = links[address], link.state.isConnected || link.state == .connecting
      else { return [] }
      return linkDown(address, now: now)
    case .servicesResolved(let address, let tree):
      return resolved(address, tree, now: now)
    case .notification(let characteristic, let value):
      return notified(characteristic, value, now: now)
    case .notificationBacklog(let characteristic, let waiting):
      counters.notificationBacklogs += 1
      guard let link = links[characteristic.address] else { return [] }
      var data = eventData(link)
      data["service"] = .string(characteristic.service.topicSegment)
      data["characteristic"] = .string(characteristic.characteristic.topicSegment)
      data["waiting"] = .integer(Int64(waiting))
      return [self.event("notification_backlog", data)]
    case .notifyingChanged(let characteristic, let on):
      guard var link = links[characteristic.address] else { return [] }
      let changed = link.notifying.contains(characteristic) != on
      if on { link.notifying.insert(characteristic) } else { link.notifying.remove(characteristic) }
      links[characteristic.address] = link
      // The stack changed it on its own (no operation of ours on it): say so on the result
      // topic, `"cause":"stack"`. Changes while the link is not ready are part of connecting
      // or disconnecting and say nothing.
      guard changed, link.state == .ready, !active.contains(characteristic) else { return [] }
      let object: JSONObject = [
        "op": "notify", "status": "ok", "notifying": .bool(on), "cause": "stack",
        "gw": .string(topics.gateway.rawValue),
      ]
      return resultOutputs(path(characteristic, link.id), object, reply: nil)
    }
  }

  /// An adapter became powered: the stack is back after a restart, or an adapter was powered on. Links
  /// waiting to retry after the stack went away, or after failing for want of a stack or of
  /// power, try again now rather than after the backoff those failures ran up (measured in the
  /// lab: the three links of a bluetoothd restart came back 2.5–5 s after it instead of at once).
  mutating func adapterReady(now: Double) -> [GATTOutput] {
    let stackErrors: Set<CentralError.Code> = [.unavailable, .poweredOff, .unknownAdapter]
    let returned = stackDown
    stackDown = false
    var changed = returned
    for (address, var link) in links
    where link.state == .failed || link.state == .disconnected {
      guard let retryAt = link.retryAt, retryAt > now else { continue }
      guard returned || link.error.map({ stackErrors.contains($0.code) }) == true else { continue }
      link.retryAt = now
      links[address] = link
      changed = true
    }
    return changed ? schedule(now: now) : []
  }

  /// Reports the outcome of a ``GATTOutput/connect(_:timeout:)``.
  ///
  /// - Parameters:
  ///   - address: The device.
  ///   - error: Why it failed, `nil` when the link is up.
  ///   - now: The time.
  /// - Returns: What to do.
  public mutating func connectFinished(
    _ address: BluetoothAddress, error: CentralError?, now: Double
  ) -> [GATTOutput] {
    guard var link = links[address] else {
      // The link was torn down while the attempt ran, then dropped (its device forgotten):
      // the connection this gateway made is no one's to keep; left up, it would hold a
      // controller slot and the device for good.
      return error == nil ? [.disconnect(address)] : []
    }
    guard let error else {
      var outputs = linkUp(address, now: now)
      if links[address]?.wants == false || stopping { outputs += teardown(address, now: now) }
      return outputs + schedule(now: now)
    }
    // A late failure of an attempt that was cancelled or overtaken changes nothing.
    guard link.state == .connecting else { return [] }
    counters.connectFailures += 1
    link.error = error
    link.state = .failed
    link.since = now
    if error.code == .notFound { link.known = false }
    link.retryAt = now + retryDelay(after: error.code, attempt: link.attempts)
    links[address] = link
    var outputs = [connectionOutput(link)]
    var data = eventData(link)
    data["error"] = .string(error.code.rawValue)
    data["message"] = .string(error.message)
    data["attempt"] = .integer(Int64(link.attempts))
    outputs.append(event("connect_failed", data))
    return outputs + schedule(now: now)
  }

  /// The delay before the next attempt after a failure: exponential from
  /// ``Configuration/retryMinDelay`` to ``Configuration/retryMaxDelay`` for timeouts, aborts and
  /// stack errors; 1 s for the first `in_progress` answers (the stack is busy for a moment);
  /// at least 30 s when the controller is out of connection slots (a disconnection elsewhere
  /// shortens it); a device the stack does not know waits for its next advertisement.
  ///
  /// - Parameters:
  ///   - code: The kind of failure.
  ///   - attempt: The attempts so far (1 for the first failure).
  /// - Returns: Seconds.
  public func retryDelay(after code: CentralError.Code, attempt: Int) -> Double {
    let exponential = Backoff(
      minimum: configuration.retryMinDelay, maximum: configuration.retryMaxDelay
    ).nominalDelay(afterFailures: attempt - 1)
    switch code {
    case .inProgress: return attempt <= 3 ? 1 : exponential
    case .outOfSlots: return max(30, exponential)
    case .notFound: return configuration.retryMinDelay
    default: return exponential
    }
  }

  /// Starts the next connection attempt when one may start.
  mutating func schedule(now: Double) -> [GATTOutput] {
    guard !stopping, !stackDown, !links.values.contains(where: { $0.state == .connecting }) else {
      return []
    }
    let used = links.values.filter { $0.state.isConnected }.count
    guard used < configuration.maxConnections else { return [] }
    let candidates = links.values.filter { link in
      link.wants && link.known && !link.closing
        && (link.state == .disconnected || link.state == .failed)
        && (link.retryAt ?? -.infinity) <= now
    }
    guard
      let next = candidates.min(by: {
        ($0.retryAt ?? -.infinity, $0.address) < ($1.retryAt ?? -.infinity, $1.address)
      })
    else { return [] }
    var link = next
    link.state = .connecting
    link.since = now
    link.attempts += 1
    link.retryAt = nil
    links[link.address] = link
    counters.connectAttempts += 1
    return [connectionOutput(link), .connect(link.address, timeout: configuration.connectTimeout)]
  }

  /// A link came up (the connect call returned, or the stack reported `Connected`).
  mutating func linkUp(_ address: BluetoothAddress, now: Double) -> [GATTOutput] {
    guard var link = links[address] else {
      // Connected by someone else: adopt it only when the policy wants it.
      return []
    }
    guard !link.state.isConnected else { return [] }
    link.state = .connected
    link.since = now
    link.error = nil
    link.known = true
    link.closing = false
    links[address] = link
    var outputs = [connectionOutput(link), event("connected", eventData(link))]
    // GATT discovery follows by itself and ends with `servicesResolved`.
    link.state = .discovering
    links[address] = link
    outputs.append(connectionOutput(link))
    return outputs
  }

  /// A link went down or an attempt was cancelled: queued operations fail, the partial
  /// transfer text is dropped, and the device is reconnected when it is still wanted.
  mutating func linkDown(_ address: BluetoothAddress, now: Double) -> [GATTOutput] {
    guard var link = links[address] else { return [] }
    let expected = link.closing || !link.wants || stopping
    let wasConnected = link.state.isConnected
    var outputs: [GATTOutput] = []
    outputs += failQueued(address: address, code: .notConnected, message: "the device disconnected")
    if let discarded = link.reassembler?.reset(), discarded > 0 {
      counters.transfersAborted += 1
      var data = eventData(link)
      data["bytes"] = .integer(Int64(discarded))
      data["reason"] = .string("disconnected")
      outputs.append(event("transfer_aborted", data))
    }
    link.notifying = []
    link.closing = false
    link.state = .disconnected
    link.since = now
    if !expected, wasConnected {
      counters.unexpectedDisconnects += 1
      link.attempts = 0
    }
    link.retryAt = link.wants ? now + configuration.retryMinDelay : nil
    links[address] = link
    outputs.append(connectionOutput(link))
    if wasConnected { outputs.append(event("disconnected", eventData(link))) }
    // A slot is free again: attempts waiting for one may go at once.
    for (other, var waiting) in links where waiting.error?.code == .outOfSlots {
      waiting.retryAt = min(waiting.retryAt ?? now, now)
      links[other] = waiting
    }
    return outputs + schedule(now: now)
  }

  /// Tears a link down in order: notifications off, then disconnect; cancels an attempt.
  mutating func teardown(_ address: BluetoothAddress, now: Double) -> [GATTOutput] {
    guard var link = links[address] else { return [] }
    switch link.state {
    case .connecting:
      link.state = .disconnected
      link.since = now
      links[address] = link
      return [connectionOutput(link), .disconnect(address)]
    case .failed:
      link.state = .disconnected
      link.since = now
      links[address] = link
      return [connectionOutput(link)]
    case .disconnected:
      return []
    case .connected, .discovering, .ready:
      guard !link.closing else { return [] }
      link.closing = true
      links[address] = link
      var outputs = failQueued(
        address: address, code: .notConnected, message: "the device is being disconnected")
      for characteristic in link.notifying.sorted(by: { $0.description < $1.description }) {
        outputs += enqueue(
          Pending(
            operation: makeOperation(characteristic, .notify(false)),
            path: path(characteristic, link.id), transaction: nil, reply: nil, report: false))
      }
      return outputs + disconnectWhenQuiet(address)
    }
  }

  /// Disconnects a closing link once none of its operations is running or waiting.
  mutating func disconnectWhenQuiet(_ address: BluetoothAddress) -> [GATTOutput] {
    guard links[address]?.closing == true,
      !active.contains(where: { $0.address == address }),
      !queues.contains(where: { $0.key.address == address && !$0.value.isEmpty })
    else { return [] }
    return [.disconnect(address)]
  }

  /// An advertisement: remember the device and connect it when the policy selects it.
  mutating func sighted(_ advertisement: Advertisement, now: Double) -> [GATTOutput] {
    guard advertisement.rssi != nil else { return [] }
    let address = advertisement.address
    if !seen.contains(address) {
      if seen.count >= Self.seenGeneration {
        seenBefore = seen
        seen = []
      }
      seen.insert(address)
    }
    if var link = links[address] {
      guard !link.known else { return [] }
      link.known = true
      link.retryAt = min(link.retryAt ?? now, now)
      links[address] = link
      return schedule(now: now)
    }
    guard !stopping, configuration.policy.selects(advertisement) else { return [] }
    var link = makeLink(address, now: now)
    link.selected = true
    links[address] = link
    linkByID[link.id] = address
    return schedule(now: now)
  }

  /// Whether the gateway has seen or tracks the device.
  func knows(_ address: BluetoothAddress) -> Bool {
    links[address] != nil || seen.contains(address) || seenBefore.contains(address)
  }

  /// The retained connection-state publication of a link.
  func connectionOutput(_ link: Link) -> GATTOutput {
    .publish(
      topics.connection(link.id),
      link.json(gateway: topics.gateway, wallClockOffset: wallClockOffset), retain: true)
  }

  /// A bridge event.
  func event(_ type: String, _ data: JSONObject) -> GATTOutput {
    .publish(
      topic: topics.bridgeEvent, payload: BridgePayload.event(type: type, data: data),
      retain: false)
  }

  func eventData(_ link: Link) -> JSONObject {
    ["device": .string(link.id.rawValue), "address": .string(link.address.description)]
  }
}
