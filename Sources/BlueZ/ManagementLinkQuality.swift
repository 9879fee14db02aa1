public import BridgeCore
import Dispatch

/// Reads connected devices' RSSI and transmit power through the kernel's Bluetooth management
/// interface (Get Connection Information), beside bluetoothd: the way Home Assistant's
/// Bluetooth stack reads the radio. Needs `CAP_NET_ADMIN` (root, or the capability in the
/// systemd unit); without it every reading fails with `not_permitted`.
///
/// Each reading opens a control-channel socket, asks, and closes it, on a private serial queue
/// (the kernel answers from its cache, or after one HCI round trip when the cached value is
/// older than a second or two).
public struct ManagementLinkQuality: LinkQualityReader {
  private static let queue = DispatchQueue(label: "gatt2mqtt.bluetooth-management")

  /// Seconds to wait for the kernel's answer.
  public var timeout: Double

  /// Makes a reader.
  ///
  /// - Parameter timeout: Seconds to wait for each answer (default 2).
  public init(timeout: Double = 2) {
    self.timeout = timeout
  }

  /// Reads the link to a connected device (see ``LinkQualityReader``).
  public func linkQuality(
    of address: BluetoothAddress, type: Advertisement.AddressType, adapter: String
  ) async throws(CentralError) -> LinkQuality {
    guard let index = ManagementPacket.index(of: adapter) else {
      throw CentralError(.unknownAdapter, message: "'\(adapter)' is not a controller (hciN)")
    }
    let command = ManagementPacket.getConnectionInformation(
      index: index, address: address, type: type)
    let timeout = self.timeout
    let result: Result<ManagementPacket.Reply, CentralError> = await withCheckedContinuation {
      continuation in
      Self.queue.async {
        do throws(CentralError) {
          continuation.resume(
            returning: .success(try ManagementSocket.query(command, index: index, timeout: timeout))
          )
        } catch {
          continuation.resume(returning: .failure(error))
        }
      }
    }
    switch result {
    case .failure(let error): throw error
    case .success(.quality(let quality)): return quality
    case .success(.failed(let status)):
      throw ManagementPacket.error(status: status, adapter: adapter, address: address)
    case .success(.unrelated):
      throw CentralError(.timeout, message: "no answer from the kernel")
    }
  }
}
