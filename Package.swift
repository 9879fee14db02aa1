// swift-tools-version:6.1
import PackageDescription

let strict: [SwiftSetting] = [
  .enableUpcomingFeature("InternalImportsByDefault"),
  .enableUpcomingFeature("ExistentialAny"),
]

let package = Package(
  name: "gatt2mqtt",
  platforms: [.macOS(.v15)],
  products: [
    .executable(name: "gatt2mqtt", targets: ["gatt2mqtt"]),
    .library(name: "Mosquitto", targets: ["Mosquitto"]),
    .library(name: "Backoff", targets: ["Backoff"]),
    .library(name: "BridgeCore", targets: ["BridgeCore"]),
    .library(name: "DBus", targets: ["DBus"]),
    .library(name: "BlueZ", targets: ["BlueZ"]),
    .library(name: "SimulatedRadio", targets: ["SimulatedRadio"]),
    .library(name: "GatewaySettings", targets: ["GatewaySettings"]),
    .library(name: "Gateway", targets: ["Gateway"]),
  ],
  dependencies: [
    .package(
      url: "https://github.com/apple/swift-configuration", exact: "1.4.0",
      traits: [.defaults, "YAML", "CommandLineArguments"]),
    .package(url: "https://github.com/apple/swift-argument-parser", exact: "1.8.2"),
    .package(url: "https://github.com/apple/swift-log", exact: "1.16.2"),
    .package(url: "https://github.com/swift-server/swift-service-lifecycle", exact: "2.13.0"),
    .package(url: "https://github.com/apple/swift-collections", exact: "1.6.0"),
    .package(url: "https://github.com/jpsim/Yams", exact: "6.2.2"),
    .package(url: "https://github.com/hummingbird-project/hummingbird", exact: "2.28.1"),
    .package(url: "https://github.com/apple/swift-metrics", exact: "2.13.0"),
    .package(url: "https://github.com/swift-server/swift-prometheus", exact: "2.4.1"),
  ],
  targets: [
    // C adapters: only `Mosquitto` imports CMosquitto, only `DBus` imports CDBus.
    .systemLibrary(
      name: "CMosquitto", pkgConfig: "libmosquitto", providers: [.apt(["libmosquitto-dev"])]),
    .systemLibrary(name: "CDBus", pkgConfig: "dbus-1", providers: [.apt(["libdbus-1-dev"])]),

    // Retry delays, shared by the MQTT client, the BlueZ session and the bridges.
    .target(name: "Backoff", swiftSettings: strict),
    // The mailbox and poll of the loop threads (MQTT, D-Bus, datagram readers, the simulated
    // world) and the threads themselves (also YAML's composing thread); not a product.
    .target(name: "LoopSupport", swiftSettings: strict),
    .target(
      name: "Mosquitto",
      dependencies: [
        "CMosquitto", "Backoff", "LoopSupport",
        .product(name: "Logging", package: "swift-log"),
        .product(name: "DequeModule", package: "swift-collections"),
        .product(name: "OrderedCollections", package: "swift-collections"),
      ],
      swiftSettings: strict),
    .target(name: "DBus", dependencies: ["CDBus", "LoopSupport"], swiftSettings: strict),
    .target(name: "BridgeCore", dependencies: ["Backoff"], swiftSettings: strict),
    .target(
      name: "BlueZ",
      dependencies: [
        "DBus", "BridgeCore", "Backoff", "LoopSupport", .product(name: "Logging", package: "swift-log"),
      ],
      swiftSettings: strict),
    // YAML read within bounds (file size, aliases expanded): the configuration and the
    // simulated world file; not a product.
    .target(
      name: "YAMLSupport", dependencies: ["LoopSupport", .product(name: "Yams", package: "Yams")],
      swiftSettings: strict),
    .target(
      name: "SimulatedRadio",
      dependencies: [
        "BridgeCore", "LoopSupport", "YAMLSupport", .product(name: "Yams", package: "Yams"),
        .product(name: "HeapModule", package: "swift-collections"),
      ],
      swiftSettings: strict),
    // The embedded web page, its JSON API and event stream, and /metrics (issue 19): HTTP
    // (Hummingbird) and Prometheus's text format; it knows the gateway only through
    // `WebBackend`.
    .target(
      name: "Web",
      dependencies: [
        "BridgeCore",
        .product(name: "Hummingbird", package: "hummingbird"),
        .product(name: "Metrics", package: "swift-metrics"),
        .product(name: "Prometheus", package: "swift-prometheus"),
        .product(name: "Logging", package: "swift-log"),
        .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
      ],
      swiftSettings: strict),
    // The gateway's configuration: its keys, flags > environment > file > defaults, the checks
    // with each key's path in the error, the redacted summary. Its own module so that the
    // fuzzers build it without the gateway's services (NIO, Hummingbird and the rest, each
    // rebuilt with the sanitizers).
    .target(
      name: "GatewaySettings",
      dependencies: [
        "BridgeCore", "YAMLSupport",
        .product(name: "Configuration", package: "swift-configuration"),
        .product(name: "Yams", package: "Yams"),
      ],
      swiftSettings: strict),
    .target(
      name: "Gateway",
      dependencies: [
        "Mosquitto", "BridgeCore", "BlueZ", "SimulatedRadio", "Backoff", "Web", "LoopSupport",
        "YAMLSupport", "GatewaySettings", .product(name: "Metrics", package: "swift-metrics"),
        .product(name: "Logging", package: "swift-log"),
        .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        .product(name: "UnixSignals", package: "swift-service-lifecycle"),
      ],
      swiftSettings: strict),
    .executableTarget(
      name: "gatt2mqtt",
      dependencies: [
        "Gateway", "GatewaySettings", "BlueZ", "BridgeCore",
        .product(name: "ArgumentParser", package: "swift-argument-parser"),
        .product(name: "Logging", package: "swift-log"),
      ],
      swiftSettings: strict),

    .testTarget(name: "BackoffTests", dependencies: ["Backoff"], swiftSettings: strict),
    .testTarget(name: "LoopSupportTests", dependencies: ["LoopSupport"], swiftSettings: strict),
    .testTarget(
      name: "YAMLSupportTests",
      dependencies: ["YAMLSupport", .product(name: "Yams", package: "Yams")],
      swiftSettings: strict),
    .testTarget(name: "BridgeCoreTests", dependencies: ["BridgeCore"], swiftSettings: strict),
    .testTarget(
      name: "DBusTests", dependencies: ["DBus", "BusTestSupport"], swiftSettings: strict),
    .testTarget(
      name: "BlueZTests",
      dependencies: [
        "BlueZ", "DBus", "BridgeCore", "BusTestSupport",
        .product(name: "Logging", package: "swift-log"),
      ],
      swiftSettings: strict),
    .testTarget(
      name: "SimulatedRadioTests", dependencies: ["SimulatedRadio", "BridgeCore", "YAMLSupport"],
      swiftSettings: strict),
    .testTarget(
      name: "MosquittoTests", dependencies: ["Mosquitto", "TestSupport"], swiftSettings: strict),
    .testTarget(
      name: "GatewaySettingsTests",
      dependencies: ["GatewaySettings", "BridgeCore", "SimulatedRadio", "YAMLSupport"],
      resources: [.copy("Fixtures")], swiftSettings: strict),
    .testTarget(
      name: "GatewayTests", dependencies: ["Gateway", "GatewaySettings", "TestSupport"],
      swiftSettings: strict),
    .testTarget(
      name: "WebTests",
      dependencies: ["Web", "BridgeCore", .product(name: "Hummingbird", package: "hummingbird")],
      swiftSettings: strict),
    .testTarget(
      name: "IntegrationTests", dependencies: ["gatt2mqtt", "Mosquitto", "SimulatedRadio", "TestSupport"],
      swiftSettings: strict),
    // Helpers for D-Bus tests: child processes and a private dbus-daemon.
    .target(
      name: "BusTestSupport", dependencies: ["DBus"], path: "Tests/BusTestSupport",
      swiftSettings: strict),
    // Helpers for tests: a real mosquitto broker on a free loopback port, processes, certificates.
    .target(
      name: "TestSupport", dependencies: ["Mosquitto", "BusTestSupport"], path: "Tests/TestSupport",
      swiftSettings: strict),
  ]
)
