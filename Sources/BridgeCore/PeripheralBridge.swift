/// The peripheral role as one pure state machine (rows P1, P4–P6): the text fed by MQTT, the
/// subscribed centrals, and transfers cut by ``TransferChunker``.
///
/// The gateway feeds it the text messages (``setText(_:source:now:)``) and the peripheral's events
/// (``handle(_:now:)``), and runs a sender that pulls notifications with
/// ``nextNotification()``, paces them, and reports each with ``notificationSent(now:)`` or
/// ``notificationFailed(_:now:)``.
///
/// A text that arrives during a transfer waits until that transfer ends cleanly, then goes as a
/// fresh transfer: centrals never receive a mix of two texts. One value goes to every
/// subscriber, so chunks are as large as the **smallest** known MTU allows (MTU 23 when the
/// stack has not told it).
///
/// Publishes `<base>/bridge/<gw>/peripheral/state` (retained) and
/// `<base>/bridge/<gw>/peripheral/event` (`subscribed`, `unsubscribed`, `sent`, `aborted`,
/// `text_refused`, `refused`).
public struct PeripheralBridge: Sendable {
  /// What the bridge wants done.
  public enum Output: Sendable, Hashable {
    /// Publish on MQTT.
    case publish(topic: TopicName, payload: [UInt8], retain: Bool)
    /// Make reads of the characteristic return this text (``BLEPeripheral/setReadValue(_:)``).
    case setReadValue([UInt8])
  }

  /// One transfer under way.
  struct Transfer: Sendable {
    var id: Int
    var chunker: TransferChunker
    /// Notifications confirmed sent.
    var confirmed = 0
    /// Notifications sent through a channel with back-pressure, and as unpaced signals.
    var flowControlled = 0
    var unpaced = 0

    /// `socket`, `signals`, or `socket+signals` (the socket was let go of mid-transfer).
    var pathName: String {
      switch (flowControlled > 0, unpaced > 0) {
      case (true, false): "socket"
      case (true, true): "socket+signals"
      default: "signals"
      }
    }
  }

  /// The topic map.
  public let topics: Topics
  /// The service definition (for the state payload).
  public let service: PeripheralService
  /// The longest text accepted, in bytes.
  public let maxTextBytes: Int
  /// The role's state.
  public private(set) var state: PeripheralState = .stopped
  /// The current text.
  public private(set) var text: [UInt8] = []
  /// Completed transfers.
  public private(set) var transfersSent = 0
  /// Bytes of the texts sent in full (``transfersSent``), `EOM` not counted.
  public private(set) var bytesSent = 0
  /// Aborted transfers.
  public private(set) var transfersAborted = 0

  /// Subscribers by address; anonymous ones (the stack did not say who) under `nil` keys are
  /// counted in `anonymous`.
  var subscribers: [BluetoothAddress: Int?] = [:]
  var anonymous = 0
  var mtus: [BluetoothAddress: Int] = [:]
  var transfer: Transfer?
  /// A transfer must start (again) once the current one ends.
  var pending = false
  /// The fleet's latest text (`<base>/bridge/peripheral/text/set`), served while the gateway's
  /// own topic holds none.
  var fleetText: [UInt8]?
  /// Whether the gateway's own text topic holds a text (not cleared), which overrides the fleet's.
  var ownText = false

  /// Where a text comes from.
  public enum TextSource: Sendable, Hashable {
    /// The gateway's own `<base>/bridge/<gw>/peripheral/text/set`.
    case own
    /// The fleet's `<base>/bridge/peripheral/text/set`: served unless the own topic holds a text.
    case fleet
  }
  var nextTransfer = 1

  /// Makes a bridge.
  ///
  /// - Parameters:
  ///   - topics: The topic map.
  ///   - service: The service definition.
  ///   - maxTextBytes: The longest text accepted.
  public init(topics: Topics, service: PeripheralService, maxTextBytes: Int = 1 << 20) {
    self.topics = topics
    self.service = service
    self.maxTextBytes = max(0, maxTextBytes)
  }

  /// Whether any central is subscribed.
  public var hasSubscribers: Bool { anonymous > 0 || !subscribers.isEmpty }

  /// The chunk MTU: the smallest MTU any subscriber may have.
  ///
  /// A subscriber the stack named counts with its MTU: the one it came with, else one its read
  /// or write told, else the default (23). Anonymous ones (BlueZ's `StartNotify` tells neither
  /// who nor the MTU) can only have an MTU learned from a central that is not a named
  /// subscriber; when fewer such MTUs are known than anonymous subscribers, one of them may be
  /// at the default, and so are the chunks. A central's MTU is forgotten when it unsubscribes.
  public var mtu: Int {
    let named = subscribers.map { $0.value ?? mtus[$0.key] ?? TransferChunker.defaultMTU }
    guard anonymous > 0 else {
      return named.min() ?? (mtus.values.min() ?? TransferChunker.defaultMTU)
    }
    let others = mtus.filter { subscribers[$0.key] == nil }.map(\.value)
    guard others.count >= anonymous else { return TransferChunker.defaultMTU }
    return min(named.min() ?? Int.max, others.min() ?? Int.max)
  }

  /// A new text arrived on `<base>/bridge/<gw>/peripheral/text/set` (`source` ``TextSource/own``)
  /// or on the fleet's `<base>/bridge/peripheral/text/set` (``TextSource/fleet``).
  ///
  /// The gateway's own text overrides the fleet's: a fleet text is served only while the own
  /// topic holds none (never set, or cleared with an empty message, which brings the fleet's
  /// latest text back).
  ///
  /// - Parameters:
  ///   - payload: The text; it must be UTF-8 and at most ``maxTextBytes`` bytes.
  ///   - source: Which topic it came from.
  ///   - now: The time.
  /// - Returns: What to do.
  public mutating func setText(_ payload: [UInt8], source: TextSource = .own, now: Double)
    -> [Output]
  {
    if payload.count > maxTextBytes {
      return refuseText(
        code: "too_long", message: "\(payload.count) bytes; the most is \(maxTextBytes)")
    }
    if String(validating: payload, as: UTF8.self) == nil {
      return refuseText(code: "invalid_payload", message: "the text is not UTF-8")
    }
    var served = payload
    switch source {
    case .fleet:
      fleetText = payload
      if ownText { return [] }
    case .own:
      ownText = !payload.isEmpty
      if payload.isEmpty, let fleetText { served = fleetText }
    }
    text = served
    if hasSubscribers { pending = true }
    return [.setReadValue(served), stateOutput()]
  }

  /// A text that never reached ``setText(_:source:now:)`` (too large to be kept, or no room for it):
  /// the current text stays, and a `text_refused` event says why.
  ///
  /// - Parameters:
  ///   - code: The error code, such as `too_long` or `busy`.
  ///   - message: What a person reads.
  /// - Returns: What to do.
  public func refuseText(code: String, message: String) -> [Output] {
    [event("text_refused", ["error": .string(code), "message": .string(message)])]
  }

  /// Takes in one event of the peripheral.
  ///
  /// - Parameters:
  ///   - event: The event.
  ///   - now: The time.
  /// - Returns: What to do.
  public mutating func handle(_ event: PeripheralEvent, now: Double) -> [Output] {
    switch event {
    case .stateChanged(let new):
      state = new
      var outputs = [stateOutput()]
      if new != .advertising {
        subscribers = [:]
        anonymous = 0
        outputs += abort("the service is \(Self.name(new))")
      }
      return outputs
    case .subscribed(let central, let mtu):
      if let central {
        subscribers[central] = mtu
        if let mtu { mtus[central] = mtu }
      } else {
        anonymous += 1
      }
      pending = true
      return [self.event("subscribed", centralData(central, mtu: mtu)), stateOutput()]
    case .unsubscribed(let central):
      if let central, subscribers.removeValue(forKey: central) != nil {
      } else if anonymous > 0 {
        anonymous -= 1
      }
      // (it may come back with another MTU; a stale one could let chunks grow past a
      // subscriber's)
      if let central { mtus[central] = nil }
      var outputs = [self.event("unsubscribed", centralData(central, mtu: nil)), stateOutput()]
      if !hasSubscribers {
        pending = false
        outputs += abort("no central is subscribed any more")
      }
      return outputs
    case .mtu(let central, let mtu):
      mtus[central] = mtu
      if subscribers[central] != nil { subscribers[central] = mtu }
      return []
    case .written(let central, let value):
      var data = centralData(central, mtu: nil)
      data["hex"] = .string(Hex.encode(value))
      // The text too when the bytes are UTF-8 (centrals write text in this protocol).
      if UTF8Rules.firstInvalidOffset(value) == nil {
        data["text"] = .string(String(decoding: value, as: UTF8.self))
      }
      return [self.event("written", data)]
    case .refused(let central):
      return [self.event("refused", centralData(central, mtu: nil))]
    }
  }

  /// The next notification to send, starting a transfer when one is due; `nil` when there is
  /// nothing to send.
  ///
  /// - Returns: The bytes.
  public mutating func nextNotification() -> [UInt8]? {
    if transfer == nil {
      guard pending, hasSubscribers, state == .advertising else { return nil }
      pending = false
      transfer = Transfer(id: nextTransfer, chunker: TransferChunker(text: text, mtu: mtu))
      nextTransfer += 1
    }
    guard var current = transfer, current.confirmed == current.chunker.sent else { return nil }
    let value = current.chunker.next()
    transfer = current
    return value
  }

  /// The last notification handed out was sent.
  ///
  /// - Parameters:
  ///   - path: How it went (the `sent` event says which path the transfer took).
  ///   - now: The time.
  /// - Returns: What to do: a `sent` event after the `EOM`.
  public mutating func notificationSent(path: NotificationPath = .unpaced, now: Double)
    -> [Output]
  {
    guard var current = transfer else { return [] }
    current.confirmed += 1
    switch path {
    case .flowControlled: current.flowControlled += 1
    case .unpaced: current.unpaced += 1
    }
    guard current.chunker.isFinished, current.confirmed == current.chunker.count else {
      transfer = current
      return []
    }
    transfer = nil
    transfersSent += 1
    bytesSent += current.chunker.text.count
    return [
      event(
        "sent",
        [
          "chunks": .integer(Int64(current.chunker.count - 1)),
          "bytes": .integer(Int64(current.chunker.text.count)),
          "chunk_size": .integer(Int64(current.chunker.chunkSize)),
          "subscribers": .integer(Int64(subscribers.count + anonymous)),
          "path": .string(current.pathName),
        ])
    ]
  }

  /// The last notification handed out could not be sent: the transfer is aborted and starts
  /// afresh when a central subscribes or a new text arrives.
  ///
  /// - Parameters:
  ///   - error: Why.
  ///   - now: The time.
  /// - Returns: What to do.
  public mutating func notificationFailed(_ error: CentralError, now: Double) -> [Output] {
    abort(error.message)
  }

  /// The retained state payload.
  public var stateJSON: JSONValue {
    var object: JSONObject = [
      "state": .string(Self.name(state)),
      "service": .string(service.service.topicSegment),
      "characteristic": .string(service.characteristic.topicSegment),
      "subscribers": .array(
        subscribers.keys.sorted().map { address in
          var entry: JSONObject = ["address": .string(address.description)]
          if let mtu = mtus[address] { entry["mtu"] = .integer(Int64(mtu)) }
          return .object(entry)
        } + Array(repeating: ["address": nil], count: anonymous)),
      "text_bytes": .integer(Int64(text.count)),
      "text_preview": .string(textPreview),
    ]
    if case .unavailable(let reason) = state { object["reason"] = .string(reason) }
    return .object(object)
  }

  /// The longest preview of the served text in the state payload, in characters (Unicode
  /// scalars): Home Assistant's limit for a `text` entity's state.
  public static let previewLength = 255

  /// The first ``previewLength`` characters of the served text (`text_preview`), for displays
  /// such as Home Assistant's `text` entity; `text_bytes` tells whether it is all of it.
  public var textPreview: String {
    let head = text.prefix(Self.previewLength * 4)
    return String(String(decoding: head, as: UTF8.self).unicodeScalars.prefix(Self.previewLength))
  }

  static func name(_ state: PeripheralState) -> String {
    switch state {
    case .advertising: "advertising"
    case .stopped: "stopped"
    case .unavailable: "unavailable"
    }
  }

  mutating func abort(_ reason: String) -> [Output] {
    guard let current = transfer else { return [] }
    transfer = nil
    transfersAborted += 1
    return [
      event(
        "aborted",
        [
          "chunks": .integer(Int64(max(0, current.confirmed))),
          "bytes": .integer(Int64(current.chunker.text.count)),
          "reason": .string(reason),
        ])
    ]
  }

  /// The retained state publication as it is now.
  public func stateOutput() -> Output {
    .publish(topic: topics.peripheralState, payload: stateJSON.serializedBytes(), retain: true)
  }

  func event(_ type: String, _ data: JSONObject) -> Output {
    var object: JSONObject = ["type": .string(type)]
    for (key, value) in data { object[key] = value }
    return .publish(
      topic: topics.peripheralEvent, payload: JSONValue.object(object).serializedBytes(),
      retain: false)
  }

  func centralData(_ central: BluetoothAddress?, mtu: Int?) -> JSONObject {
    var data: JSONObject = ["central": central.map { .string($0.description) } ?? .null]
    if let mtu { data["mtu"] = .integer(Int64(mtu)) }
    return data
  }
}
