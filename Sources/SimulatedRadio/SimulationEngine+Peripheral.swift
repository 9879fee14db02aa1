import BridgeCore

/// The peripheral port's calls and the simulated centrals' behaviour.
extension SimulationEngine {
  /// Publishes the gateway's service: advertised at once when an adapter is powered (the
  /// centrals then subscribe after their delay), else reported unavailable until one is.
  mutating func startPeripheral(_ service: PeripheralService) throws(CentralError) -> [Effect] {
    if let adapter = service.adapter {
      _ = try adapterIndex(adapter)
    }
    var effects: [Effect] = []
    if advertising { effects += withdrawService(reason: "") }
    self.service = service
    guard powered else {
      return effects + [.peripheral(.stateChanged(.unavailable(reason: "no powered adapter")))]
    }
    return effects.filter { !isState($0) } + restoreService()
  }

  /// Withdraws the service: every central unsubscribes; the role is `stopped`.
  mutating func stopPeripheral() -> [Effect] {
    let effects = withdrawService(reason: "").filter { !isState($0) }
    service = nil
    return effects + [.peripheral(.stateChanged(.stopped))]
  }

  private func isState(_ effect: Effect) -> Bool {
    if case .peripheral(.stateChanged) = effect { return true }
    return false
  }

  /// The service stops being advertised (adapter off): centrals drop their subscriptions.
  mutating func withdrawService(reason: String) -> [Effect] {
    guard service != nil, advertising else { return [] }
    advertising = false
    peripheralGeneration += 1
    var effects: [Effect] = []
    for index in centrals.indices where centrals[index].subscribed {
      centrals[index].subscribed = false
      centrals[index].reset()
      effects.append(.peripheral(.unsubscribed(central: centrals[index].address)))
    }
    return effects + [.peripheral(.stateChanged(.unavailable(reason: reason)))]
  }

  /// The service is advertised (again); centrals subscribe after their delay.
  mutating func restoreService() -> [Effect] {
    guard service != nil, !advertising, powered else { return [] }
    advertising = true
    peripheralGeneration += 1
    for index in centrals.indices {
      schedule(
        .subscribe(central: index, generation: peripheralGeneration),
        at: now + centrals[index].group.subscribeAfter)
    }
    return [.peripheral(.stateChanged(.advertising))]
  }

  mutating func centralSubscribes(_ index: Int, generation: Int, at time: Double) -> [Effect] {
    guard advertising, generation == peripheralGeneration, let service,
      !centrals[index].subscribed
    else { return [] }
    let central = centrals[index]
    if !service.allowedCentrals.isEmpty, !service.allowedCentrals.contains(central.address) {
      return [.peripheral(.refused(central: central.address))]
    }
    centrals[index].subscribed = true
    if central.group.stay > 0 {
      schedule(.unsubscribe(central: index, generation: generation), at: time + central.group.stay)
    }
    return [.peripheral(.subscribed(central: central.address, mtu: central.group.mtu))]
  }

  mutating func centralUnsubscribes(_ index: Int, generation: Int, at time: Double) -> [Effect] {
    guard generation == peripheralGeneration, centrals[index].subscribed else { return [] }
    centrals[index].subscribed = false
    centrals[index].reset()
    schedule(
      .subscribe(central: index, generation: generation), at: time + centrals[index].group.pause)
    return [.peripheral(.unsubscribed(central: centrals[index].address))]
  }

  /// Sets what reads of the transfer characteristic return.
  mutating func setReadValue(_ value: [UInt8]) {
    readValue = value
  }

  /// Delivers one notification to every subscribed central; a central that completes a text
  /// and echoes writes a line back (when the gateway offers a writable characteristic).
  mutating func notifyCentrals(_ value: [UInt8]) throws(CentralError) -> [Effect] {
    guard advertising else {
      throw CentralError(.unavailable, message: "the service is not published")
    }
    var effects: [Effect] = []
    for index in centrals.indices where centrals[index].subscribed {
      let (line, oversized) = centrals[index].receive(value)
      if oversized { counters.oversizedChunks += 1 }
      guard let line else { continue }
      counters.textsReceivedByCentrals += 1
      if centrals[index].group.echo, service?.writeCharacteristic != nil {
        effects.append(
          .peripheral(.written(central: centrals[index].address, value: Array(line.utf8))))
      }
    }
    return effects
  }
}
