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
/// Each ``probe(within:)`` asks every loop that is not still busy with an earlier question, each
/// in its own task (a hung loop never holds up the others or the monitor), and waits up to the
/// limit. A loop is stalled while a question to it has been waiting longer than the limit, or
/// when its last answer was no (a D-Bus connection that is gone).
final class LoopMonitor: Sendable {
  private struct Probe {
    /// When the question now waiting was asked; `nil` when none waits.
    var asked: ContinuousClock.Instant?
    /// Whether the last answer was yes.
    var answered = true
  }

  let checks: [LivenessCheck]
  private let probes: Mutex<[Probe]>

  /// Watches `checks`.
  init(_ checks: [LivenessCheck]) {
    self.checks = checks
    probes = Mutex(Array(repeating: Probe(), count: checks.count))
  }

  /// Asks every loop that is not busy, and waits until each answered or `limit` passed.
  /// - Parameter limit: How long a loop may take to answer.
  /// - Returns: The loops stalled after the wait (``stalled(limit:)``).
  func probe(within limit: Duration) async -> [String] {
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
        probes.withLock {
          $0[index].asked = nil
          $0[index].answered = answered
        }
      }
    }
    let deadline = now + limit
    while ContinuousClock.now < deadline, probes.withLock({ $0.contains { $0.asked != nil } }) {
      do {
        try await Task.sleep(for: .milliseconds(10))
      } catch {
        break  // shutting down: no busy wait on a loop that hangs
      }
    }
    return stalled(limit: limit)
  }

  /// The names of the loops stalled now: asked more than `limit` ago and not answered, or whose
  /// last answer was no.
  func stalled(limit: Duration) -> [String] {
    let now = ContinuousClock.now
    return probes.withLock { probes in
      checks.indices.compactMap { index in
        let probe = probes[index]
        if let asked = probe.asked, now - asked >= limit { return checks[index].name }
        return probe.answered ? nil : checks[index].name
      }
    }
  }
}
