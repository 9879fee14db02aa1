/// What is known about one local Bluetooth adapter (BlueZ `org.bluez.Adapter1`, e.g. `hci0`).
public struct AdapterInfo: Sendable, Hashable {
  /// The adapter's state as published on `<base>/bridge/<gw>/adapters` (C1).
  public enum State: String, Sendable, Hashable, CaseIterable {
    /// Present and powered: scanning and connecting are possible.
    case poweredOn
    /// Present but powered off (or blocked).
    case poweredOff
    /// Gone: unplugged, or bluetoothd is not running.
    case unavailable
    /// Being power-cycled by the gateway to recover it.
    case resetting
  }

  /// The adapter's name in the stack, for example `hci0`.
  public var id: String
  /// The adapter's own address, when known.
  public var address: BluetoothAddress?
  /// The adapter's name or alias, when known.
  public var name: String?
  /// Whether the adapter is present (known to the stack now).
  public var present: Bool
  /// Whether the adapter is powered on.
  public var powered: Bool
  /// Whether the adapter is discovering (scanning) now.
  public var discovering: Bool
  /// Whether the gateway is power-cycling the adapter to recover it.
  public var resetting: Bool
  /// The version of the Bluetooth stack that serves the adapter (bluetoothd's, e.g. `5.66`),
  /// when the stack says.
  public var stackVersion: String?

  /// Makes an adapter description.
  ///
  /// - Parameters:
  ///   - id: The adapter's name in the stack, for example `hci0`.
  ///   - address: The adapter's address.
  ///   - name: The adapter's name or alias.
  ///   - present: Whether the stack knows the adapter now.
  ///   - powered: Whether it is powered on.
  ///   - discovering: Whether it is scanning.
  ///   - resetting: Whether the gateway is power-cycling it.
  ///   - stackVersion: The version of the stack that serves it, when known.
  public init(
    id: String, address: BluetoothAddress? = nil, name: String? = nil, present: Bool = true,
    powered: Bool, discovering: Bool = false, resetting: Bool = false, stackVersion: String? = nil
  ) {
    self.id = id
    self.address = address
    self.name = name
    self.present = present
    self.powered = powered
    self.discovering = discovering
    self.resetting = resetting
    self.stackVersion = stackVersion
  }

  /// The published state: ``State/unavailable`` when not present, else ``State/resetting`` while
  /// resetting, else ``State/poweredOn`` or ``State/poweredOff``.
  public var state: State {
    if !present { return .unavailable }
    if resetting { return .resetting }
    return powered ? .poweredOn : .poweredOff
  }

  /// The adapter's entry in the adapters list:
  /// `{"id":"hci0","address":"00:1A:7D:DA:71:13","name":"pi","state":"poweredOn","discovering":true}`;
  /// `address` and `name` are left out when unknown.
  public var json: JSONValue {
    var object: JSONObject = ["id": .string(id)]
    if let address { object["address"] = .string(address.description) }
    if let name { object["name"] = .string(name) }
    object["state"] = .string(state.rawValue)
    object["discovering"] = .bool(present && discovering)
    return .object(object)
  }
}
