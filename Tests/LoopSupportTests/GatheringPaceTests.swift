import Testing

@testable import LoopSupport

/// `pace.record(…)` as a value (the `#expect` macro cannot call a mutating method).
private func record(
  _ pace: inout GatheringPace, _ count: Int, at time: Double, moreWaiting: Bool = false
)
  -> Bool
{
  pace.record(count, at: time, moreWaiting: moreWaiting)
}

@Suite("Gathering pace: when a reader leaves a fast source unread until its interval ends")
struct GatheringPaceTests {
  /// Feeds a stream of single items to a reader paced by `GatheringPace`, and returns the
  /// items each wake-up took: a reader wakes when an item comes while it reads at once, and
  /// `late` seconds after a gathering interval ends (taking what is waiting then, maybe
  /// nothing), telling the pace when it looked, as the datagram reader does.
  private func wakeUps(
    itemsEvery period: Double, count: Int, interval: Double, late: Double = 0
  ) -> [Int] {
    var pace = GatheringPace(interval: interval, ceiling: 64)
    let arrivals = (0..<count).map { Double($0) * period + 1000 }
    var taken: [Int] = []
    var next = 0
    var gathering = false
    while next < arrivals.count {
      let time = gathering ? pace.gatherUntil + late : arrivals[next]
      if gathering { pace.looking(at: time) }
      var items = 0
      while next < arrivals.count && arrivals[next] <= time {
        items += 1
        next += 1
      }
      taken.append(items)
      gathering = items > 0 ? pace.record(items, at: time) : false
    }
    return taken
  }

  @Test(
    "an item every 60 ms with a 0.1-s interval: the first at once, then one wake-up per interval")
  func betweenOneAndTwoPerInterval() {
    let taken = wakeUps(itemsEvery: 0.06, count: 100, interval: 0.1)
    #expect(taken.first == 1)
    #expect(taken.reduce(0, +) == 100)
    #expect(taken.count <= 63, "wake-ups: \(taken.count)")
    #expect(!taken.contains(0))
  }

  @Test("five items per interval: about five per wake-up")
  func fivePerInterval() {
    let taken = wakeUps(itemsEvery: 0.02, count: 100, interval: 0.1)
    #expect(taken.count <= 25, "wake-ups: \(taken.count)")
  }

  @Test(
    "items 0.11 s apart (slower than one per interval, within its slack): each read at once, no empty wake-up"
  )
  func justSlowerThanTheInterval() {
    let taken = wakeUps(itemsEvery: 0.11, count: 50, interval: 0.1)
    #expect(taken == Array(repeating: 1, count: 50))
  }

  @Test("items 0.09 s apart: no empty wake-up, each wake-up takes one")
  func justFasterThanTheInterval() {
    let taken = wakeUps(itemsEvery: 0.09, count: 50, interval: 0.1)
    #expect(taken.reduce(0, +) == 50)
    #expect(!taken.contains(0), "\(taken)")
  }

  @Test("a stream that slows down costs one empty wake-up, then each item is read at once")
  func slowingDown() {
    var pace = GatheringPace(interval: 0.1, ceiling: 64)
    #expect(!record(&pace, 1, at: 10))
    #expect(record(&pace, 1, at: 10.05))
    #expect(record(&pace, 2, at: 10.15))
    // The interval ending at 10.25 finds nothing; the next item comes at 10.4.
    #expect(!record(&pace, 1, at: 10.4))
    #expect(!record(&pace, 1, at: 10.55))
  }

  @Test("an item every 0.2 s (slower than one per interval): each read at once")
  func slowStream() {
    let taken = wakeUps(itemsEvery: 0.2, count: 20, interval: 0.1)
    #expect(taken == Array(repeating: 1, count: 20))
  }

  @Test("no interval: never gathers")
  func off() {
    var pace = GatheringPace(interval: 0, ceiling: 64)
    #expect(!record(&pace, 5, at: 1))
    #expect(!record(&pace, 5, at: 1.001))
    #expect(!pace.gathers(at: 1.001))
  }

  @Test("the first turn after a quiet spell reads at once; a quick second one gathers")
  func quietSpell() {
    var pace = GatheringPace(interval: 0.1, ceiling: 64)
    #expect(!record(&pace, 1, at: 10))
    #expect(record(&pace, 1, at: 10.05))
    #expect(pace.gathers(at: 10.1) && !pace.gathers(at: 10.15))
    #expect(!record(&pace, 1, at: 20))
  }

  @Test("at the ceiling, or with items left waiting, the source is read again at once")
  func ceilingAndBacklog() {
    var pace = GatheringPace(interval: 0.1, ceiling: 8)
    pace.record(1, at: 1)
    #expect(!record(&pace, 8, at: 1.01))
    #expect(!record(&pace, 3, at: 1.02, moreWaiting: true))
    #expect(record(&pace, 3, at: 1.03))
  }

  @Test("wake-ups 40 ms late at each interval's end: seven items a wake-up, no turn at once")
  func lateWakeUpsKeepGathering() {
    let taken = wakeUps(itemsEvery: 0.02, count: 100, interval: 0.1, late: 0.04)
    #expect(taken.reduce(0, +) == 100)
    // 2.8 s of items: a wake-up per 0.14 s (the interval and the lateness) and the first.
    #expect(taken.count <= 22, "wake-ups: \(taken)")
    #expect(taken.dropFirst(2).dropLast().allSatisfy { $0 >= 6 }, "\(taken)")
  }

  /// A pace with a 0.1-s interval that read an item at 10 at once and gathers since the next
  /// at 10.05, until 10.15.
  private func paceGatheringUntil1015() -> GatheringPace {
    var pace = GatheringPace(interval: 0.1, ceiling: 64)
    pace.record(1, at: 10)
    #expect(record(&pace, 1, at: 10.05))
    return pace
  }

  @Test("a late look that finds nothing: the next item, found later, is read at once")
  func lateLookFindsNothing() {
    var pace = paceGatheringUntil1015()
    pace.looking(at: 10.19)  // 40 ms after the interval's end
    #expect(!record(&pace, 1, at: 10.3))
  }

  @Test("only the first look after an interval counts, not one within it nor a later one")
  func firstLookCounts() {
    var pace = paceGatheringUntil1015()
    pace.looking(at: 10.1)  // still within the interval (until 10.15): not a look after it
    pace.looking(at: 10.16)
    #expect(record(&pace, 2, at: 10.18))  // within the slack of 10.16, not of 10.1 or 10.15
    // The interval ends at 10.28; the first look after it, then another source's turn.
    pace.looking(at: 10.3)
    pace.looking(at: 10.39)
    #expect(!record(&pace, 2, at: 10.4))
  }

  @Test("a lone item found at a late look may have come after the interval: read as slow")
  func loneItemAtALateLook() {
    var pace = paceGatheringUntil1015()
    pace.looking(at: 10.19)
    #expect(!record(&pace, 1, at: 10.19))
  }

  @Test("the clock's allowance stops at a quarter of the interval: a short interval still gathers")
  func shortIntervalStillGathers() {
    var pace = GatheringPace(interval: 0.004, ceiling: 64, clockResolution: 0.004)
    pace.record(1, at: 10)
    #expect(record(&pace, 1, at: 10.002))
    #expect(pace.gathers(at: 10.004))
  }

  @Test("with a coarse clock's resolution, an interval ending within it has ended")
  func clockResolution() {
    var pace = GatheringPace(interval: 0.1, ceiling: 64, clockResolution: 0.004)
    pace.record(1, at: 10)
    #expect(record(&pace, 1, at: 10.05))
    #expect(pace.gathers(at: 10.14))
    // The coarse clock reads 10.147 although the kernel's timer for 10.15 has fired.
    #expect(!pace.gathers(at: 10.147))
    pace.looking(at: 10.147)
    #expect(record(&pace, 3, at: 10.148))
  }

  @Test("a turn that delivered nothing changes nothing")
  func emptyTurn() {
    var pace = GatheringPace(interval: 0.1, ceiling: 8)
    pace.record(1, at: 1)
    pace.record(1, at: 1.05)
    #expect(record(&pace, 0, at: 1.07))
    #expect(abs(pace.gatherUntil - 1.15) < 1e-9)
  }
}
