internal import CMosquitto
import Glibc

/// Owns a libmosquitto property list built from ``MQTTPublishProperties``; frees it on deinit.
/// Every addition's return code is checked, and what libmosquitto 2.0.11 would cut silently is
/// checked before it: a string longer than MQTT's 65,535 bytes (a user property's value is
/// stored with its length cut to 16 bits, unchecked) or holding U+0000 (copied with `strlen`),
/// correlation data longer than 65,535 bytes. Any of these fails the whole list.
final class PropertyList {
  private(set) var head: OpaquePointer?

  private init() {}

  /// Builds the list; `nil` when there is nothing to send.
  ///
  /// - Throws: ``MQTTError`` `invalid_argument` naming the property libmosquitto refused.
  static func make(_ properties: MQTTPublishProperties) throws(MQTTError) -> PropertyList? {
    if properties.isEmpty { return nil }
    let list = PropertyList()
    if let expiry = properties.messageExpiryInterval {
      try list.check(
        mosquitto_property_add_int32(
          &list.head, Int32(MQTT_PROP_MESSAGE_EXPIRY_INTERVAL.rawValue), expiry),
        "message expiry interval")
    }
    if let topic = properties.responseTopic {
      try checkString(topic, "response topic")
      try list.check(
        mosquitto_property_add_string(&list.head, Int32(MQTT_PROP_RESPONSE_TOPIC.rawValue), topic),
        "response topic")
    }
    if let data = properties.correlationData {
      guard let length = UInt16(exactly: data.count) else {
        throw MQTTError(
          .invalidArgument,
          "MQTT 5 correlation data of \(data.count) bytes: at most \(UInt16.max) are allowed")
      }
      let rc = data.withUnsafeBytes { bytes in
        mosquitto_property_add_binary(
          &list.head, Int32(MQTT_PROP_CORRELATION_DATA.rawValue), bytes.baseAddress, length)
      }
      try list.check(rc, "correlation data")
    }
    if let type = properties.contentType {
      try checkString(type, "content type")
      try list.check(
        mosquitto_property_add_string(&list.head, Int32(MQTT_PROP_CONTENT_TYPE.rawValue), type),
        "content type")
    }
    for pair in properties.userProperties {
      try checkString(pair.name, "user property name")
      try checkString(pair.value, "user property \(pair.name)")
      try list.check(
        mosquitto_property_add_string_pair(
          &list.head, Int32(MQTT_PROP_USER_PROPERTY.rawValue), pair.name, pair.value),
        "user property \(pair.name)")
    }
    return list
  }

  /// Builds a list holding one 32-bit integer property.
  ///
  /// - Throws: ``MQTTError`` `invalid_argument` when libmosquitto refuses it.
  convenience init(int32 identifier: mqtt5_property, _ value: UInt32) throws(MQTTError) {
    self.init()
    try check(mosquitto_property_add_int32(&head, Int32(identifier.rawValue), value), "property")
  }

  /// An MQTT string: at most 65,535 bytes of UTF-8, no U+0000.
  private static func checkString(_ text: String, _ what: String) throws(MQTTError) {
    let bytes = text.utf8.count
    guard bytes <= Int(UInt16.max) else {
      throw MQTTError(
        .invalidArgument, "MQTT 5 \(what) of \(bytes) bytes: at most \(UInt16.max) are allowed")
    }
    guard !text.utf8.contains(0) else {
      throw MQTTError(.invalidArgument, "MQTT 5 \(what) holds U+0000, which MQTT forbids")
    }
  }

  private func check(_ rc: Int32, _ what: String) throws(MQTTError) {
    guard rc != MOSQ_ERR_SUCCESS.rawValue else { return }
    throw MQTTError(
      .invalidArgument, "MQTT 5 \(what) refused: \(String(cString: mosquitto_strerror(rc)))")
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
