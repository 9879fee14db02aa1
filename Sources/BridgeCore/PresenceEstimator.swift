/// Judges each device present or away from a time-weighted mean of its RSSI (C11), as the field
/// notes describe: keep a timestamped RSSI history per device and use a weighted mean, recent
/// samples weighing more.
///
/// **Mean.** Over the samples of the last ``window`` seconds (at most ``maximumSamples``, the
/// newest), `mean = Σ wᵢ·rssiᵢ / Σ wᵢ` with `wᵢ = 2^(−(now − tᵢ) / halfLife)`: a sample
/// ``halfLife`` seconds old weighs half as much as one received now.
///
/// **State, with hysteresis.** A device is `present` once the mean reaches ``enterRSSI`` and
/// stays so until the mean falls below ``leaveRSSI`` (lower), or it is unseen for ``awayAfter``
/// seconds; then it is `away` until the mean reaches ``enterRSSI`` again. An RSSI oscillating
/// between the thresholds therefore does not flap. The first judgement is `present` when the
/// mean reaches ``enterRSSI``, else `away`. A connected device is always `present` (it usually
/// stops advertising; RSSI read from the connection may be recorded like any sample); after it
/// disconnects it keeps its state until ``awayAfter`` seconds pass without a sample.
///
/// **Reports.** ``record(_:rssi:now:)``, ``setConnected(_:_:now:)`` and ``expire(now:)`` return
/// a ``Reading`` to publish on `<base>/<dev>/presence` (retained) on the first judgement, on
/// every state change, and when the mean moved by at least ``rssiChange`` dB since the last
/// report and ``reportInterval`` seconds have passed since it.
public struct PresenceEstimator: Sendable {
  /// Whether a device is in range.
  public enum State: String, Sendable, Hashable, CaseIterable {
    /// In range.
    case present
    /// Out of range or unseen.
    case away
  }

  /// One timestamped RSSI sample.
  public struct Sample: Sendable, Hashable {
    /// When it was received, in seconds since the Unix epoch.
    public var time: Double
    /// The RSSI in dBm.
    public var rssi: Int

    /// Makes a sample.
    ///
    /// - Parameters:
    ///   - time: When it was received, in seconds since the Unix epoch.
    ///   - rssi: The RSSI in dBm.
    public init(time: Double, rssi: Int) {
      self.time = time
      self.rssi = rssi
    }
  }

  /// A judgement to publish.
  public struct Reading: Sendable, Hashable {
    /// The state.
    public var state: State
    /// The weighted mean RSSI, when there are recent samples.
    public var rssi: Double?
    /// When the device was last seen, in seconds since the Unix epoch.
    public var lastSeen: Double

    /// Makes a reading.
    ///
    /// - Parameters:
    ///   - state: The state.
    ///   - rssi: The weighted mean RSSI.
    ///   - lastSeen: When the device was last seen.
    public init(state: State, rssi: Double?, lastSeen: Double) {
      self.state = state
      self.rssi = rssi
      self.lastSeen = lastSeen
    }

    /// The payload of `<base>/<dev>/presence`:
    /// `{"state":"present","rssi":-63.2,"gw":"pi","last_seen":1700000000000}`; `rssi` rounded
    /// to 0.1 dB and left out when there are no recent samples, `last_seen` in milliseconds
    /// since the Unix epoch.
    ///
    /// - Parameters:
    ///   - gateway: This gateway.
    ///   - wallClockOffset: Seconds to add to the bridge's (monotonic) time to get wall time
    ///     (see ``DiscoveryBridge/wallClockOffset``).
    /// - Returns: The JSON value.
    public func json(gateway: GatewayID, wallClockOffset: Double = 0) -> JSONValue {
      var object: JSONObject = ["state": .string(state.rawValue)]
      if let rssi { object["rssi"] = .number((rssi * 10).rounded() / 10) }
      object["gw"] = .string(gateway.rawValue)
      object["last_seen"] = .integer(Timestamps.milliseconds(lastSeen + wallClockOffset))
      return .object(object)
    }
  }

  /// A reading for one device.
  public struct Report: Sendable, Hashable {
    /// The device's address.
    public var address: BluetoothAddress
    /// The reading to publish.
    public var reading: Reading
  }

  private struct Track: Sendable {
    private(set) var samples: [Sample] = []
    /// `Σ wᵢ` and `Σ wᵢ·rssiᵢ` over ``samples`` with `wᵢ = 2^((tᵢ − reference) / halfLife)`:
    /// their ratio is the weighted mean at any `now` no earlier than the latest sample (the
    /// factor `2^((reference − now) / halfLife)` cancels), kept as samples come and go so that
    /// a sample costs one weight instead of one per sample kept.
    private var reference = 0.0
    private var weights = 0.0
    private var weighted = 0.0
    /// The latest sample's time (samples are in arrival order; a clock step back breaks the
    /// time order).
    private var latest = -Double.infinity
    var state: State?
    var connected = false
    var lastSeen: Double
    /// When the device was last heard at a strength the controller could not measure.
    var heardUnmeasured: Double?
    var reported: (reading: Reading, time: Double)?

    init(lastSeen: Double) {
      self.lastSeen = lastSeen
    }

    /// Adds the newest sample.
    mutating func append(_ sample: Sample, halfLife: Double) {
      samples.append(sample)
      let halvings = halfLife > 0 ? (sample.time - reference) / halfLife : .infinity
      // Weights stay within 2^-1000 … 2^60: otherwise the sums start afresh.
      guard samples.count > 1, halvings >= 0, halvings <= 60 else {
        return recompute(halfLife: halfLife)
      }
      latest = max(latest, sample.time)
      account(sample, 1, halfLife: halfLife)
    }

    /// Drops the `count` oldest samples.
    mutating func removeFirst(_ count: Int, halfLife: Double) {
      guard count > 0 else { return }
      guard count < samples.count, halfLife > 0 else {
        samples.removeFirst(count)
        return recompute(halfLife: halfLife)
      }
      for sample in samples[..<count] { account(sample, -1, halfLife: halfLife) }
      samples.removeFirst(count)
      if !(weights > 0) { recompute(halfLife: halfLife) }
    }

    /// The weighted mean at `now` (``PresenceEstimator/weightedMean(_:now:halfLife:)``).
    func mean(now: Double, halfLife: Double) -> Double? {
      // The sums hold while no sample is in the future and the latest weight has not
      // vanished (1000 half-lives); otherwise the mean is computed sample by sample.
      guard halfLife > 0, now >= latest, (now - latest) / halfLife < 1000, weights > 0 else {
        return PresenceEstimator.weightedMean(samples, now: now, halfLife: halfLife)
      }
      return weighted / weights
    }

    /// The sums afresh, relative to the latest sample (weight 1; the others less).
    private mutating func recompute(halfLife: Double) {
      latest = samples.lazy.map(\.time).max() ?? -.infinity
      reference = samples.isEmpty ? 0 : latest
      weights = 0
      weighted = 0
      guard halfLife > 0 else { return }
      for sample in samples { account(sample, 1, halfLife: halfLife) }
    }

    /// Adds `sign` × the sample's weight to the sums.
    private mutating func account(_ sample: Sample, _ sign: Double, halfLife: Double) {
      let weight = sign * HalfLife.power(max(-1000, (sample.time - reference) / halfLife))
      weights += weight
      weighted += weight * Double(sample.rssi)
    }
  }

  /// The mean at or above which a device becomes present, in dBm (`presence.enter_rssi`,
  /// default -80).
  public let enterRSSI: Double
  /// The mean below which a present device becomes away, in dBm (`presence.leave_rssi`,
  /// default -90); at most ``enterRSSI``.
  public let leaveRSSI: Double
  /// Seconds after which a sample weighs half (`presence.half_life`, default 10).
  public let halfLife: Double
  /// Seconds of history kept (`presence.window`, default 60).
  public let window: Double
  /// Seconds unseen after which a device is away (`presence.away_after`, default 30).
  public let awayAfter: Double
  /// The most samples kept per device (default 32).
  public let maximumSamples: Int
  /// The mean change in dB that is reported without a state change (`presence.rssi_change`,
  /// default 3).
  public let rssiChange: Double
  /// The fewest seconds between two reports of a device without a state change
  /// (`presence.interval`, default 10).
  public let reportInterval: Double

  private var tracks: [BluetoothAddress: Track] = [:]

  /// Makes an estimator that knows no device.
  ///
  /// - Parameters:
  ///   - enterRSSI: The mean at or above which a device becomes present, in dBm.
  ///   - leaveRSSI: The mean below which a present device becomes away; raised to `enterRSSI`
  ///     when above it.
  ///   - halfLife: Seconds after which a sample weighs half.
  ///   - window: Seconds of history kept.
  ///   - awayAfter: Seconds unseen after which a device is away.
  ///   - maximumSamples: The most samples kept per device; at least 1.
  ///   - rssiChange: The mean change in dB reported without a state change.
  ///   - reportInterval: The fewest seconds between two reports without a state change.
  public init(
    enterRSSI: Double = -80, leaveRSSI: Double = -90, halfLife: Double = 10, window: Double = 60,
    awayAfter: Double = 30, maximumSamples: Int = 32, rssiChange: Double = 3,
    reportInterval: Double = 10
  ) {
    self.enterRSSI = enterRSSI
    self.leaveRSSI = min(leaveRSSI, enterRSSI)
    self.halfLife = halfLife
    self.window = window
    self.awayAfter = awayAfter
    self.maximumSamples = max(1, maximumSamples)
    self.rssiChange = rssiChange
    self.reportInterval = reportInterval
  }

  /// The time-weighted mean of samples: `Σ wᵢ·rssiᵢ / Σ wᵢ`, `wᵢ = 2^(−(now − tᵢ) / halfLife)`.
  ///
  /// - Parameters:
  ///   - samples: The samples.
  ///   - now: The time the weights are computed for, in seconds since the Unix epoch.
  ///   - halfLife: Seconds after which a sample weighs half.
  /// - Returns: The mean in dBm, or `nil` without samples (or when every weight vanished).
  public static func weightedMean(_ samples: [Sample], now: Double, halfLife: Double) -> Double? {
    var weighted = 0.0
    var total = 0.0
    for sample in samples {
      let weight = HalfLife.weight(age: now - sample.time, halfLife: halfLife)
      weighted += weight * Double(sample.rssi)
      total += weight
    }
    return total > 0 ? weighted / total : nil
  }

  /// The number of devices tracked.
  public var count: Int { tracks.count }

  /// The current state of a device, or `nil` before its first judgement.
  ///
  /// - Parameter address: The device's address.
  /// - Returns: The state.
  public func state(of address: BluetoothAddress) -> State? { tracks[address]?.state }

  /// The last reading reported for a device (what its retained `presence` holds, or would hold
  /// had it been published), `nil` before its first judgement.
  ///
  /// - Parameter address: The device's address.
  /// - Returns: The reading.
  public func lastReading(of address: BluetoothAddress) -> Reading? {
    tracks[address]?.reported?.reading
  }

  /// The samples of a device still in the window, oldest first.
  ///
  /// - Parameter address: The device's address.
  /// - Returns: The samples.
  public func samples(of address: BluetoothAddress) -> [Sample] { tracks[address]?.samples ?? [] }

  /// Records an RSSI sample (from an advertisement or read from a connection).
  ///
  /// A reading outside ``Advertisement/measurableRSSI`` (HCI's 127, "not available") is no
  /// sample: it says the device was heard, and a device heard only so within the window is
  /// present (until ``awayAfter`` without any reading).
  ///
  /// - Parameters:
  ///   - address: The device's address.
  ///   - rssi: The RSSI in dBm.
  ///   - now: The time, in seconds since the Unix epoch.
  /// - Returns: A reading to publish, or `nil`.
  public mutating func record(_ address: BluetoothAddress, rssi: Int, now: Double) -> Reading? {
    let rules = self.rules
    // In place: one look-up, the samples changed where they are (not copied, not moved out and
    // back in).
    return Self.record(rssi, now: now, rules, in: &tracks[address, default: Track(lastSeen: now)])
  }

  private static func record(_ rssi: Int, now: Double, _ rules: Rules, in track: inout Track)
    -> Reading?
  {
    if Advertisement.measurableRSSI.contains(rssi) {
      track.append(Sample(time: now, rssi: rssi), halfLife: rules.halfLife)
      track.removeFirst(track.samples.count - rules.maximumSamples, halfLife: rules.halfLife)
    } else {
      // Heard, at a strength nobody measured (HCI's 127): no sample for the mean.
      track.heardUnmeasured = now
    }
    track.lastSeen = max(track.lastSeen, now)
    return evaluate(&track, now: now, rules)
  }

  /// Notes whether a device is connected; a connected device is present.
  ///
  /// - Parameters:
  ///   - address: The device's address.
  ///   - connected: Whether it is connected.
  ///   - now: The time, in seconds since the Unix epoch.
  /// - Returns: A reading to publish, or `nil`.
  public mutating func setConnected(
    _ address: BluetoothAddress, _ connected: Bool, now: Double
  ) -> Reading? {
    let rules = self.rules
    return Self.connect(
      connected, now: now, rules, in: &tracks[address, default: Track(lastSeen: now)])
  }

  private static func connect(_ connected: Bool, now: Double, _ rules: Rules, in track: inout Track)
    -> Reading?
  {
    track.connected = connected
    track.lastSeen = max(track.lastSeen, now)
    return evaluate(&track, now: now, rules)
  }

  /// Re-judges every device as time passes: devices unseen for ``awayAfter`` seconds become
  /// away, and old samples leave the window. Call it about once a second.
  ///
  /// - Parameter now: The time, in seconds since the Unix epoch.
  /// - Returns: The readings to publish, sorted by address.
  public mutating func expire(now: Double) -> [Report] {
    let rules = self.rules
    var reports: [Report] = []
    for address in tracks.keys.sorted() {
      guard let index = tracks.index(forKey: address),
        let reading = Self.evaluate(&tracks.values[index], now: now, rules)
      else { continue }
      reports.append(Report(address: address, reading: reading))
    }
    return reports
  }

  /// Drops everything known about a device.
  ///
  /// - Parameter address: The device's address.
  public mutating func forget(_ address: BluetoothAddress) {
    tracks[address] = nil
  }

  /// The settings a judgement needs, taken out of the estimator so that a track can be judged
  /// where it lies in ``tracks`` (a method of the estimator could not read them meanwhile).
  private struct Rules {
    var enterRSSI, leaveRSSI, halfLife, window, awayAfter, rssiChange, reportInterval: Double
    var maximumSamples: Int
  }

  private var rules: Rules {
    Rules(
      enterRSSI: enterRSSI, leaveRSSI: leaveRSSI, halfLife: halfLife, window: window,
      awayAfter: awayAfter, rssiChange: rssiChange, reportInterval: reportInterval,
      maximumSamples: maximumSamples)
  }

  private static func evaluate(_ track: inout Track, now: Double, _ rules: Rules) -> Reading? {
    let (window, awayAfter, halfLife) = (rules.window, rules.awayAfter, rules.halfLife)
    let (enterRSSI, leaveRSSI) = (rules.enterRSSI, rules.leaveRSSI)
    let horizon = now - window
    track.removeFirst(
      track.samples.firstIndex { $0.time >= horizon } ?? track.samples.count, halfLife: halfLife)
    let mean = track.mean(now: now, halfLife: halfLife)
    let state: State
    if track.connected {
      state = .present
    } else if now - track.lastSeen >= awayAfter {
      state = .away
    } else if let mean {
      switch track.state {
      case .present?: state = mean < leaveRSSI ? .away : .present
      case .away?, nil: state = mean >= enterRSSI ? .present : .away
      }
    } else if let heard = track.heardUnmeasured, now - heard < window {
      // Only readings without a strength in the window: heard is all that is known.
      state = .present
    } else {
      state = track.state ?? .away
    }
    track.state = state
    let reading = Reading(state: state, rssi: mean, lastSeen: track.lastSeen)
    var report = true
    if let last = track.reported, last.reading.state == state {
      let moved: Bool
      switch (last.reading.rssi, mean) {
      case (let old?, let new?): moved = abs(new - old) >= rules.rssiChange
      case (nil, nil): moved = false
      default: moved = true
      }
      report = moved && now - last.time >= rules.reportInterval
    }
    if report { track.reported = (reading, now) }
    return report ? reading : nil
  }
}
