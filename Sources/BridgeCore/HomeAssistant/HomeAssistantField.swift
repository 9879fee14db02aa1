/// How a decoded advertisement field appears in Home Assistant: the component and the sensor
/// metadata (device class, unit, state class) its discovery config carries.
///
/// Device classes and units are the ones Home Assistant 2024.3 accepts together
/// (`homeassistant.components.sensor.const.DEVICE_CLASS_UNITS`); a field without an entry
/// (identifiers such as `ibeacon_uuid`, counters such as `packet_id`) stays in the
/// advertisement's `decoded` JSON only.
public struct HomeAssistantField: Sendable, Hashable {
  /// `sensor` or `binary_sensor`.
  public var component: String
  /// The device class, or `nil`.
  public var deviceClass: String?
  /// The unit of measurement, or `nil`.
  public var unit: String?
  /// The state class (`measurement`, `total_increasing`), or `nil`.
  public var stateClass: String?
  /// Whether it is a diagnostic entity.
  public var diagnostic: Bool

  init(
    _ component: String = "sensor", _ deviceClass: String?, _ unit: String?,
    _ stateClass: String? = "measurement", diagnostic: Bool = false
  ) {
    self.component = component
    self.deviceClass = deviceClass
    self.unit = unit
    self.stateClass = stateClass
    self.diagnostic = diagnostic
  }

  static func binary(_ deviceClass: String?) -> HomeAssistantField {
    HomeAssistantField("binary_sensor", deviceClass, nil, nil)
  }

  /// The entry of a field name, with a repeat suffix (`temperature_2`) ignored.
  ///
  /// - Parameter name: The decoded field's name.
  /// - Returns: The entry, or `nil` for a field Home Assistant gets no entity for.
  public static func named(_ name: String) -> HomeAssistantField? {
    if let field = table[name] { return field }
    guard let underscore = name.lastIndex(of: "_"),
      name[name.index(after: underscore)...].allSatisfy(\.isASCIIDigit)
    else { return nil }
    return table[String(name[..<underscore])]
  }

  static let table: [String: HomeAssistantField] = [
    "temperature": .init("sensor", "temperature", "°C"),
    "dewpoint": .init("sensor", "temperature", "°C"),
    "humidity": .init("sensor", "humidity", "%"),
    "pressure": .init("sensor", "pressure", "hPa"),
    "battery": .init("sensor", "battery", "%", diagnostic: false),
    "illuminance": .init("sensor", "illuminance", "lx"),
    "voltage": .init("sensor", "voltage", "V", diagnostic: true),
    "current": .init("sensor", "current", "A"),
    "power": .init("sensor", "power", "W"),
    "energy": .init("sensor", "energy", "kWh", "total_increasing"),
    "co2": .init("sensor", "carbon_dioxide", "ppm"),
    "tvoc": .init("sensor", "volatile_organic_compounds", "µg/m³"),
    "pm25": .init("sensor", "pm25", "µg/m³"),
    "pm10": .init("sensor", "pm10", "µg/m³"),
    "moisture": .init("sensor", "moisture", "%"),
    "mass_kg": .init("sensor", "weight", "kg"),
    "mass_lb": .init("sensor", "weight", "lb"),
    "distance_mm": .init("sensor", "distance", "mm"),
    "distance_m": .init("sensor", "distance", "m"),
    "speed": .init("sensor", "speed", "m/s"),
    "duration": .init("sensor", "duration", "s"),
    "volume": .init("sensor", "volume", "L", "total"),
    "water": .init("sensor", "water", "L", "total_increasing"),
    "gas": .init("sensor", "gas", "m³", "total_increasing"),
    "volume_flow_rate": .init("sensor", "volume_flow_rate", "m³/h"),
    "uv_index": .init("sensor", nil, "UV index"),
    "rotation": .init("sensor", nil, "°"),
    "acceleration_x": .init("sensor", nil, "g"),
    "acceleration_y": .init("sensor", nil, "g"),
    "acceleration_z": .init("sensor", nil, "g"),
    "movement_counter": .init("sensor", nil, nil, diagnostic: true),
    "uptime": .init("sensor", "duration", "s", "total_increasing", diagnostic: true),
    "generic_boolean": .binary(nil),
    "power_on": .binary("power"),
    "opening": .binary("opening"),
    "battery_low": .binary("battery"),
    "battery_charging": .binary("battery_charging"),
    "carbon_monoxide": .binary("carbon_monoxide"),
    "cold": .binary("cold"),
    "connectivity": .binary("connectivity"),
    "door": .binary("door"),
    "garage_door": .binary("garage_door"),
    "gas_detected": .binary("gas"),
    "heat": .binary("heat"),
    "light": .binary("light"),
    "lock": .binary("lock"),
    "moisture_detected": .binary("moisture"),
    "motion": .binary("motion"),
    "moving": .binary("moving"),
    "occupancy": .binary("occupancy"),
    "plug": .binary("plug"),
    "presence_detected": .binary("presence"),
    "conductivity": .init("sensor", "conductivity", "µS/cm"),
    "problem": .binary("problem"),
    "running": .binary("running"),
    "safety": .binary("safety"),
    "smoke": .binary("smoke"),
    "sound": .binary("sound"),
    "tamper": .binary("tamper"),
    "vibration": .binary("vibration"),
    "window": .binary("window"),
  ]
}

extension Character {
  fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}
