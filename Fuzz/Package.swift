// swift-tools-version:6.1
// The fuzzers (issue 15): one libFuzzer binary, the target chosen by FUZZ_TARGET. Not part of
// the normal build; `scripts/fuzz` builds it with `-sanitize=fuzzer,address` and runs it.
import PackageDescription

let package = Package(
  name: "gatt2mqtt-fuzz",
  dependencies: [.package(name: "gatt2mqtt", path: "..")],
  targets: [
    .executableTarget(
      name: "gatt2mqtt-fuzz",
      dependencies: [
        .product(name: "BlueZ", package: "gatt2mqtt"),
        .product(name: "BridgeCore", package: "gatt2mqtt"),
        .product(name: "DBus", package: "gatt2mqtt"),
        .product(name: "GatewaySettings", package: "gatt2mqtt"),
        .product(name: "SimulatedRadio", package: "gatt2mqtt"),
      ],
      swiftSettings: [.unsafeFlags(["-parse-as-library"])])
  ]
)
