internal import CMosquitto
import Glibc

// C callbacks registered with libmosquitto. They run inside `mosquitto_loop_read/write/misc`
// and `mosquitto_publish`, with the client's loop lock held: on the loop thread, or on a
// publishing thread that reads or writes for it (`ClientCore.send(contentsOf:)`). Each one copies the C data at once and records it for the
// loop to process after the C call returns; they never log and never call back into
// libmosquitto.

private func core(_ userdata: UnsafeMutableRawPointer?) -> ClientCore? {
  guard let userdata else { return nil }
  return Unmanaged<ClientCore>.fromOpaque(userdata).takeUnretainedValue()
}

func mosquittoOnConnect(
  _ mosq: OpaquePointer?, _ userdata: UnsafeMutableRawPointer?, _ rc: Int32, _ flags: Int32,
  _ properties: OpaquePointer?
) {
  core(userdata)?.record(.connack(reasonCode: rc, sessionPresent: flags & 1 == 1))
}

func mosquittoOnDisconnect(
  _ mosq: OpaquePointer?, _ userdata: UnsafeMutableRawPointer?, _ rc: Int32,
  _ properties: OpaquePointer?
) {
  core(userdata)?.record(.disconnected(rc: rc, errno: errno))
}

func mosquittoOnPublish(
  _ mosq: OpaquePointer?, _ userdata: UnsafeMutableRawPointer?, _ mid: Int32, _ reason: Int32,
  _ properties: OpaquePointer?
) {
  core(userdata)?.record(.published(mid: mid, reasonCode: reason))
}

func mosquittoOnSubscribe(
  _ mosq: OpaquePointer?, _ userdata: UnsafeMutableRawPointer?, _ mid: Int32, _ count: Int32,
  _ granted: UnsafePointer<Int32>?, _ properties: OpaquePointer?
) {
  var codes: [Int32] = []
  if let granted, count > 0 {
    codes = Array(UnsafeBufferPointer(start: granted, count: Int(count)))
  }
  core(userdata)?.record(.subscribed(mid: mid, granted: codes))
}

func mosquittoOnUnsubscribe(
  _ mosq: OpaquePointer?, _ userdata: UnsafeMutableRawPointer?, _ mid: Int32,
  _ properties: OpaquePointer?
) {
  core(userdata)?.record(.unsubscribed(mid: mid))
}

func mosquittoOnMessage(
  _ mosq: OpaquePointer?, _ userdata: UnsafeMutableRawPointer?,
  _ message: UnsafePointer<mosquitto_message>?, _ properties: OpaquePointer?
) {
  guard let message, let target = core(userdata) else { return }
  let m = message.pointee
  let topic = m.topic.map { String(cString: $0) } ?? ""
  var payload: [UInt8] = []
  let size = Int(max(0, m.payloadlen))
  let tooLarge = size > target.configuration.maxIncomingMessageBytes
  if let bytes = m.payload, size > 0, !tooLarge {
    payload = Array(UnsafeRawBufferPointer(start: bytes, count: size))
  }
  let qos = MQTTQoS(rawValue: Int(m.qos)) ?? .atMostOnce
  var copy = MQTTMessage(
    topic: topic, payload: payload, qos: qos, retain: m.retain,
    properties: PropertyList.read(properties))
  copy.packetIdentifier = Int(m.mid)
  if tooLarge { copy.discarded = .tooLarge(bytes: size) }
  target.record(.message(copy))
}

func mosquittoOnLog(
  _ mosq: OpaquePointer?, _ userdata: UnsafeMutableRawPointer?, _ level: Int32,
  _ text: UnsafePointer<CChar>?
) {
  guard let core = core(userdata) else { return }
  core.stats.withLock { $0.libraryLogLines += 1 }
  guard let text, level & (MOSQ_LOG_ERR | MOSQ_LOG_WARNING) != 0 else { return }
  core.record(.log(String(cString: text)))
}
