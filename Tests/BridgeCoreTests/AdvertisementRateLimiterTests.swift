import BridgeCore
import Testing

@Suite("Advertisement rate limiting over simulated time")
struct AdvertisementRateLimiterTests {
  let t0 = Fixture.t0

  /// Feeds `(seconds after t0, advertisement)` pairs and returns the offsets published.
  func run(_ limiter: inout AdvertisementRateLimiter, _ feed: [(Double, Advertisement)]) -> [Double]
  {
    feed.compactMap { offset, advert in
      limiter.shouldPublish(advert, now: t0 + offset) ? offset : nil
    }
  }

  @Test("an unchanged device is published first, then once per interval")
  func heartbeat() {
    var limiter = AdvertisementRateLimiter(interval: 10, minimumInterval: 1, rssiChange: 5)
    let feed = stride(from: 0.0, through: 25, by: 0.5).map { ($0, Fixture.advert(rssi: -60)) }
    let result1 = run(&limiter, feed)
    #expect(result1 == [0, 10, 20])
  }

  @Test("a content change is published once the minimum interval has passed")
  func change() {
    var limiter = AdvertisementRateLimiter(interval: 10, minimumInterval: 1, rssiChange: 5)
    var changed = Fixture.advert()
    changed.manufacturerData = [0x0499: [0x05, 0x10]]
    let feed: [(Double, Advertisement)] = [
      (0, Fixture.advert()), (0.5, changed), (1.2, changed), (1.5, changed), (3, Fixture.advert()),
    ]
    let result2 = run(&limiter, feed)
    #expect(result2 == [0, 1.2, 3])
  }

  @Test("a minimum interval of 0: every change, even two at one time (one batch); no repeat")
  func everyChange() {
    var limiter = AdvertisementRateLimiter(interval: 10, minimumInterval: 0, rssiChange: 5)
    var changed = Fixture.advert()
    changed.manufacturerData = [0x0499: [0x05, 0x10]]
    let feed: [(Double, Advertisement)] = [
      (0, Fixture.advert()), (0, changed), (0, changed), (0.2, Fixture.advert()),
    ]
    #expect(run(&limiter, feed) == [0, 0, 0.2])
  }

  @Test("RSSI jitter below the threshold is no change; a jump is")
  func rssiJitter() {
    var limiter = AdvertisementRateLimiter(interval: 10, minimumInterval: 1, rssiChange: 5)
    let feed: [(Double, Advertisement)] = [
      (0, Fixture.advert(rssi: -71)), (2, Fixture.advert(rssi: -73)),
      (3, Fixture.advert(rssi: -67)),
      (4, Fixture.advert(rssi: -76)), (6, Fixture.advert(rssi: -82)),
    ]
    let result3 = run(&limiter, feed)
    #expect(result3 == [0, 4, 6])
  }

  @Test("devices are limited independently, and a forgotten device starts afresh")
  func perDevice() {
    var limiter = AdvertisementRateLimiter()
    let a = Fixture.advert("A4:C1:38:1E:29:DF")
    let b = Fixture.advert("11:22:33:44:55:66")
    let result4 = limiter.shouldPublish(a, now: t0)
    #expect(result4)
    let result5 = limiter.shouldPublish(b, now: t0 + 0.1)
    #expect(result5)
    let result6 = limiter.shouldPublish(a, now: t0 + 0.2)
    #expect(!result6)
    #expect(limiter.count == 2)
    limiter.forget(a.address)
    #expect(limiter.count == 1)
    let result7 = limiter.shouldPublish(a, now: t0 + 0.3)
    #expect(result7)
  }

  @Test("a clock stepping back counts as no time passed")
  func clockStep() {
    var limiter = AdvertisementRateLimiter(interval: 10, minimumInterval: 1)
    var changed = Fixture.advert()
    changed.txPower = 8
    let result8 = limiter.shouldPublish(Fixture.advert(), now: t0 + 100)
    #expect(result8)
    let result9 = limiter.shouldPublish(changed, now: t0 + 50)
    #expect(!result9)
    let result10 = limiter.shouldPublish(changed, now: t0 + 101)
    #expect(result10)
  }
}
