extension GATTBridge {
  /// Reports the outcome of a ``GATTOutput/execute(_:)``.
  ///
  /// - Parameters:
  ///   - id: The operation's ``GATTOperation/id``.
  ///   - outcome: The value read (empty for writes and notify changes), or the error.
  ///   - now: The time.
  /// - Returns: What to do: the value and result publications, the characteristic's next
  ///   operation, a pending disconnect.
  public mutating func operationFinished(
    _ id: UInt64, result outcome: Result<[UInt8], CentralError>, now: Double
  ) -> [GATTOutput] {
    guard let pending = running.removeValue(forKey: id) else { return [] }
    let characteristic = pending.operation.characteristic
    active.remove(characteristic)
    counters.operations += 1
    var outputs: [GATTOutput] = []
    var outcome = outcome
    // bluetoothd re-enables a client's notification sessions by itself when a link comes back
    // and answers a StartNotify made meanwhile with InProgress: notifications are on anyway.
    if case .notify(true) = pending.operation.kind, case .failure(let error) = outcome,
      error.code == .inProgress
    {
      outcome = .success([])
    }
    switch outcome {
    case .success(let value):
      if case .notify(let on) = pending.operation.kind, var link = links[characteristic.address] {
        if on {
          link.notifying.insert(characteristic)
        } else {
          link.notifying.remove(characteristic)
        }
        links[characteristic.address] = link
      }
      if case .read = pending.operation.kind {
        outputs += publishValue(pending.path, characteristic, value, now: now, report: pending)
      } else if pending.report {
        var object = okResult(pending)
        if case .notify(let on) = pending.operation.kind { object["notifying"] = .bool(on) }
        outputs += resultOutputs(pending.path, object, reply: pending.reply)
      }
    case .failure(let error):
      if pending.report {
        var failure = Failure(error.code.rawValue, error.message)
        if error.code == .notFound { failure.code = "unknown_characteristic" }
        failure.detail = error.detail
        outputs += result(
          pending.path, op: pending.operation.kind.name, transaction: pending.transaction,
          reply: pending.reply, failure)
      } else {
        counters.errors += 1
      }
    }
    outputs += startNext(characteristic)
    outputs += disconnectWhenQuiet(characteristic.address)
    return outputs
  }

  func okResult(_ pending: Pending) -> JSONObject {
    var object: JSONObject = [
      "op": .string(pending.operation.kind.name), "status": "ok",
      "gw": .string(topics.gateway.rawValue),
    ]
    if let transaction = pending.transaction { object["transaction"] = transaction }
    return object
  }

  mutating func makeOperation(_ characteristic: GATTCharacteristicID, _ kind: GATTOperation.Kind)
    -> GATTOperation
  {
    defer { nextOperation += 1 }
    var operation = GATTOperation(
      id: nextOperation, characteristic: characteristic, kind: kind,
      timeout: configuration.operationTimeout)
    if case .notify(true) = kind {
      let device = links[characteristic.address]?.id ?? DeviceID(address: characteristic.address)
      operation.notifyMethod = configuration.notifyMethods.value(
        for: path(characteristic, device), address: characteristic.address,
        default: configuration.notifyMethod)
    }
    return operation
  }

  /// Queues an operation behind the others on its characteristic; starts it when it is the
  /// only one.
  mutating func enqueue(_ pending: Pending) -> [GATTOutput] {
    let characteristic = pending.operation.characteristic
    let waiting = queues[characteristic]?.count ?? 0
    guard waiting < configuration.queueLimit else {
      guard pending.report else { return [] }
      return result(
        pending.path, op: pending.operation.kind.name, transaction: pending.transaction,
        reply: pending.reply,
        Failure("busy", "\(waiting) operations are already waiting on this characteristic"))
    }
    queues[characteristic, default: []].append(pending)
    return startNext(characteristic)
  }

  /// Hands out the next operation of a characteristic when none is running.
  mutating func startNext(_ characteristic: GATTCharacteristicID) -> [GATTOutput] {
    guard !active.contains(characteristic), var queue = queues[characteristic], !queue.isEmpty
    else { return [] }
    let next = queue.removeFirst()
    queues[characteristic] = queue.isEmpty ? nil : queue
    active.insert(characteristic)
    running[next.operation.id] = next
    return [.execute(next.operation)]
  }

  /// Fails every waiting (not running) operation of a device.
  mutating func failQueued(address: BluetoothAddress, code: CentralError.Code, message: String)
    -> [GATTOutput]
  {
    var outputs: [GATTOutput] = []
    for characteristic in queues.keys.filter({ $0.address == address }).sorted(by: {
      $0.description < $1.description
    }) {
      for pending in queues.removeValue(forKey: characteristic) ?? [] where pending.report {
        outputs += result(
          pending.path, op: pending.operation.kind.name, transaction: pending.transaction,
          reply: pending.reply, Failure(code.rawValue, message))
      }
    }
    return outputs
  }

  /// The services are known: publish the tree, become ready, re-arm notifications.
  mutating func resolved(_ address: BluetoothAddress, _ tree: GATTTree, now: Double)
    -> [GATTOutput]
  {
    guard var link = links[address], link.state.isConnected || link.state == .connecting else {
      return []
    }
    // The same tree again on a ready link (BlueZ re-reports it as objects appear): nothing new.
    if link.state == .ready, link.tree == tree { return [] }
    var outputs: [GATTOutput] = []
    if !link.state.isConnected {
      outputs += linkUp(address, now: now)
      link = links[address] ?? link
    }
    link.tree = tree
    link.state = .ready
    link.since = now
    link.attempts = 0
    links[address] = link
    outputs.append(.publish(topics.gatt(link.id), tree.json, retain: true))
    outputs.append(connectionOutput(link))
    var data = eventData(link)
    data["services"] = .integer(Int64(tree.services.count))
    outputs.append(event("gatt_resolved", data))
    if link.closing || !link.wants { return outputs + teardown(address, now: now) }
    // Re-arm: every characteristic whose notifications should be on.
    var done: Set<GATTCharacteristicID> = []
    for service in tree.services {
      for characteristic in service.characteristics where characteristic.canNotify {
        let id = GATTCharacteristicID(
          address: address, service: service.uuid, characteristic: characteristic.uuid)
        // Not twice: not when on already, nor while an operation on it runs or waits.
        guard !done.contains(id), !link.notifying.contains(id), !active.contains(id),
          queues[id]?.isEmpty ?? true
        else { continue }
        done.insert(id)
        let path = path(id, link.id)
        let isTransfer = isTransferCharacteristic(id)
        let wanted =
          notifyWanted[path]
          ?? (isTransfer
            || configuration.notify.contains {
              $0.matches(
                device: link.id, address: address, service: id.service,
                characteristic: id.characteristic)
            })
        guard wanted else { continue }
        if isTransfer {
          links[address]?.reassembler = TransferReassembler(
            maxBytes: configuration.transferMaxBytes)
        }
        outputs += enqueue(
          Pending(
            operation: makeOperation(id, .notify(true)), path: path, transaction: nil, reply: nil,
            report: true))
      }
    }
    return outputs
  }

  func isTransferCharacteristic(_ id: GATTCharacteristicID) -> Bool {
    id.service == configuration.transferService
      && id.characteristic == configuration.transferCharacteristic
  }

  /// A notification: the value topic, or the transfer reassembler.
  mutating func notified(_ id: GATTCharacteristicID, _ value: [UInt8], now: Double)
    -> [GATTOutput]
  {
    // Per value: the link's fields are read in place (a modify access), not copied with the
    // whole link as a read of `links[address]` would.
    guard let index = links.index(forKey: id.address) else { return [] }
    let (connected, device) = Self.routing(&links.values[index])
    guard connected else { return [] }
    counters.notifications += 1
    if isTransferCharacteristic(id), links.values[index].reassembler != nil {
      // In place: a copy taken out shares the text so far with the stored reassembler, and
      // appending to it would copy the whole text once per chunk.
      switch links.values[index].reassembler?.append(value) {
      case nil:
        return []
      case .complete(let text)?:
        counters.transfers += 1
        return [.publish(topic: topics.transfer(device), payload: text, retain: false)]
      case .tooLong(let bytes)?:
        counters.transfersAborted += 1
        var data = eventData(links.values[index])
        data["bytes"] = .integer(Int64(bytes))
        data["max_bytes"] = .integer(Int64(configuration.transferMaxBytes))
        return [event("transfer_too_long", data)]
      }
    }
    return publishValue(path(id, device), id, value, now: now, report: nil)
  }

  /// Whether a link takes values, and its device's id (`inout` so that the caller's access is
  /// in place).
  private static func routing(_ link: inout Link) -> (connected: Bool, device: DeviceID) {
    (link.state.isConnected, link.id)
  }

  /// The value publication of a read or notification, then the read's result.
  mutating func publishValue(
    _ path: CharacteristicPath, _ id: GATTCharacteristicID, _ value: [UInt8], now: Double,
    report pending: Pending?
  ) -> [GATTOutput] {
    let format = format(for: path)
    let payload: [UInt8]
    do {
      payload = try format.encode(
        value, characteristic: id.characteristic,
        timestamp: Timestamps.milliseconds(now + wallClockOffset),
        gateway: topics.gateway)
    } catch {
      return result(
        path, op: pending?.operation.kind.name ?? "notify", transaction: pending?.transaction,
        reply: pending?.reply, Failure("not_encodable", "\(error) (value \(value.count) bytes)"))
    }
    var outputs: [GATTOutput] = [
      .publish(topic: topics.value(path), payload: payload, retain: configuration.retainValues)
    ]
    if let pending, pending.report {
      outputs += resultOutputs(path, okResult(pending), reply: pending.reply)
    }
    return outputs
  }
}
