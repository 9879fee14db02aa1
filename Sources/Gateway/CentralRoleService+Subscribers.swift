public import BridgeCore

extension CentralRoleService {
  /// Takes in what the peripheral role heard about its centrals, so that the one device
  /// registry holds them too (``CentralBridge/peripheralCentral(_:_:now:)``): a subscription
  /// (with its MTU), an MTU learnt later, an unsubscription, and the service stopping (every
  /// subscriber gone).
  ///
  /// - Parameter event: An event of the peripheral.
  public func peripheralEvent(_ event: PeripheralEvent) {
    switch event {
    case .subscribed(let central?, let mtu):
      driver.feed { bridge, now in
        bridge.peripheralCentral(central, DeviceRecord.Subscriber(mtu: mtu), now: now)
      }
    case .unsubscribed(let central?):
      driver.feed { bridge, now in bridge.peripheralCentral(central, nil, now: now) }
    case .mtu(let central, let mtu):
      driver.feed { bridge, now in
        guard bridge.discovery.registry[central]?.subscriber != nil else { return [] }
        return bridge.peripheralCentral(central, DeviceRecord.Subscriber(mtu: mtu), now: now)
      }
    case .stateChanged(let state) where state != .advertising:
      driver.feed { bridge, now in
        bridge.discovery.registry.records.filter { $0.subscriber != nil }.flatMap {
          bridge.peripheralCentral($0.address, nil, now: now)
        }
      }
    default: break
    }
  }
}
