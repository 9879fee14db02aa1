/// Decides, per device, which advertisements are published (C2): a device advertising several
/// times a second must not flood the broker, yet a change must show quickly.
///
/// An advertisement is published when
/// - it is the device's first, or
/// - its content changed (name, data, UUIDs, TX power, address type; see
///   ``Advertisement/hasSameContent(as:)``) or its RSSI moved by at least ``rssiChange`` dB since
///   the last published one, and at least ``minimumInterval`` seconds have passed since then, or
/// - ``interval`` seconds have passed since the last published one, changed or not.
///
/// A change held back by ``minimumInterval`` is not queued: the device's next advertisement
/// after the interval carries it. The state is one entry per device; the owner bounds it by
/// calling ``forget(_:)`` for every device it forgets (``DiscoveryBridge`` does).
public struct AdvertisementRateLimiter: Sendable {
  /// Seconds after which an unchanged advertisement is published again.
  public var interval: Double
  /// The fewest seconds between two published advertisements of one device, even when changed.
  public var minimumInterval: Double
  /// The RSSI difference, in dB, that counts as a change.
  public var rssiChange: Int

  private var lastPublished: [BluetoothAddress: (advertisement: Advertisement, time: Double)] = [:]

  /// Makes a limiter that has published nothing yet.
  ///
  /// - Parameters:
  ///   - interval: Seconds after which an unchanged advertisement is published again
  ///     (`advertisement.interval`, default 10).
  ///   - minimumInterval: The fewest seconds between two publications for one device
  ///     (`advertisement.min_interval`, default 1).
  ///   - rssiChange: The RSSI difference in dB that counts as a change
  ///     (`advertisement.rssi_change`, default 5).
  public init(interval: Double = 10, minimumInterval: Double = 1, rssiChange: Int = 5) {
    self.interval = interval
    self.minimumInterval = minimumInterval
    self.rssiChange = rssiChange
  }

  /// Decides whether to publish an advertisement, and remembers it when so.
  ///
  /// Time going backwards (a clock step) counts as no time passed.
  ///
  /// - Parameters:
  ///   - advertisement: The advertisement received.
  ///   - now: The time, in seconds since the Unix epoch.
  /// - Returns: `true` when it should be published now.
  public mutating func shouldPublish(_ advertisement: Advertisement, now: Double) -> Bool {
    let address = advertisement.address
    // One look-up; the last one is compared and replaced where it lies (read through the
    // dictionary's subscript, it would be copied and released for every advertisement).
    guard let index = lastPublished.index(forKey: address) else {
      lastPublished[address] = (advertisement, now)
      return true
    }
    let rules = (interval, minimumInterval, rssiChange)
    return Self.decide(advertisement, now, rules, last: &lastPublished.values[index])
  }

  private static func decide(
    _ advertisement: Advertisement, _ now: Double,
    _ rules: (interval: Double, minimumInterval: Double, rssiChange: Int),
    last: inout (advertisement: Advertisement, time: Double)
  ) -> Bool {
    let elapsed = max(0, now - last.time)
    let publish: Bool
    if elapsed >= rules.interval {
      publish = true
    } else if elapsed >= rules.minimumInterval {
      publish =
        !advertisement.hasSameContent(as: last.advertisement)
        || rssiMoved(from: last.advertisement.rssi, to: advertisement.rssi, rules.rssiChange)
    } else {
      publish = false
    }
    if publish { last = (advertisement, now) }
    return publish
  }

  /// Drops what is remembered about a device.
  ///
  /// - Parameter address: The device's address.
  public mutating func forget(_ address: BluetoothAddress) {
    lastPublished[address] = nil
  }

  /// The number of devices remembered.
  public var count: Int { lastPublished.count }

  private static func rssiMoved(from old: Int?, to new: Int?, _ rssiChange: Int) -> Bool {
    switch (old, new) {
    case (nil, nil): false
    case (let old?, let new?): abs(new - old) >= rssiChange
    default: true
    }
  }
}
