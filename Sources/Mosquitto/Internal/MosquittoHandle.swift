internal import CMosquitto
import Glibc

/// One libmosquitto client handle: every `mosquitto_*` call of the client is made here, once
/// (MQTT 5 property lists in ``PropertyList``), and every return code becomes an ``MQTTError``
/// in one place (``error(_:errno:)``).
///
/// Used only on the client's loop thread (``ClientCore``), which owns it.
final class MosquittoHandle: MQTTTransport {
  let configuration: MQTTClientConfiguration
  private let mosq: OpaquePointer
  private let connectProperties: PropertyList?
  /// Whether `mosquitto_connect` was called (later attempts use `mosquitto_reconnect`).
  private var connectCalled = false

  /// Makes and configures a handle: protocol, credentials, TLS, last will, callbacks.
  ///
  /// - Parameter configuration: The client's settings.
  /// - Throws: ``MQTTError`` `invalid_configuration` for settings libmosquitto refuses.
  init(configuration: MQTTClientConfiguration) throws(MQTTError) {
    self.configuration = configuration
    MosquittoLibrary.initialiseOnce()
    // Before the handle, so that a failure leaves nothing to destroy.
    if configuration.protocolVersion == .v5 && !configuration.cleanSession {
      connectProperties = try PropertyList(int32: MQTT_PROP_SESSION_EXPIRY_INTERVAL, UInt32.max)
    } else {
      connectProperties = nil
    }
    guard let handle = mosquitto_new(configuration.clientID, configuration.cleanSession, nil)
    else {
      throw MQTTError(.invalidConfiguration, "libmosquitto refused client id or session settings")
    }
    mosq = handle
    // libmosquitto passes the handle itself to callbacks when given no user data: until a
    // client sets its own (``setUserData(_:)``), the callbacks must find none.
    mosquitto_user_data_set(mosq, nil)
    // Every property is set: a failure here runs `deinit`, which destroys the handle.
    try configure()
  }

  deinit { mosquitto_destroy(mosq) }

  /// Where the C callbacks find their client (``Callbacks.swift``).
  func setUserData(_ pointer: UnsafeMutableRawPointer) {
    mosquitto_user_data_set(mosq, pointer)
  }

  private func configure() throws(MQTTError) {
    let c = configuration
    try check(
      mosquitto_int_option(
        mosq, MOSQ_OPT_PROTOCOL_VERSION,
        c.protocolVersion == .v5 ? MQTT_PROTOCOL_V5 : MQTT_PROTOCOL_V311), "protocol version")
    // Each packet leaves when it is written: with Nagle's algorithm a publication that follows
    // one the broker has not acknowledged yet (QoS 0 sends nothing back) waited for the
    // broker's delayed ACK, up to 40 ms. Batches are held together explicitly (`holdWrites`).
    try check(mosquitto_int_option(mosq, MOSQ_OPT_TCP_NODELAY, 1), "TCP_NODELAY")
    // The session hands libmosquitto up to `maxInflight` QoS ≥ 1 messages; libmosquitto's own
    // window is 20 unless set (an MQTT 5 broker's Receive Maximum still lowers it), and it
    // held the rest back in a queue of its own, so the configured window was never the one
    // on the wire.
    try check(
      mosquitto_int_option(
        mosq, MOSQ_OPT_SEND_MAXIMUM, Int32(clamping: min(65_535, max(1, c.maxInflight)))),
      "send maximum")
    if c.username != nil || c.password != nil {
      try check(mosquitto_username_pw_set(mosq, c.username, c.password), "username/password")
    }
    if let tls = c.tls {
      if (tls.certFile == nil) != (tls.keyFile == nil) {
        throw MQTTError(.invalidConfiguration, "TLS client certificate and key must come together")
      }
      for file in [tls.caFile, tls.certFile, tls.keyFile].compactMap({ $0 })
      where access(file, R_OK) != 0 {
        throw MQTTError(.invalidConfiguration, "TLS file is not readable: \(file)")
      }
      let caPath: String? = tls.caFile == nil ? "/etc/ssl/certs" : nil
      try check(
        mosquitto_tls_set(mosq, tls.caFile, caPath, tls.certFile, tls.keyFile, nil), "TLS files")
      if tls.insecure {
        try check(mosquitto_tls_opts_set(mosq, 0, nil, nil), "TLS verification off")
        try check(mosquitto_tls_insecure_set(mosq, true), "TLS host-name check off")
      }
    }
    if let will = c.will {
      let list = c.protocolVersion == .v5 ? try PropertyList.make(will.properties) : nil
      let rc = will.payload.withUnsafeBytes { bytes in
        mosquitto_will_set_v5(
          mosq, will.topic, Int32(bytes.count), bytes.baseAddress, Int32(will.qos.rawValue),
          will.retain, list?.head)
      }
      // libmosquitto takes ownership of the will's property list on success.
      if rc == MOSQ_ERR_SUCCESS.rawValue { list?.disown() }
      try check(rc, "last will")
    }
    mosquitto_connect_v5_callback_set(mosq, mosquittoOnConnect)
    mosquitto_disconnect_v5_callback_set(mosq, mosquittoOnDisconnect)
    mosquitto_publish_v5_callback_set(mosq, mosquittoOnPublish)
    mosquitto_subscribe_v5_callback_set(mosq, mosquittoOnSubscribe)
    mosquitto_unsubscribe_v5_callback_set(mosq, mosquittoOnUnsubscribe)
    mosquitto_message_v5_callback_set(mosq, mosquittoOnMessage)
    mosquitto_log_callback_set(mosq, mosquittoOnLog)
  }

  /// Whether libmosquitto's log reaches the client. While it is set, libmosquitto formats a
  /// line (`malloc` and `vsnprintf`) for every packet it sends or receives, a debug line the
  /// client drops: two per QoS 1 publication. Its errors matter while a connection is being
  /// made (a TLS failure, refused credentials); once connected, a lost connection is explained
  /// by its return code, and the next attempt logs again.
  var libraryLog = true {
    didSet {
      guard libraryLog != oldValue else { return }
      mosquitto_log_callback_set(mosq, libraryLog ? mosquittoOnLog : nil)
    }
  }

  private func check(_ rc: Int32, _ what: String) throws(MQTTError) {
    guard rc != MOSQ_ERR_SUCCESS.rawValue else { return }
    throw MQTTError(.invalidConfiguration, "\(what): \(Self.text(rc))")
  }

  // MARK: MQTTTransport

  func connect() -> MQTTTransportStatus {
    let c = configuration
    let rc: Int32
    if connectCalled {
      rc = mosquitto_reconnect(mosq)
    } else {
      rc = mosquitto_connect_bind_v5(
        mosq, c.host, Int32(clamping: c.port), Int32(clamping: c.keepalive), nil,
        connectProperties?.head)
      if rc == MOSQ_ERR_INVAL.rawValue {
        return .invalid(
          MQTTError(
            .invalidConfiguration,
            "libmosquitto refused host '\(c.host)', port \(c.port) or keepalive \(c.keepalive)"))
      }
      connectCalled = true
    }
    let errorNumber = errno
    return rc == MOSQ_ERR_SUCCESS.rawValue ? .started : .failed(error(rc, errno: errorNumber))
  }

  func publish(_ message: MQTTMessage) -> MQTTSendResult {
    let list: PropertyList?
    do {
      list =
        configuration.protocolVersion == .v5 && message.hasProperties
        ? try PropertyList.make(message.properties) : nil
    } catch {
      return .refused(error)
    }
    var mid: Int32 = 0
    let rc = message.payload.withUnsafeBytes { bytes in
      mosquitto_publish_v5(
        mosq, &mid, message.topic, Int32(bytes.count), bytes.baseAddress,
        Int32(message.qos.rawValue), message.retain, list?.head)
    }
    return result(rc, mid: mid)
  }

  func subscribe(_ filter: String, qos: MQTTQoS) -> MQTTSendResult {
    var mid: Int32 = 0
    let rc = mosquitto_subscribe_v5(mosq, &mid, filter, Int32(qos.rawValue), 0, nil)
    return result(rc, mid: mid)
  }

  func unsubscribe(_ filter: String) -> MQTTSendResult {
    var mid: Int32 = 0
    let rc = mosquitto_unsubscribe_v5(mosq, &mid, filter, nil)
    return result(rc, mid: mid)
  }

  func disconnect() {
    // `MOSQ_ERR_NO_CONN` (already closed) and `MOSQ_ERR_INVAL` (no handle) leave nothing to do:
    // the session goes on to `stopped` either way.
    _ = mosquitto_disconnect_v5(mosq, 0, nil)
  }

  var isOpen: Bool { mosquitto_socket(mosq) >= 0 }

  private func result(_ rc: Int32, mid: Int32) -> MQTTSendResult {
    switch rc {
    case MOSQ_ERR_SUCCESS.rawValue: .sent(mid: mid)
    case MOSQ_ERR_NO_CONN.rawValue: .noConnection(mid: mid)
    default: .refused(error(rc))
    }
  }

  // MARK: the loop thread's socket work

  /// The socket to poll, or -1 while there is none.
  var socket: Int32 { mosquitto_socket(mosq) }

  /// Holds back (`true`) or sends (`false`) what libmosquitto writes to a TCP socket, so that
  /// the packets of a batch of publications, which libmosquitto writes one `write` each, leave
  /// in as few segments as fit (`TCP_CORK`); the broker then reads them, and acknowledges them,
  /// in one wake-up.
  ///
  /// - Parameters:
  ///   - hold: Whether to hold back.
  ///   - socket: The socket (``socket`` when the hold began).
  /// - Returns: Whether the socket took the option (a Unix socket does not).
  @discardableResult
  func holdWrites(_ hold: Bool, socket: Int32) -> Bool {
    guard socket >= 0 else { return false }
    var value: Int32 = hold ? 1 : 0
    return setsockopt(
      socket, Int32(IPPROTO_TCP), TCP_CORK, &value, socklen_t(MemoryLayout<Int32>.size)) == 0
  }

  /// Whether bytes from the broker wait on the socket (a peek, which a TLS connection's
  /// encrypted bytes answer too; libmosquitto leaves nothing decrypted in OpenSSL's buffer
  /// after a read).
  var inputWaiting: Bool {
    let fd = socket
    guard fd >= 0 else { return false }
    var byte: UInt8 = 0
    return recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT)) > 0
  }

  /// Whether libmosquitto has bytes to write.
  var wantsWrite: Bool { mosquitto_want_write(mosq) }

  /// Reads what arrived (also drives a TLS handshake forward); the callbacks run inside.
  func read() -> MQTTError? { failure(mosquitto_loop_read(mosq, 1)) }

  /// Writes what is queued.
  func write() -> MQTTError? { failure(mosquitto_loop_write(mosq, 1)) }

  /// Keepalive and retries of unacknowledged packets.
  func misc() -> MQTTError? { failure(mosquitto_loop_misc(mosq)) }

  private func failure(_ rc: Int32) -> MQTTError? {
    rc == MOSQ_ERR_SUCCESS.rawValue ? nil : error(rc, errno: errno)
  }

  // MARK: return codes and reason codes

  /// Why a CONNACK refused the connection (`reasonCode` 0: accepted, `nil`), classified by
  /// its code: the credentials refused (MQTT 3.1.1 codes 4 and 5; MQTT 5 `0x86` bad user name
  /// or password, `0x87` not authorised, `0x8A` banned, `0x8C` bad authentication method) are
  /// `not_authorized`, every other refusal `connection_refused`.
  func connackRefusal(_ reasonCode: Int32) -> MQTTError? {
    guard reasonCode != 0 else { return nil }
    let v5 = configuration.protocolVersion == .v5
    let text = String(
      cString: v5 ? mosquitto_reason_string(reasonCode) : mosquitto_connack_string(reasonCode))
    return Self.connackRefusal(reasonCode, v5: v5, text: text)
  }

  /// ``connackRefusal(_:)`` for a reason code and its text.
  static func connackRefusal(_ reasonCode: Int32, v5: Bool, text: String) -> MQTTError {
    let credentials: Set<Int32> = v5 ? [0x86, 0x87, 0x8A, 0x8C] : [4, 5]
    return credentials.contains(reasonCode)
      ? MQTTError(.notAuthorized, "broker refused the credentials (\(text))")
      : MQTTError(.connectionRefused, "broker refused the connection (\(text))")
  }

  /// Why the broker refused a publication (an MQTT 5 reason code ≥ 0x80), as text.
  func publishRefusal(_ reasonCode: Int32) -> String? {
    reasonCode >= 0x80 ? String(cString: mosquitto_reason_string(reasonCode)) : nil
  }

  /// The error a disconnection callback reports (`rc` 0: a clean disconnection, `nil`).
  ///
  /// - Parameters:
  ///   - rc: The callback's return code.
  ///   - code: `errno` when the callback ran.
  /// - Returns: The error, `nil` for a clean disconnection.
  func disconnection(_ rc: Int32, errno code: Int32) -> MQTTError? {
    rc == MOSQ_ERR_SUCCESS.rawValue ? nil : error(rc, errno: code)
  }

  /// The one place a libmosquitto return code becomes an error.
  ///
  /// - Parameters:
  ///   - rc: The return code.
  ///   - code: The `errno` after the call, for `MOSQ_ERR_ERRNO`.
  /// - Returns: The error, with its kind and libmosquitto's (or the system's) text.
  func error(_ rc: Int32, errno code: Int32 = 0) -> MQTTError {
    Self.error(rc, errno: code, tls: configuration.tls != nil)
  }

  /// ``error(_:errno:)`` for a client with or without TLS: libmosquitto reports a failed TLS
  /// handshake or record on an open connection as `MOSQ_ERR_ERRNO` with `EPROTO`
  /// (`net__handle_ssl`), which is `tls` where TLS is configured.
  static func error(_ rc: Int32, errno code: Int32, tls: Bool) -> MQTTError {
    let text =
      rc == MOSQ_ERR_ERRNO.rawValue && code != 0 ? String(cString: strerror(code)) : Self.text(rc)
    switch rc {
    case MOSQ_ERR_ERRNO.rawValue where code == EPROTO && tls:
      return MQTTError(.tls, "TLS failure (\(text))")
    case MOSQ_ERR_TLS.rawValue, MOSQ_ERR_TLS_HANDSHAKE.rawValue: return MQTTError(.tls, text)
    case MOSQ_ERR_CONN_REFUSED.rawValue: return MQTTError(.connectionRefused, text)
    case MOSQ_ERR_AUTH.rawValue, MOSQ_ERR_NOT_SUPPORTED.rawValue:
      return MQTTError(.notAuthorized, text)
    case MOSQ_ERR_PROTOCOL.rawValue, MOSQ_ERR_MALFORMED_PACKET.rawValue:
      return MQTTError(.protocolError, text)
    default: return MQTTError(.network, text)
    }
  }

  private static func text(_ rc: Int32) -> String { String(cString: mosquitto_strerror(rc)) }
}

/// `mosquitto_lib_init` exactly once per process.
enum MosquittoLibrary {
  private static let initialised: Bool = {
    mosquitto_lib_init()
    return true
  }()

  static func initialiseOnce() { _ = initialised }

  /// The linked libmosquitto version, e.g. `2.0.11`.
  static var version: String {
    var major: Int32 = 0
    var minor: Int32 = 0
    var revision: Int32 = 0
    mosquitto_lib_version(&major, &minor, &revision)
    return "\(major).\(minor).\(revision)"
  }
}
