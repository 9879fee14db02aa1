import BlueZ
import BridgeCore

extension BlueZSession.Statistics {
  /// The `bluez` section of `health`: `{"synced":true,"connections":1,"snapshots":1,
  /// "snapshots_after_loss":0}` — whether the gateway mirrors a running bluetoothd, the bus
  /// connections opened, the `GetManagedObjects` snapshots taken, and those taken because the
  /// bus connection dropped signals while the gateway fell behind (each a warning in the log).
  var json: JSONObject {
    [
      "synced": .bool(synced), "connections": .integer(Int64(connections)),
      "snapshots": .integer(Int64(snapshots)),
      "snapshots_after_loss": .integer(Int64(snapshotsAfterLoss)),
    ]
  }
}
