extension AsyncStream where Element: Sendable {
  /// The stream's first element, or `nil` when none came within `timeout` (or the stream
  /// finished, or the task was cancelled).
  ///
  /// - Parameter timeout: The longest wait.
  /// - Returns: The first element.
  public func first(within timeout: Duration) async -> Element? {
    await withTaskGroup(of: Element?.self) { group in
      group.addTask {
        for await element in self { return element }
        return nil
      }
      group.addTask {
        try? await Task.sleep(for: timeout)
        return nil
      }
      let first = await group.next() ?? nil
      group.cancelAll()
      return first
    }
  }
}
