internal import CMosquitto
import Glibc

/// Owns a libmosquitto property list built from ``MQTTPublishProperties``; frees it on deinit.
final class PropertyList {
  private(set) var head: OpaquePointer?

  /// Builds the list; returns `nil` when there is nothing to send.
  init?(_ properties: MQTTPublishProperties) {
    if properties.isEmpty { return nil }
    if let expiry = properties.messageExpiryInterval {
      mosquitto_property_add_int32(&head, Int32(MQTT_PROP_MESSAGE_EXPIRY_INTERVAL.rawValue), expiry)
    }
    if let topic = properties.responseTopic {
      mosquitto_property_add_string(&head, Int32(MQTT_PROP_RESPONSE_TOPIC.rawValue), topic)
    }
    if let data = properties.correlationData {
      data.withUnsafeBytes { bytes in
        _ = mosquitto_property_add_binary(
          &head, Int32(MQTT_PROP_CORRELATION_DATA.rawValue), bytes.baseAddress,
          UInt16(clamping: bytes.count))
      }
    }
    if let type = properties.contentType {
      mosquitto_property_add_string(&head, Int32(MQTT_PROP_CONTENT_TYPE.rawValue), type)
    }
    for pair in properties.userProperties {
      mosquitto_property_add_string_pair(
        &head, Int32(MQTT_PROP_USER_PROPERTY.rawValue), pair.name, pair.value)
    }
  }

  /// Builds a list holding one 32-bit integer property.
  init(int32 identifier: mqtt5_property, _ value: UInt32) {
    mosquitto_property_add_int32(&head, Int32(identifier.rawValue), value)
  }

  deinit { mosquitto_property_free_all(&head) }

  /// Copies the publish properties out of a C list (called inside a callback).
  static func read(_ list: OpaquePointer?) -> MQTTPublishProperties {
    var result = MQTTPublishProperties()
    guard let list else { return result }
    var expiry: UInt32 = 0
    if mosquitto_property_read_int32(
      list, Int32(MQTT_PROP_MESSAGE_EXPIRY_INTERVAL.rawValue), &expiry, false) != nil
    {
      result.messageExpiryInterval = expiry
    }
    result.responseTopic = readString(list, MQTT_PROP_RESPONSE_TOPIC)
    result.contentType = readString(list, MQTT_PROP_CONTENT_TYPE)
    var data: UnsafeMutableRawPointer?
    var length: UInt16 = 0
    if mosquitto_property_read_binary(
      list, Int32(MQTT_PROP_CORRELATION_DATA.rawValue), &data, &length, false) != nil
    {
      if let data {
        result.correlationData = Array(
          UnsafeRawBufferPointer(start: data, count: Int(length)))
        free(data)
      } else {
        result.correlationData = []
      }
    }
    var cursor: OpaquePointer? = list
    var skipFirst = false
    while true {
      var name: UnsafeMutablePointer<CChar>?
      var value: UnsafeMutablePointer<CChar>?
      guard
        let found = mosquitto_property_read_string_pair(
          cursor, Int32(MQTT_PROP_USER_PROPERTY.rawValue), &name, &value, skipFirst)
      else { break }
      result.userProperties.append(
        MQTTUserProperty(
          name.map { String(cString: $0) } ?? "", value.map { String(cString: $0) } ?? ""))
      free(name)
      free(value)
      cursor = found
      skipFirst = true
    }
    return result
  }

  private static func readString(_ list: OpaquePointer, _ id: mqtt5_property) -> String? {
    var value: UnsafeMutablePointer<CChar>?
    guard mosquitto_property_read_string(list, Int32(id.rawValue), &value, false) != nil,
      let value
    else { return nil }
    defer { free(value) }
    return String(cString: value)
  }
}

extension PropertyList {
  /// Gives up ownership (libmosquitto took the list).
  func disown() { head = nil }
}
