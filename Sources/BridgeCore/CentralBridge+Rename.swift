extension CentralBridge {
  /// Gives a device the name the broker holds for it (`<base>/bridge/names/<ADDRESS>`, set by a
  /// `device/rename` on any gateway), or back its configured name or address id when cleared.
  /// Everything the gateway publishes for the device moves to the new `<dev>`; the old id's
  /// retained topics are cleared (by the owner, with fleet ownership), which also ends their
  /// re-publication after reconnects — and nothing else's: a prefix such as `<base>/kitchen/`
  /// would take `kitchen/fridge`'s state too, or the device's own new `kitchen/t`.
  ///
  /// - Parameters:
  ///   - address: The device.
  ///   - name: The name; `nil` for none.
  ///   - now: The time.
  /// - Returns: What to do.
  public mutating func rename(_ address: BluetoothAddress, to name: DeviceID?, now: Double)
    -> [Output]
  {
    let configured = discovery.configuredNames[address]
    let id = name ?? configured ?? DeviceID(address: address)
    let old = discovery.registry[address]?.id ?? gatt?.name(of: address)
    // Names of devices this gateway does not know are kept for when they appear, but no more
    // of them than the registry holds devices: retained names are anyone's to publish.
    let known = discovery.registry[address] != nil || gatt?.state(of: address) != nil
    if name != nil, !known, discovery.registry.naming.friendlyNames[address] == nil,
      discovery.registry.naming.friendlyNames.count >= discovery.registry.capacity
    {
      var data = eventData(address)
      data["name"] = .string(id.rawValue)
      data["message"] = .string(
        "\(discovery.registry.capacity) names of devices not seen are kept already")
      return [.discovery(event("device_rename_refused", data))]
    }
    var outputs: [Output] = []
    do throws(DeviceRegistry.RenameConflict) {
      outputs += try discovery.rename(address, to: id).map(Output.discovery)
    } catch {
      var data = eventData(address)
      data["name"] = .string(id.rawValue)
      data["holder"] = .string(error.holder.description)
      data["message"] = .string("'\(id)' already names \(error.holder)")
      return [.discovery(event("device_rename_refused", data))]
    }
    outputs += connections(now: now) { $0.rename(address, to: id) }
    // Without a link, a restored device's `connection` and `gatt` are the earlier run's: the
    // connection half has nothing to move or clear.
    if let old, old != id, discovery.registry[address]?.restored == true,
      gatt?.links[address] == nil
    {
      outputs += [discovery.topics.connection(old), discovery.topics.gatt(old)].map {
        .discovery(.publish(topic: $0, payload: [], retain: true))
      }
    }
    // Home Assistant's GATT entities of a ready device, under the new id (the discovery half
    // made its configs afresh).
    if let gatt, gatt.state(of: address) == .ready, let tree = gatt.links[address]?.tree {
      outputs += discovery.gattResolved(address, tree: tree) { gatt.format(for: $0) }
        .map(Output.discovery)
    }
    if ownership != nil {
      addressesByName = addressesByName.filter { $0.value != address }
      if id != DeviceID(address: address) { addressesByName[id.rawValue] = address }
    }
    guard let old, old != id else { return ownedOnly(outputs) }
    var data = eventData(address)
    data["device"] = .string(id.rawValue)
    data["from"] = .string(old.rawValue)
    outputs.append(.discovery(event("device_renamed", data)))
    return ownedOnly(outputs)
  }

  /// Reads a retained name message: empty clears the name; anything that is not a valid
  /// friendly name is refused.
  ///
  /// - Parameter payload: The payload of `<base>/bridge/names/<ADDRESS>`.
  /// - Returns: The name (`nil` for none), or why it is not one.
  public static func name(from payload: [UInt8]) -> Result<DeviceID?, DeviceNameRule.Error> {
    guard !payload.isEmpty else { return .success(nil) }
    guard let text = String(validating: payload, as: UTF8.self) else {
      let offset = UTF8Rules.firstInvalidOffset(payload) ?? 0
      return .failure(.invalidName(Hex.encode(payload), .invalidUTF8(offset: offset)))
    }
    do {
      return .success(try DeviceNameRule(parsing: "00:00:00:00:00:00=\(text)").name)
    } catch {
      return .failure(error)
    }
  }

  /// Serves `device/rename` (`{"device":"<dev>"|"AA:BB:…","name":"kitchen/thermometer"|null}`):
  /// checks the name and publishes it, retained, to `<base>/bridge/names/<ADDRESS>`; every
  /// gateway (this one included) renames the device when the broker hands it back.
  ///
  /// - Parameter body: The request's JSON object.
  /// - Returns: The publication and the response (its transaction is the caller's to set).
  public func renameRequest(_ body: JSONObject) -> ([Output], BridgeResponse) {
    let address: BluetoothAddress
    do throws(BridgeResponse) {
      address = try DeviceRequestBody.address(in: body, keys: ["name"]) { self.address(named: $0) }
    } catch {
      return ([], error)
    }
    var name: DeviceID?
    switch body["name"] {
    case .null: name = nil
    case .string(let text):
      switch Self.name(from: Array(text.utf8)) {
      case .success(let parsed): name = parsed
      case .failure(let error):
        return ([], .failure(code: "invalid_payload", message: error.description, transaction: nil))
      }
    default:
      return (
        [],
        .failure(
          code: "invalid_payload",
          message: "\"name\" (a device name such as kitchen/thermometer, or null) is required",
          transaction: nil)
      )
    }
    if let name, let holder = holder(of: name), holder != address {
      return (
        [],
        .failure(code: "name_taken", message: "'\(name)' already names \(holder)", transaction: nil)
      )
    }
    let payload = name.map { Array($0.rawValue.utf8) } ?? []
    let data: JSONObject = [
      "device": .string(DeviceID(address: address).rawValue),
      "address": .string(address.description),
      "name": name.map { .string($0.rawValue) } ?? .null,
    ]
    return (
      [.fleet(.claim(topic: discovery.topics.deviceName(address), payload: payload))],
      .success(data, transaction: nil)
    )
  }

  /// The device a request names: an address in any spelling, a device id, or a name.
  ///
  /// - Parameter text: What the request says.
  /// - Returns: The device's address, `nil` for no known device.
  public func address(named text: String) -> BluetoothAddress? {
    if let address = try? BluetoothAddress(text) { return address }
    if let record = discovery.registry.records.first(where: { $0.id.rawValue == text }) {
      return record.address
    }
    return gatt?.address(named: text)
  }

  /// The device that has `name` as its id now or by configuration.
  func holder(of name: DeviceID) -> BluetoothAddress? {
    if let record = discovery.registry.record(for: name) { return record.address }
    if let address = gatt?.address(named: name.rawValue) { return address }
    return discovery.configuredNames.first { $0.value == name }?.key
  }
}
