import Foundation
import Testing

@testable import GatewaySettings

@Suite("Configuration file")
struct ConfigurationFileTests {
  @Test func everyKeyInTheFileReachesTheConfiguration() async throws {
    let configuration = try await ConfigurationLoader.load(
      file: ConfigurationFixture.everyKeyFile, environment: [:], arguments: [])
    #expect(configuration == ConfigurationFixture.everyKey)
  }

  @Test func missingFileIsAnErrorNamingThePath() async throws {
    let path = ConfigurationFixture.directory() + "/absent.yaml"
    let error = try #require(await ConfigurationFixture.error(file: path))
    #expect(error.source == path)
    #expect(error.key == nil)
    #expect(error.description == "\(path): configuration file not found")
  }

  @Test func directoryInsteadOfFileIsAnError() async throws {
    let path = ConfigurationFixture.directory()
    let error = try #require(await ConfigurationFixture.error(file: path))
    #expect(error.description == "\(path): is a directory, not a configuration file")
  }

  @Test func aFileLargerThanTheBoundIsRefusedUnread() async throws {
    // A path naming something that never ends (here /dev/zero) was read until memory ran out.
    let error = try #require(await ConfigurationFixture.error(file: "/dev/zero"))
    #expect(error.key == nil)
    #expect(
      error.description
        == "/dev/zero: the configuration file is larger than 256 KiB: is it the right file?")
  }

  @Test func unknownKeyIsReportedWithItsPathLineAndASuggestion() async throws {
    let path = try ConfigurationFixture.file("mqtt:\n  port: 1883\n  hots: broker.lan\n")
    let error = try #require(await ConfigurationFixture.error(file: path))
    #expect(error.key == "mqtt.hots")
    #expect(error.source == path)
    #expect(error.line == 3)
    #expect(error.description == "\(path):3: mqtt.hots: unknown key (did you mean 'mqtt.host'?)")
  }

  /// Suggestions compare names only within three edits in length: a huge unknown key (the config
  /// fuzzer's slowest input was a 6,000-character argument) gets none, and costs no distance
  /// table against every key.
  @Test func suggestionsSkipKeysTooDifferentInLength() {
    let keys = ConfigurationKey.all.map(\.path)
    #expect(
      KeySuggestion.closest(
        to: String(repeating: "mqtt.host", count: 700), among: keys, separator: ".") == nil)
    #expect(KeySuggestion.closest(to: "mqtt.hots", among: keys, separator: ".") == "mqtt.host")
    #expect(KeySuggestion.closest(to: "mqtt.hostt", among: keys, separator: ".") == "mqtt.host")
    #expect(KeySuggestion.closest(to: "mqtt.hst", among: keys, separator: ".") == "mqtt.host")
  }

  @Test func keyAtTheWrongLevelSuggestsWhereItBelongs() async throws {
    let path = try ConfigurationFixture.file("host: broker.lan\n")
    let error = try #require(await ConfigurationFixture.error(file: path))
    #expect(error.key == "host")
    #expect(error.message == "unknown key (did you mean 'mqtt.host'?)")
  }

  @Test func unknownSectionIsReported() async throws {
    let path = try ConfigurationFixture.file("gadgets:\n  foo: 1\n")
    let error = try #require(await ConfigurationFixture.error(file: path))
    #expect(error.key == "gadgets")
    #expect(error.message == "unknown key")
  }

  @Test func wrongTypeIsReportedWithTheExpectedTypeAndTheValue() async throws {
    let path = try ConfigurationFixture.file("mqtt:\n  port: abc\n")
    let error = try #require(await ConfigurationFixture.error(file: path))
    #expect(error.key == "mqtt.port")
    #expect(error.line == 2)
    #expect(
      error.description == "\(path):2: mqtt.port: expected an integer in 1...65535, got \"abc\"")
  }

  @Test func outOfRangeValueIsAnError() async throws {
    let path = try ConfigurationFixture.file("mqtt:\n  qos: 3\n")
    let error = try #require(await ConfigurationFixture.error(file: path))
    #expect(error.key == "mqtt.qos")
    #expect(error.message == "expected an integer in 0...2, got \"3\"")
  }

  @Test func nonPositiveSecondsAreAnError() async throws {
    let path = try ConfigurationFixture.file("gateway:\n  health_interval: 0\n")
    let error = try #require(await ConfigurationFixture.error(file: path))
    #expect(error.key == "gateway.health_interval")
    #expect(error.message == "expected a number greater than 0 and at most 86400, got \"0\"")
  }

  @Test func zeroIsAllowedWhereItTurnsSomethingOffAndOnlyDownToZero() async throws {
    let off = try ConfigurationFixture.file("bluetooth:\n  batch_window: 0\n")
    let configuration = try await ConfigurationLoader.load(
      file: off, environment: [:], arguments: [])
    #expect(configuration.bluetooth.batchWindow == 0)
    let every = try ConfigurationFixture.file("bluetooth:\n  advertisement_min_interval: 0\n")
    let loaded = try await ConfigurationLoader.load(file: every, environment: [:], arguments: [])
    #expect(loaded.bluetooth.advertisementMinInterval == 0)
    for bad in ["-0.01", "0.3"] {
      let path = try ConfigurationFixture.file("bluetooth:\n  batch_window: \(bad)\n")
      let error = try #require(await ConfigurationFixture.error(file: path))
      #expect(error.key == "bluetooth.batch_window")
      #expect(error.message == "expected a number from 0 to 0.25, got \"\(bad)\"")
    }
  }

  @Test func unknownChoiceIsAnErrorListingTheChoices() async throws {
    let path = try ConfigurationFixture.file("log:\n  level: verbose\n")
    let error = try #require(await ConfigurationFixture.error(file: path))
    #expect(error.key == "log.level")
    #expect(
      error.message == "expected one of \"trace\", \"debug\", \"info\", \"notice\", \"warning\", "
        + "\"error\", \"critical\", got \"verbose\"")
  }

  @Test func choicesIgnoreLetterCase() async throws {
    let path = try ConfigurationFixture.file("log:\n  level: DEBUG\nmqtt:\n  protocol: 5\n")
    let configuration = try await ConfigurationLoader.load(
      file: path, environment: [:], arguments: [])
    #expect(configuration.log.level == .debug)
    #expect(configuration.mqtt.protocolVersion == .v5)
  }

  @Test func quotedNumbersAndBooleansAreAccepted() async throws {
    let path = try ConfigurationFixture.file(
      "mqtt:\n  port: \"1884\"\n  retain_values: 'true'\n  reconnect:\n    max_delay: \"2.5\"\n")
    let configuration = try await ConfigurationLoader.load(
      file: path, environment: [:], arguments: [])
    #expect(configuration.mqtt.port == 1884)
    #expect(configuration.mqtt.retainValues == true)
    #expect(configuration.mqtt.reconnect.maxDelay == 2.5)
  }

  @Test func quotedNonNumberIsStillAnError() async throws {
    let path = try ConfigurationFixture.file("mqtt:\n  port: \"1883x\"\n")
    let error = try #require(await ConfigurationFixture.error(file: path))
    #expect(error.message == "expected an integer in 1...65535, got \"1883x\"")
  }

  @Test func fractionalValueForAnIntegerKeyIsAnError() async throws {
    let path = try ConfigurationFixture.file("mqtt:\n  keepalive: 60.0\n")
    let error = try #require(await ConfigurationFixture.error(file: path))
    #expect(error.key == "mqtt.keepalive")
  }

  @Test func numbersAsTextAreKeptForStringKeys() async throws {
    let path = try ConfigurationFixture.file(
      "mqtt:\n  client_id: 0042\n  username: u\n  password: 007\n")
    let configuration = try await ConfigurationLoader.load(
      file: path, environment: [:], arguments: [])
    #expect(configuration.mqtt.clientID == "0042")
    #expect(configuration.mqtt.password == "007")
  }

  @Test func nullLeavesAnOptionalKeyUnsetButIsAnErrorForOthers() async throws {
    let optional = try ConfigurationFixture.file("mqtt:\n  username: ~\n  client_id:\n")
    let configuration = try await ConfigurationLoader.load(
      file: optional, environment: [:], arguments: [])
    #expect(configuration.mqtt.username == nil)
    #expect(configuration.mqtt.clientID == nil)

    let required = try ConfigurationFixture.file("mqtt:\n  port: null\n")
    let error = try #require(await ConfigurationFixture.error(file: required))
    #expect(error.key == "mqtt.port")
    #expect(error.message == "expected an integer in 1...65535, got null")
  }

  @Test func quotedNullIsText() async throws {
    let path = try ConfigurationFixture.file("mqtt:\n  username: \"null\"\n")
    let configuration = try await ConfigurationLoader.load(
      file: path, environment: [:], arguments: [])
    #expect(configuration.mqtt.username == "null")
  }

  @Test func emptySectionIsAllowed() async throws {
    let path = try ConfigurationFixture.file("mqtt:\n  tls:\ngateway:\n")
    let configuration = try await ConfigurationLoader.load(
      file: path, environment: [:], arguments: [])
    #expect(configuration == GatewayConfiguration())
  }

  @Test func emptyFileSetsNothing() async throws {
    let path = try ConfigurationFixture.file("# nothing configured yet\n")
    let configuration = try await ConfigurationLoader.load(
      file: path, environment: [:], arguments: [])
    #expect(configuration == GatewayConfiguration())
  }

  @Test func scalarWhereASectionBelongsIsAnError() async throws {
    let path = try ConfigurationFixture.file("mqtt: broker.lan\n")
    let error = try #require(await ConfigurationFixture.error(file: path))
    #expect(error.key == "mqtt")
    #expect(error.line == 1)
    #expect(error.message.hasPrefix("expected a mapping with the keys host, port, client_id"))
    #expect(error.message.hasSuffix("got \"broker.lan\""))
  }

  @Test func mappingWhereAValueBelongsIsAnError() async throws {
    let path = try ConfigurationFixture.file("mqtt:\n  host:\n    name: broker.lan\n")
    let error = try #require(await ConfigurationFixture.error(file: path))
    #expect(error.key == "mqtt.host")
    #expect(
      error.message
        == "expected a host name or IP address (1 to 253 characters, no spaces), got a mapping")
  }

  @Test func listWhereAValueBelongsIsAnError() async throws {
    let path = try ConfigurationFixture.file("mqtt:\n  port: [1883, 1884]\n")
    let error = try #require(await ConfigurationFixture.error(file: path))
    #expect(error.key == "mqtt.port")
    #expect(error.message == "expected an integer in 1...65535, got a list")
  }

  @Test func topLevelThatIsNotAMappingIsAnError() async throws {
    let path = try ConfigurationFixture.file("- mqtt\n- gateway\n")
    let error = try #require(await ConfigurationFixture.error(file: path))
    #expect(error.key == nil)
    #expect(
      error.message
        == "the top level must be a mapping of the sections bluetooth, devices, fleet, gateway, "
        + "homeassistant, log, mqtt, peripheral, web, got a list")
  }

  @Test func yamlSyntaxErrorIsReportedWithItsLine() async throws {
    let path = try ConfigurationFixture.file("mqtt:\n  host: broker.lan\n  port: [1883\n")
    let error = try #require(await ConfigurationFixture.error(file: path))
    #expect(error.source == path)
    #expect(error.key == nil)
    #expect(error.line == 4)
    #expect(
      error.message
        == "invalid YAML at column 1: did not find expected ',' or ']' "
        + "(while parsing a flow sequence at line 3)")
  }

  @Test func badIndentationIsReportedWithItsLine() async throws {
    let path = try ConfigurationFixture.file("mqtt:\n  host: broker.lan\n port: 1883\n")
    let error = try #require(await ConfigurationFixture.error(file: path))
    #expect(error.line == 3)
    #expect(error.message.hasPrefix("invalid YAML at column 2: "))
  }

  @Test func duplicateKeyIsAnError() async throws {
    let path = try ConfigurationFixture.file("mqtt:\n  port: 1883\n  port: 1884\n")
    let error = try #require(await ConfigurationFixture.error(file: path))
    #expect(error.message == "invalid YAML: duplicate key 'port' in one mapping")
  }

  @Test func secondDocumentIsAnError() async throws {
    let path = try ConfigurationFixture.file("mqtt:\n  port: 1883\n---\nlog:\n  level: debug\n")
    let error = try #require(await ConfigurationFixture.error(file: path))
    #expect(error.line == 3)
    #expect(error.message == "invalid YAML: a second document starts here; the file must hold one")
  }

  @Test func errorDescriptionReadsLikeADiagnostic() {
    let withLine = ConfigurationError(
      key: "mqtt.port", source: "config/x.yaml", line: 7, message: "expected an integer")
    #expect(withLine.description == "config/x.yaml:7: mqtt.port: expected an integer")
    let withoutKey = ConfigurationError(key: nil, source: "environment", message: "broken")
    #expect(withoutKey.description == "environment: broken")
  }
}

/// Test inputs shared by the configuration suites.
enum ConfigurationFixture {
  /// `Fixtures/configuration-every-key.yaml`: every key set to a value other than its default.
  static var everyKeyFile: String {
    Bundle.module.path(
      forResource: "configuration-every-key", ofType: "yaml", inDirectory: "Fixtures")!
  }

  /// What `everyKeyFile` and `everyKeyText` describe.
  static let everyKey = GatewayConfiguration(
    mqtt: .init(
      host: "broker.example.net", port: 8883, clientID: "bridge-7", keepalive: 30,
      cleanSession: false, protocolVersion: .v5, username: "gw", password: "s3cret",
      baseTopic: "home/ble", qos: 2, retainValues: true,
      tls: .init(
        enabled: true, caFile: "/etc/gatt2mqtt/ca.pem", certFile: "/etc/gatt2mqtt/client.pem",
        keyFile: "/etc/gatt2mqtt/client.key", insecure: true),
      reconnect: .init(minDelay: 0.5, maxDelay: 120),
      offlineQueue: .init(maxMessages: 500, policy: .dropNewest),
      inbound: .init(maxRequestBytes: 4096, bufferBytes: 1_048_576),
      responseTopicPrefix: "home/replies"),
    gateway: .init(id: "kitchen-1", healthInterval: 15),
    log: .init(level: .debug),
    bluetooth: .init(
      radio: .none, scanMethod: .management, batchWindow: 0.25, adapter: "hci1",
      simulation: "/etc/gatt2mqtt/world.yaml", scanOnStart: false,
      minRSSI: -95,
      advertisementInterval: 30, advertisementMinInterval: 2, offlineAfter: 120,
      forgetAfter: 3600, maxDevices: 50, decode: false,
      presence: .init(enterRSSI: -70, leaveRSSI: -85, halfLife: 5, awayAfter: 60),
      filterUUIDs: ["180f", "0x2a37", "0000feaa", "0000180d-0000-1000-8000-00805f9b34fb"],
      filterName: "Thermo*", filterAllow: ["A4:C1:38:1E:29:DF", "11:22:33:44:55:66"],
      filterDeny: ["AA:BB:CC:DD:EE:FF"],
      names: ["A4:C1:38:1E:29:DF=kitchen/thermometer", "11:22:33:44:55:66=hall"],
      connect: .init(
        addresses: ["A4:C1:38:1E:29:DF"], names: ["Polar*", "HR ?"], uuids: ["180d"],
        exclude: ["C0:FF:EE:00:00:09"], maxConnections: 3, timeout: 12, retryMinDelay: 1,
        retryMaxDelay: 60, rssi: false,
        rssiInterval: 30),
      gatt: .init(
        timeout: 8, format: .base64, formats: ["*/180f/2a19=decoded", "A4C1381E29DF=utf8"],
        notify: ["*/180d/2a37"], notifyMethod: .start,
        notifyMethods: ["A4C1381E29DF/180d/2a37=acquire"], writable: ["A4C1381E29DF/fff0/fff1"],
        queueLimit: 16),
      transfer: .init(
        service: "0000fe00-0000-1000-8000-00805f9b34fb", characteristic: "fe01",
        maxBytes: 65536)),
    peripheral: .init(
      enabled: true, service: "0000fe10-0000-1000-8000-00805f9b34fb", characteristic: "fe11",
      writeCharacteristic: "fe12", localName: "hub", adapter: "hci2", requireEncryption: true,
      allow: ["11:22:33:44:55:66"], maxTextBytes: 4096, chunkInterval: 0.02,
      notifySocket: false, severalCentrals: .socket),
    homeAssistant: .init(
      enabled: false, prefix: "ha/discovery",
      controls: ["*/fff0/fff1=button", "AABBCCDDEEFF/fff0/fff2=text"]),
    web: .init(enabled: true, listen: "[::1]:9090", token: "s3cret-token"),
    fleet: .init(
      ownership: .init(
        enabled: true, margin: 12, dwell: 45, staleAfter: 20, claimDelay: 2, giveUpAfter: 4,
        cooldown: 300)))

  /// The values of `everyKey` as text, by key path.
  static let everyKeyText: [String: String] = [
    "mqtt.host": "broker.example.net", "mqtt.port": "8883", "mqtt.client_id": "bridge-7",
    "mqtt.keepalive": "30", "mqtt.clean_session": "false", "mqtt.protocol": "5",
    "mqtt.username": "gw", "mqtt.password": "s3cret", "mqtt.base_topic": "home/ble",
    "mqtt.qos": "2", "mqtt.retain_values": "true", "mqtt.tls.enabled": "true",
    "mqtt.tls.ca_file": "/etc/gatt2mqtt/ca.pem", "mqtt.tls.cert_file": "/etc/gatt2mqtt/client.pem",
    "mqtt.tls.key_file": "/etc/gatt2mqtt/client.key", "mqtt.tls.insecure": "true",
    "mqtt.reconnect.min_delay": "0.5", "mqtt.reconnect.max_delay": "120",
    "mqtt.offline_queue.max_messages": "500", "mqtt.offline_queue.policy": "drop_newest",
    "mqtt.inbound.max_request_bytes": "4096", "mqtt.inbound.buffer_bytes": "1048576",
    "mqtt.response_topic_prefix": "home/replies",
    "gateway.id": "kitchen-1", "gateway.health_interval": "15", "log.level": "debug",
    "bluetooth.radio": "none", "bluetooth.scan_method": "management",
    "bluetooth.batch_window": "0.25", "bluetooth.adapter": "hci1",
    "bluetooth.simulation": "/etc/gatt2mqtt/world.yaml", "bluetooth.scan_on_start": "false",
    "bluetooth.min_rssi": "-95",
    "bluetooth.filter.uuids": "180f,0x2a37,0000feaa,0000180d-0000-1000-8000-00805f9b34fb",
    "bluetooth.filter.name": "Thermo*",
    "bluetooth.filter.allow": "A4:C1:38:1E:29:DF,11:22:33:44:55:66",
    "bluetooth.filter.deny": "AA:BB:CC:DD:EE:FF", "bluetooth.advertisement_interval": "30",
    "bluetooth.advertisement_min_interval": "2", "bluetooth.offline_after": "120",
    "bluetooth.forget_after": "3600", "bluetooth.max_devices": "50",
    "bluetooth.presence.enter_rssi": "-70", "bluetooth.presence.leave_rssi": "-85",
    "bluetooth.presence.half_life": "5", "bluetooth.presence.away_after": "60",
    "bluetooth.connect.addresses": "A4:C1:38:1E:29:DF", "bluetooth.connect.names": "Polar*,HR ?",
    "bluetooth.connect.uuids": "180d", "bluetooth.connect.exclude": "C0:FF:EE:00:00:09",
    "bluetooth.connect.max_connections": "3",
    "bluetooth.connect.timeout": "12", "bluetooth.connect.retry_min_delay": "1",
    "bluetooth.names": "A4:C1:38:1E:29:DF=kitchen/thermometer,11:22:33:44:55:66=hall",
    "bluetooth.connect.retry_max_delay": "60", "bluetooth.connect.rssi": "false",
    "bluetooth.connect.rssi_interval": "30", "bluetooth.gatt.timeout": "8",
    "bluetooth.gatt.format": "base64",
    "bluetooth.gatt.formats": "*/180f/2a19=decoded,A4C1381E29DF=utf8",
    "bluetooth.gatt.notify": "*/180d/2a37", "bluetooth.gatt.writable": "A4C1381E29DF/fff0/fff1",
    "bluetooth.gatt.notify_method": "start",
    "bluetooth.gatt.notify_methods": "A4C1381E29DF/180d/2a37=acquire",
    "bluetooth.gatt.queue_limit": "16",
    "bluetooth.transfer.service": "0000fe00-0000-1000-8000-00805f9b34fb",
    "bluetooth.transfer.characteristic": "fe01", "bluetooth.transfer.max_bytes": "65536",
    "peripheral.enabled": "true", "peripheral.service": "0000fe10-0000-1000-8000-00805f9b34fb",
    "peripheral.characteristic": "fe11", "peripheral.write_characteristic": "fe12",
    "peripheral.local_name": "hub", "peripheral.adapter": "hci2",
    "peripheral.require_encryption": "true", "peripheral.allow": "11:22:33:44:55:66",
    "peripheral.max_text_bytes": "4096", "peripheral.chunk_interval": "0.02",
    "peripheral.notify_socket": "false", "peripheral.several_centrals": "socket",
    "bluetooth.decode": "false",
    "homeassistant.enabled": "false", "homeassistant.prefix": "ha/discovery",
    "homeassistant.controls": "*/fff0/fff1=button,AABBCCDDEEFF/fff0/fff2=text",
    "web.enabled": "true", "web.listen": "[::1]:9090", "web.token": "s3cret-token",
    "fleet.ownership.enabled": "true", "fleet.ownership.margin": "12",
    "fleet.ownership.dwell": "45", "fleet.ownership.stale_after": "20",
    "fleet.ownership.claim_delay": "2", "fleet.ownership.give_up_after": "4",
    "fleet.ownership.cooldown": "300",
  ]

  /// A new empty temporary directory.
  static func directory() -> String {
    let path = FileManager.default.temporaryDirectory
      .appendingPathComponent("gatt2mqtt-config-tests-\(UUID().uuidString)").path
    try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    return path
  }

  /// Writes `yaml` to a new temporary file and returns its path.
  static func file(_ yaml: String) throws -> String {
    let path = directory() + "/gatt2mqtt.yaml"
    try yaml.write(toFile: path, atomically: true, encoding: .utf8)
    return path
  }

  /// The error `load` throws for these inputs, or `nil` if it succeeds.
  static func error(
    file: String? = nil, environment: [String: String] = [:], arguments: [String] = []
  ) async -> ConfigurationError? {
    do {
      _ = try await ConfigurationLoader.load(
        file: file, environment: environment, arguments: arguments)
      return nil
    } catch {
      return error
    }
  }
}
