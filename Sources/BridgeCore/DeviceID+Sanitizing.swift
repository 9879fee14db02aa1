extension DeviceID {
  /// Makes a one-level id from any advertised name, as ``TopicSegment/sanitize(_:)-([UInt8])``
  /// does: wildcards, `/`, NUL, control and invisible characters and invalid UTF-8 become `_`,
  /// whitespace runs one space, at most 64 bytes. A name sanitised to `bridge` becomes
  /// `bridge_`, so it cannot collide with `<base>/bridge/…`.
  ///
  /// - Parameter name: The advertised name as received.
  public init(sanitizing name: [UInt8]) {
    let segment = TopicSegment.sanitize(name)
    // Safety of `try!`: a sanitised segment is a valid single level and never `bridge`.
    self = try! DeviceID(friendlyName: segment == "bridge" ? "bridge_" : segment)
  }
}
