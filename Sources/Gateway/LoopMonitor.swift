import Synchronization

/// One loop the gateway needs alive, and how to ask it whether it answers.
public struct LivenessCheck: Sendable {
  /// What the loop is, as health's `reasons` and the log name it (`"D-Bus system bus"`).
  public let name: String
  /// Asks the loop; `true` when it answered. A loop that hangs never returns.
  public let answers: @Sendable () async -> Bool

  /// Makes a check.
  /// - Parameters:
  ///   - name: What the loop is, for a person.
  ///   - answers: Asks the loop; `true` when it answered.
  public init(name: String, answers: @escaping @Sendable () async -> Bool) {
    self.name = name
    self.answers = answers
  }
}

/// The one notion of a *stalled* loop that the systemd watchdog and health's `healthy` share.
///
/// Each ``ask()`` asks every loop that is not still busy with an earlier question, each in its
/// own task (a hung loop never holds up the others or the monitor), and returns at once. A loop
/// is stalled while a question to it has been waiting longer than the limit, when its last
/// answer took longer than the limit (until one comes in time), or when its last answer was no
/// (a D-Bus connection that is gone). The supervisor judges one round's questions at the next
/// round (``stalled(limit:)``, a period later), then asks again: nothing waits for the answers,
/// so a round costs the questions' own tasks and arms no timer.
final class LoopMonitor: Sendable {
  private struct Probe {
    /// When the question now waiting was asked; `nil` when none waits.
    var asked: ContinuousClock.Instant?
    /// Whether the last answer was yes.
    var answered = true
    /// How long the last answer took.
    var took: Duration = .zero
  }

  let checks: [LivenessCheck]
  private let probes: Mutex<[Probe]>

  /// Watches `checks`.
  init(_ checks: [LivenessCheck]) {
    self.checks = checks
    probes = Mutex(Array(repeating: Probe(), count: checks.count))
  }

  /// Asks every loop that is not busy with an earlier question, each in a task of its own, and
  /// returns without waiting for the answers.
  func ask() {
    let now = ContinuousClock.now
    for index in checks.indices {
      let ask = probes.withLock { probes in
        guard probes[index].asked == nil else { return false }
        probes[index].asked = now
        return true
      }
      guard ask else { continue }
      let check = checks[index].answers
      Task {
        let answered = await check()
        let took = ContinuousClock.now - now
        probes.withLock {
          $0[index].asked = nil
          $0[index].answered = answered
          $0[index].took = took
        }
      }
    }
  }

  /// The names of the loops whose question is still waiting for its answer.
  var waiting: [String] {
    probes.withLock { probes in
      checks.indices.compactMap { probes[$0].asked == nil ? nil : checks[$0].name }
    }
  }

  /// The names of the loops stalled now: asked more than `limit` ago and not answered, or whose
  /// last answer took longer than `limit` or was no.
  func stalled(limit: Duration) -> [String] {
    let now = ContinuousClock.now
    return probes.withLock { probes in
      checks.indices.compactMap { index in
        let probe = probes[index]
        if let asked = probe.asked, now - asked >= limit { return checks[index].name }
        // A late answer is a stall too: otherwise a loop answering within one to two periods
        // would be stalled at one round and well at the next, in turn.
        return probe.answered && probe.took < limit ? nil : checks[index].name
      }
    }
  }
}
