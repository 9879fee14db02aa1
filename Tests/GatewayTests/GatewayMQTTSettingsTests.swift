import BlueZ
import BridgeCore
import Gateway
import GatewaySettings
import Mosquitto
import Testing

@Suite("Gateway configuration → MQTT client settings")
struct GatewayMQTTSettingsTests {
  let topics = try! Topics(base: "home/ble", gateway: GatewayID("pi-1"))
  let instance = GatewayInstance(id: "0123456789abcdef", started: 1_700_000_000)

  @Test("the last will is the retained offline state on the gateway's state topic")
  func will() throws {
    let settings = MQTTClientConfiguration(
      gateway: GatewayConfiguration(), topics: topics, instance: instance)
    let will = try #require(settings.will)
    #expect(will.topic == "home/ble/bridge/pi-1/state")
    #expect(will.text == #"{"state":"offline","instance":"0123456789abcdef"}"#)
    #expect(will.retain)
    #expect(will.qos == .atLeastOnce)
  }

  @Test(
    "the client id defaults to gatt2mqtt-<gateway id>-<run> (gatt2mqtt-<gateway id> for a persistent session); an explicit one wins"
  )
  func clientID() {
    var configuration = GatewayConfiguration()
    #expect(
      MQTTClientConfiguration(gateway: configuration, topics: topics, instance: instance).clientID
        == "gatt2mqtt-pi-1-0123456789abcdef")
    configuration.mqtt.cleanSession = false
    #expect(
      MQTTClientConfiguration(gateway: configuration, topics: topics, instance: instance).clientID
        == "gatt2mqtt-pi-1")
    configuration.mqtt.clientID = "custom"
    #expect(
      MQTTClientConfiguration(gateway: configuration, topics: topics, instance: instance).clientID
        == "custom")
  }

  @Test("broker, protocol, credentials, reconnect and queue settings carry over")
  func carryOver() {
    var configuration = GatewayConfiguration()
    configuration.mqtt.host = "broker.lan"
    configuration.mqtt.port = 8883
    configuration.mqtt.protocolVersion = .v5
    configuration.mqtt.username = "u"
    configuration.mqtt.password = "p"
    configuration.mqtt.reconnect.minDelay = 0.5
    configuration.mqtt.reconnect.maxDelay = 30
    configuration.mqtt.offlineQueue.maxMessages = 42
    configuration.mqtt.offlineQueue.policy = .dropNewest
    let settings = MQTTClientConfiguration(
      gateway: configuration, topics: topics, instance: instance)
    #expect(settings.host == "broker.lan")
    #expect(settings.port == 8883)
    #expect(settings.protocolVersion == .v5)
    #expect(settings.username == "u")
    #expect(settings.password == "p")
    #expect(settings.minReconnectDelay == 0.5)
    #expect(settings.maxReconnectDelay == 30)
    #expect(settings.offlineQueueCapacity == 42)
    #expect(settings.dropPolicy == .dropNewest)
    #expect(settings.tls == nil)
  }

  @Test("TLS settings appear only when TLS is enabled")
  func tls() {
    var configuration = GatewayConfiguration()
    configuration.mqtt.tls.caFile = "/ca.pem"
    #expect(
      MQTTClientConfiguration(gateway: configuration, topics: topics, instance: instance).tls == nil
    )
    configuration.mqtt.tls.enabled = true
    configuration.mqtt.tls.insecure = true
    let tls = MQTTClientConfiguration(gateway: configuration, topics: topics, instance: instance)
      .tls
    #expect(tls?.caFile == "/ca.pem")
    #expect(tls?.insecure == true)
  }

  @Test("inbound bounds: the client never keeps more than the largest topic bound")
  func inboundBounds() {
    var configuration = GatewayConfiguration()
    configuration.mqtt.inbound = .init(maxRequestBytes: 4096, bufferBytes: 1 << 20)
    configuration.peripheral.maxTextBytes = 100
    var settings = MQTTClientConfiguration(
      gateway: configuration, topics: topics, instance: instance)
    #expect(settings.maxIncomingMessageBytes == 4096)
    #expect(settings.incomingBufferBytes == 1 << 20)
    configuration.peripheral.maxTextBytes = 1 << 20
    settings = MQTTClientConfiguration(gateway: configuration, topics: topics, instance: instance)
    #expect(settings.maxIncomingMessageBytes == (1 << 20) + 1024)
  }

  @Test(
    "the publishers' read window follows bluetooth.batch_window: 50 ms longer, never below 50 ms"
  )
  func publisherReadWindow() {
    var configuration = GatewayConfiguration()
    #expect(configuration.bluetooth.batchWindow == 0.1)
    let settings = {
      MQTTClientConfiguration(gateway: configuration, topics: topics, instance: instance)
    }
    #expect(abs(settings().publisherReadWindow - 0.15) < 1e-9)
    configuration.bluetooth.batchWindow = 0.25
    #expect(abs(settings().publisherReadWindow - 0.3) < 1e-9)
    configuration.bluetooth.batchWindow = 0
    #expect(settings().publisherReadWindow == 0.05)
  }

  @Test("the BlueZ central keeps as many devices as bluetooth.max_devices")
  func blueZSettings() {
    var configuration = GatewayConfiguration()
    configuration.bluetooth.maxDevices = 20_000
    #expect(BlueZCentralConfiguration(gateway: configuration).maxDevices == 20_000)
  }

  @Test("bluetooth.scan_method reaches the BlueZ central; dbus by default")
  func blueZScanMethod() {
    var configuration = GatewayConfiguration()
    #expect(BlueZCentralConfiguration(gateway: configuration).scanMethod == .dbus)
    configuration.bluetooth.scanMethod = .management
    #expect(BlueZCentralConfiguration(gateway: configuration).scanMethod == .management)
  }

  @Test(
    "bluetooth.batch_window reaches the BlueZ central and its bus connection's signals in milliseconds; 100 ms by default, 0 off"
  )
  func blueZBatchWindow() {
    var configuration = GatewayConfiguration()
    #expect(BlueZCentralConfiguration(gateway: configuration).batchWindow == .milliseconds(100))
    #expect(
      BlueZCentralConfiguration(gateway: configuration).bus.signalGathering == .milliseconds(100))
    configuration.bluetooth.batchWindow = 0.25
    #expect(BlueZCentralConfiguration(gateway: configuration).batchWindow == .milliseconds(250))
    #expect(
      BlueZCentralConfiguration(gateway: configuration).bus.signalGathering == .milliseconds(250))
    configuration.bluetooth.batchWindow = 0.0001
    #expect(BlueZCentralConfiguration(gateway: configuration).batchWindow == .microseconds(100))
    configuration.bluetooth.batchWindow = 0
    #expect(BlueZCentralConfiguration(gateway: configuration).batchWindow == .zero)
    #expect(BlueZCentralConfiguration(gateway: configuration).bus.signalGathering == .zero)
  }
}
