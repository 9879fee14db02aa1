extension String.UnicodeScalarView {
  /// The scalars without leading and trailing whitespace.
  func trimmingWhitespace() -> Substring.UnicodeScalarView {
    var slice = self[...]
    while let first = slice.first, first.properties.isWhitespace { slice.removeFirst() }
    while let last = slice.last, last.properties.isWhitespace { slice.removeLast() }
    return slice
  }
}
