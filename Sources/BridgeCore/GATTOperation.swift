/// One GATT operation the bridge asks the gateway to carry out on a ``GATTCentral``, and to
/// report back with ``GATTBridge/operationFinished(_:result:now:)``.
///
/// The bridge hands out at most one operation per characteristic at a time.
public struct GATTOperation: Sendable, Hashable {
  /// What to do.
  public enum Kind: Sendable, Hashable {
    /// Read the value (``GATTCentral/read(_:timeout:)``).
    case read
    /// Write a value (``GATTCentral/write(_:value:withResponse:timeout:)``).
    case write([UInt8], withResponse: Bool)
    /// Turn notifications on or off (``GATTCentral/setNotify(_:enabled:timeout:)``).
    case notify(Bool)

    /// `read`, `write` or `notify`, as in results.
    public var name: String {
      switch self {
      case .read: "read"
      case .write: "write"
      case .notify: "notify"
      }
    }
  }

  /// The operation's number, unique within one bridge.
  public var id: UInt64
  /// The characteristic.
  public var characteristic: GATTCharacteristicID
  /// What to do.
  public var kind: Kind
  /// The most seconds to wait.
  public var timeout: Double
  /// How to turn notifications on (for `notify(true)`; from the configuration's rules).
  public var notifyMethod: NotifyMethod = .auto

  /// Makes an operation.
  ///
  /// - Parameters:
  ///   - id: The operation's number.
  ///   - characteristic: The characteristic.
  ///   - kind: What to do.
  ///   - timeout: The most seconds to wait.
  public init(id: UInt64, characteristic: GATTCharacteristicID, kind: Kind, timeout: Double) {
    self.id = id
    self.characteristic = characteristic
    self.kind = kind
    self.timeout = timeout
  }
}
