import BridgeCore
import Testing

@testable import GatewaySettings

@Suite("Configuration consistency")
struct ConfigurationConsistencyTests {
  @Test func certificateWithoutKeyIsAnError() async throws {
    let file = try ConfigurationFixture.file("mqtt:\n  tls:\n    cert_file: /c.pem\n")
    let error = try #require(await ConfigurationFixture.error(file: file))
    #expect(error.key == "mqtt.tls.cert_file")
    #expect(error.source == file)
    #expect(error.line == 3)
    #expect(
      error.message == "a client certificate needs its private key: set mqtt.tls.key_file too")
  }

  @Test func keyWithoutCertificateIsAnError() async throws {
    let error = try #require(
      await ConfigurationFixture.error(environment: ["GATT2MQTT_MQTT_TLS_KEY_FILE": "/k.pem"]))
    #expect(error.key == "mqtt.tls.key_file")
    #expect(error.source == "environment")
  }

  @Test func certificateAndKeyFromDifferentSourcesAreAccepted() async throws {
    let file = try ConfigurationFixture.file("mqtt:\n  tls:\n    cert_file: /c.pem\n")
    let configuration = try await ConfigurationLoader.load(
      file: file, environment: [:], arguments: ["--mqtt.tls.key-file", "/k.pem"])
    #expect(configuration.mqtt.tls.certFile == "/c.pem")
    #expect(configuration.mqtt.tls.keyFile == "/k.pem")
  }

  @Test func caFileTurnsTLSOnWhenEnabledIsUnset() async throws {
    let configuration = try await ConfigurationLoader.load(
      file: nil, environment: ["GATT2MQTT_MQTT_TLS_CA_FILE": "/ca.pem"], arguments: [])
    #expect(configuration.mqtt.tls.enabled == true)
  }

  @Test func insecureAloneTurnsTLSOn() async throws {
    let configuration = try await ConfigurationLoader.load(
      file: nil, environment: [:], arguments: ["--mqtt.tls.insecure"])
    #expect(configuration.mqtt.tls.enabled == true)
  }

  @Test func tlsStaysOffWithoutTLSSettings() async throws {
    let configuration = try await ConfigurationLoader.load(
      file: nil, environment: [:], arguments: ["--mqtt.tls.insecure=false"])
    #expect(configuration.mqtt.tls.enabled == false)
  }

  @Test func tlsSettingWithTLSExplicitlyDisabledIsAnError() async throws {
    let file = try ConfigurationFixture.file(
      "mqtt:\n  tls:\n    enabled: false\n    ca_file: /ca.pem\n")
    let error = try #require(await ConfigurationFixture.error(file: file))
    #expect(error.key == "mqtt.tls.ca_file")
    #expect(error.line == 4)
    #expect(
      error.message
        == "TLS is disabled by mqtt.tls.enabled: false (from \(file):3); "
        + "set mqtt.tls.enabled to true, or remove mqtt.tls.ca_file")
  }

  @Test func explicitlyEnabledTLSNeedsNoFiles() async throws {
    let configuration = try await ConfigurationLoader.load(
      file: nil, environment: ["GATT2MQTT_MQTT_TLS_ENABLED": "true"], arguments: [])
    #expect(configuration.mqtt.tls == .init(enabled: true))
  }

  @Test func minimumDelayAboveMaximumIsAnError() async throws {
    let file = try ConfigurationFixture.file("mqtt:\n  reconnect:\n    min_delay: 90\n")
    let error = try #require(await ConfigurationFixture.error(file: file))
    #expect(error.key == "mqtt.reconnect.min_delay")
    #expect(error.line == 3)
    #expect(
      error.message
        == "mqtt.reconnect.min_delay (90) must not exceed mqtt.reconnect.max_delay (60, the default)"
    )
  }

  @Test func maximumDelayBelowTheDefaultMinimumIsReportedOnTheMaximum() async throws {
    let error = try #require(
      await ConfigurationFixture.error(arguments: ["--mqtt.reconnect.max-delay=0.5"]))
    #expect(error.key == "mqtt.reconnect.max_delay")
    #expect(error.source == "command line")
  }
}

@Suite("Bluetooth configuration consistency")
struct BluetoothConfigurationConsistencyTests {
  @Test func leaveThresholdAboveEnterThresholdIsAnError() async {
    let error = await ConfigurationFixture.error(
      arguments: [
        "--bluetooth.presence.enter_rssi", "-90", "--bluetooth.presence.leave_rssi", "-80",
      ])
    #expect(error?.key == "bluetooth.presence.leave_rssi")
    #expect(error?.message.contains("hysteresis") == true)
  }

  @Test func forgettingBeforeGoingOfflineIsAnError() async {
    let error = await ConfigurationFixture.error(
      environment: ["GATT2MQTT_BLUETOOTH_FORGET_AFTER": "10"])
    #expect(error?.key == "bluetooth.forget_after")
    #expect(error?.source == ConfigurationError.environmentSource)
  }

  @Test func discoveryBridgeSettingsFollowTheKeys() async throws {
    let configuration = try await ConfigurationLoader.load(
      file: nil, environment: [:],
      arguments: [
        "--bluetooth.min_rssi", "-70", "--bluetooth.adapter", "hci1", "--bluetooth.max_devices",
        "7", "--bluetooth.filter.uuids", "180f,0000feaa-0000-1000-8000-00805f9b34fb",
        "--bluetooth.filter.name", "Thermo*", "--bluetooth.filter.deny", "aa:bb:cc:dd:ee:ff",
      ])
    let bridge = configuration.discoveryBridgeConfiguration
    #expect(bridge.filter.rssiFloor == -70)
    #expect(bridge.adapters == ["hci1"])
    #expect(bridge.registry.capacity == 7)
    #expect(bridge.filter.serviceUUIDs.count == 2)
    let feaa = try BluetoothUUID("feaa")
    let denied = try BluetoothAddress("AA:BB:CC:DD:EE:FF")
    #expect(bridge.filter.serviceUUIDs.contains(feaa))
    #expect(bridge.filter.namePattern != nil)
    #expect(bridge.filter.deny == [denied])
    #expect(bridge.scanOnStart)
  }
}
