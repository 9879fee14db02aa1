import BridgeCore
import Testing

@Suite("Presence from a time-weighted RSSI mean")
struct PresenceEstimatorTests {
  let t0 = Fixture.t0
  let device = Fixture.address("A4:C1:38:1E:29:DF")

  @Test("the weighted mean halves a sample's weight every half-life")
  func weightedMean() throws {
    typealias Sample = PresenceEstimator.Sample
    let two = [Sample(time: t0, rssi: -60), Sample(time: t0 + 10, rssi: -80)]
    let mean = try #require(PresenceEstimator.weightedMean(two, now: t0 + 10, halfLife: 10))
    #expect(abs(mean - (-60 * 0.5 - 80) / 1.5) < 1e-9)
    let quarter = [Sample(time: t0, rssi: -60), Sample(time: t0 + 5, rssi: -80)]
    let weight = 0.707_106_781_186_547_5  // 2^(-1/2)
    let expected = (-60 * weight * weight - 80 * weight) / (weight * weight + weight)
    let actual = try #require(PresenceEstimator.weightedMean(quarter, now: t0 + 10, halfLife: 10))
    #expect(abs(actual - expected) < 1e-9)
    #expect(PresenceEstimator.weightedMean([], now: t0, halfLife: 10) == nil)
    #expect(
      PresenceEstimator.weightedMean([Sample(time: t0, rssi: -70)], now: t0 + 1e6, halfLife: 1)
        == nil)
  }

  @Test("the first judgement: present at the enter threshold, away between the thresholds")
  func firstJudgement() {
    var estimator = PresenceEstimator(enterRSSI: -80, leaveRSSI: -90)
    let result1 = estimator.record(device, rssi: -80, now: t0)
    #expect(result1?.state == .present)
    let other = Fixture.address("11:22:33:44:55:66")
    let result2 = estimator.record(other, rssi: -85, now: t0)
    #expect(result2?.state == .away)
  }

  @Test(
    "a reading without strength (HCI's 127) is no sample: heard only so, present; it never lifts a weak mean; away once unheard"
  )
  func unmeasuredRSSI() {
    var estimator = PresenceEstimator(enterRSSI: -80, leaveRSSI: -90, awayAfter: 10)
    let first = estimator.record(device, rssi: 127, now: t0)
    #expect(first?.state == .present)
    #expect(first?.rssi == nil, "no mean from readings without strength")
    #expect(estimator.samples(of: device).isEmpty)
    // A weak device stays away however many 127s come with its real readings.
    let weak = Fixture.address("11:22:33:44:55:66")
    var last: PresenceEstimator.State?
    for second in 0..<10 {
      let rssi = second.isMultiple(of: 2) ? -95 : 127
      if let reading = estimator.record(weak, rssi: rssi, now: t0 + Double(second)) {
        last = reading.state
      }
    }
    #expect(last == .away)
    #expect(estimator.state(of: weak) == .away)
    #expect(estimator.samples(of: weak).map(\.rssi) == [-95, -95, -95, -95, -95])
    // Unheard for away_after: away.
    let reports = estimator.expire(now: t0 + 11)
    #expect(reports.first { $0.address == device }?.reading.state == .away)
  }

  /// Feeds one sample a second and returns the states reported.
  func states(_ estimator: inout PresenceEstimator, _ rssis: [Int], start: Double = 0)
    -> [PresenceEstimator.State]
  {
    rssis.enumerated().compactMap { index, rssi in
      estimator.record(device, rssi: rssi, now: t0 + start + Double(index))?.state
    }
  }

  @Test("a present device with RSSI oscillating around either threshold does not flap")
  func noFlapping() {
    for (low, high) in [(-81, -79), (-91, -89), (-95, -75)] {
      var estimator = PresenceEstimator(
        enterRSSI: -80, leaveRSSI: -90, halfLife: 3, rssiChange: 100)
      let oscillating = Array(repeating: -60, count: 5) + (0..<300).map { $0 % 2 == 0 ? low : high }
      let reported = states(&estimator, oscillating)
      var transitions = 0
      for (before, after) in zip(reported, reported.dropFirst()) where before != after {
        transitions += 1
      }
      #expect(transitions <= 1, "\(low)/\(high) flapped \(transitions) times")
    }
  }

  @Test("hysteresis: present until below leave, away until at enter")
  func hysteresis() {
    var estimator = PresenceEstimator(enterRSSI: -80, leaveRSSI: -90, halfLife: 1, rssiChange: 100)
    let result3 = states(&estimator, [-70])
    #expect(result3 == [.present])
    let result4 = states(&estimator, Array(repeating: -85, count: 20), start: 1)
    #expect(result4 == [])
    #expect(estimator.state(of: device) == .present)
    let result5 = states(&estimator, Array(repeating: -95, count: 20), start: 21)
    #expect(result5 == [.away])
    let result6 = states(&estimator, Array(repeating: -85, count: 20), start: 41)
    #expect(result6 == [])
    #expect(estimator.state(of: device) == .away)
    let result7 = states(&estimator, Array(repeating: -75, count: 20), start: 61)
    #expect(result7 == [.present])
  }

  @Test("unseen for away_after seconds turns away; a connected device stays present")
  func unseenAndConnected() throws {
    var estimator = PresenceEstimator(awayAfter: 30)
    _ = estimator.record(device, rssi: -60, now: t0)
    let result8 = estimator.expire(now: t0 + 29)
    #expect(result8.isEmpty)
    let reports = estimator.expire(now: t0 + 30)
    #expect(reports.map(\.reading.state) == [.away])
    #expect(reports.first?.address == device)
    let connected = Fixture.address("11:22:33:44:55:66")
    let result9 = estimator.setConnected(connected, true, now: t0)
    #expect(result9?.state == .present)
    let result10 = estimator.expire(now: t0 + 1000)
    #expect(result10.allSatisfy { $0.address != connected || $0.reading.state == .present })
    #expect(estimator.state(of: connected) == .present)
    let result11 = estimator.setConnected(connected, false, now: t0 + 1000)
    #expect(result11 == nil, "just seen: still present")
    let result12 = estimator.expire(now: t0 + 1030)
    #expect(result12.contains { $0.address == connected && $0.reading.state == .away })
  }

  @Test("without a state change only a large, not too frequent mean change is reported")
  func reportThrottle() {
    var estimator = PresenceEstimator(halfLife: 1, rssiChange: 3, reportInterval: 10)
    let result13 = estimator.record(device, rssi: -60, now: t0)
    #expect(result13 != nil)
    let result14 = estimator.record(device, rssi: -61, now: t0 + 11)
    #expect(result14 == nil, "small change")
    let result15 = estimator.record(device, rssi: -70, now: t0 + 12)
    #expect(result15?.rssi.map { $0 < -63 } == true)
    let result16 = estimator.record(device, rssi: -50, now: t0 + 13)
    #expect(result16 == nil, "too soon after the last")
  }

  @Test(
    "the sums kept as samples come and go give the sample-by-sample mean: over the cap, the window, gaps and a clock step back"
  )
  func keptSumsMatchTheMean() throws {
    var estimator = PresenceEstimator(
      halfLife: 2, window: 60, maximumSamples: 32, rssiChange: 0, reportInterval: 0)
    var now = t0
    var seed: UInt64 = 42
    var checked = 0
    for step in 0..<5000 {
      seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
      let rssi = -40 - Int(seed >> 58)  // -40 … -103
      // Mostly 0.05-0.8 s apart; now and then a gap longer than the window, or a step back.
      now += step % 997 == 500 ? 90 : step % 1499 == 700 ? -5 : Double(seed >> 60 + 1) * 0.05
      // Reported at every step (no minimum change or interval) but for the few after the step
      // back, which come "sooner than the interval" after the last report.
      if let reading = estimator.record(device, rssi: rssi, now: now) {
        let expected = PresenceEstimator.weightedMean(
          estimator.samples(of: device), now: now, halfLife: 2)
        #expect(abs((reading.rssi ?? .nan) - (expected ?? .nan)) < 1e-9, "step \(step)")
        checked += 1
      }
      if step % 10 == 0 {
        // Later, with samples leaving the window (on a copy: expiry reports count as reports).
        var copy = estimator
        let later = now + Double(step % 70)
        if let reading = copy.expire(now: later).first?.reading {
          let expected = PresenceEstimator.weightedMean(
            copy.samples(of: device), now: later, halfLife: 2)
          #expect(abs((reading.rssi ?? .nan) - (expected ?? .nan)) < 1e-9, "step \(step) later")
        }
      }
    }
    #expect(checked > 4900)
  }

  @Test("a sample from far before the others (a clock stepped back hours) leaves the mean finite")
  func farStepBack() throws {
    var estimator = PresenceEstimator(
      halfLife: 2, window: 10_000, rssiChange: 0, reportInterval: 0)
    _ = estimator.record(device, rssi: -50, now: t0)
    _ = estimator.record(device, rssi: -60, now: t0 + 1)
    _ = estimator.record(device, rssi: -70, now: t0 - 3000)  // 1,500 half-lives back
    let reading = try #require(estimator.expire(now: t0 + 2).first?.reading)
    let expected = try #require(
      PresenceEstimator.weightedMean(estimator.samples(of: device), now: t0 + 2, halfLife: 2))
    let mean = try #require(reading.rssi)
    #expect(mean.isFinite && abs(mean - expected) < 1e-9)
  }

  @Test("history is bounded by window and sample count")
  func boundedHistory() {
    var estimator = PresenceEstimator(window: 60, maximumSamples: 8)
    for second in 0..<100 {
      _ = estimator.record(device, rssi: -60, now: t0 + Double(second) * 0.1)
    }
    #expect(estimator.samples(of: device).count == 8)
    _ = estimator.record(device, rssi: -60, now: t0 + 100)
    #expect(estimator.samples(of: device).count == 1)
    estimator.forget(device)
    #expect(estimator.count == 0)
  }

  @Test("presence JSON is exact, RSSI rounded to 0.1 dB")
  func json() {
    let reading = PresenceEstimator.Reading(state: .present, rssi: -63.24, lastSeen: t0)
    #expect(
      reading.json(gateway: Fixture.gateway).serialized()
        == #"{"state":"present","rssi":-63.2,"gw":"pi","last_seen":1700000000000}"#)
    let away = PresenceEstimator.Reading(state: .away, rssi: nil, lastSeen: t0 + 0.25)
    #expect(
      away.json(gateway: Fixture.gateway).serialized()
        == #"{"state":"away","gw":"pi","last_seen":1700000000250}"#)
  }
}
