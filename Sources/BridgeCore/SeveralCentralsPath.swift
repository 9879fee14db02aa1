/// How a transfer reaches two or more connected centrals (`peripheral.several_centrals`) when
/// the stack takes notifications through a socket (BlueZ's `AcquireNotify`), which it grants
/// for the first subscriber only and which then carries every value to every subscriber.
public enum SeveralCentralsPath: String, CaseIterable, Sendable, Hashable {
  /// Let go of the socket when a second device connects; values go as D-Bus signals, and
  /// every later subscription is seen (`StartNotify`). Chunks are cut for the smallest MTU a
  /// read or write told (20 bytes when none did). The default.
  case signals
  /// Keep the socket: values keep the socket's back-pressure and rate, but BlueZ 5.66 reports
  /// neither a second subscription nor its MTU, so every other connected device counts as a
  /// subscriber once it has been connected for the grace period: chunks of 20 bytes unless
  /// its read or write told its MTU, and the text sent again when it is counted.
  case socket
}
