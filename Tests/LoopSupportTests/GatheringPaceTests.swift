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
  /// Feeds a stream of single items, read at once unless the pace gathers, and returns the
  /// items each turn took.
  private func turns(itemsEvery period: Double, count: Int, interval: Double) -> [Int] {
    var pace = GatheringPace(interval: interval, ceiling: 64)
    let arrivals = (0..<count).map { Double($0) * period + 1000 }
    var taken: [Int] = []
    var next = 0
    while next < arrivals.count {
      // The turn: when the next item comes, or when the gathering ends if that is later.
      let time = max(arrivals[next], pace.gatherUntil)
      var items = 0
      while next < arrivals.count && arrivals[next] <= time {
        items += 1
        next += 1
      }
      taken.append(items)
      pace.record(items, at: time)
    }
    return taken
  }

  @Test("an item every 60 ms with a 0.1-s interval: the first at once, then about 1.7 per turn")
  func betweenOneAndTwoPerInterval() {
    let taken = turns(itemsEvery: 0.06, count: 100, interval: 0.1)
    #expect(taken.first == 1)
    #expect(taken.reduce(0, +) == 100)
    #expect(taken.count <= 65, "turns: \(taken.count)")
  }

  @Test("five items per interval: about five per turn")
  func fivePerInterval() {
    let taken = turns(itemsEvery: 0.02, count: 100, interval: 0.1)
    #expect(taken.count <= 25, "turns: \(taken.count)")
  }

  @Test("an item every 0.2 s (slower than one per 1.25 intervals): each read at once")
  func slowStream() {
    let taken = turns(itemsEvery: 0.2, count: 20, interval: 0.1)
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

  @Test("a turn that delivered nothing changes nothing")
  func emptyTurn() {
    var pace = GatheringPace(interval: 0.1, ceiling: 8)
    pace.record(1, at: 1)
    pace.record(1, at: 1.05)
    #expect(record(&pace, 0, at: 1.07))
    #expect(abs(pace.gatherUntil - 1.15) < 1e-9)
  }
}
