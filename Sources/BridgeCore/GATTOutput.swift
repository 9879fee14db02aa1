/// Something the connection half of the bridge (``GATTBridge``) wants done, in order.
public enum GATTOutput: Sendable, Hashable {
  /// Publish `payload` on `topic`; an empty retained payload deletes the retained message.
  case publish(topic: TopicName, payload: [UInt8], retain: Bool)
  /// Publish `payload` on an MQTT 5 response topic with its correlation data.
  case reply(ReplyAddress, payload: [UInt8])
  /// Connect to the device (``GATTCentral/connect(_:timeout:)``), then report with
  /// ``GATTBridge/connectFinished(_:error:now:)``.
  case connect(BluetoothAddress, timeout: Double)
  /// Disconnect the device (``GATTCentral/disconnect(_:)``).
  case disconnect(BluetoothAddress)
  /// Carry out a GATT operation, then report with
  /// ``GATTBridge/operationFinished(_:result:now:)``.
  case execute(GATTOperation)
}

extension GATTOutput {
  static func publish(_ topic: TopicName, _ value: JSONValue, retain: Bool) -> GATTOutput {
    .publish(topic: topic, payload: value.serializedBytes(), retain: retain)
  }
}
