import ArgumentParser
import BlueZ
import BridgeCore
import Foundation
import Gateway
import GatewaySettings
import Logging

extension Gatt2MQTT {
  /// `gatt2mqtt scan`: print advertisements to the terminal, no MQTT involved.
  struct Scan: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
      abstract: "Scan for BLE advertisements through BlueZ and print them (Ctrl-C stops).",
      discussion:
        "Uses the D-Bus system bus (DBUS_SYSTEM_BUS_ADDRESS is honoured) and every powered "
        + "adapter, or --adapter. One line per advertisement that changed, as JSON with --json.")

    @Option(help: "Only this adapter, e.g. hci0.")
    var adapter: String?

    @Option(help: "Stop after this many seconds (default: until Ctrl-C).")
    var duration: Double?

    @Flag(help: "Print each advertisement as the JSON the gateway would publish.")
    var json = false

    func run() async throws {
      var logger = Logger(label: "gatt2mqtt.scan")
      logger.logLevel = .warning
      let central = BlueZCentral(configuration: BlueZCentralConfiguration(), logger: logger)
      let events = central.events()
      let runner = Task { await central.run() }
      defer { runner.cancel() }
      let adapters: [AdapterInfo]
      do {
        adapters = try await central.adapters()
      } catch {
        FileHandle.standardError.write(Data("gatt2mqtt scan: cannot reach BlueZ: \(error)\n".utf8))
        throw ExitCode(69)  // EX_UNAVAILABLE
      }
      let chosen = adapters.filter { adapter == nil || $0.id == adapter }
      guard !chosen.isEmpty else {
        let names = adapters.map(\.id).joined(separator: ", ")
        FileHandle.standardError.write(
          Data(
            "gatt2mqtt scan: no adapter \(adapter ?? "") (present: \(names.isEmpty ? "none" : names))\n"
              .utf8))
        throw ExitCode(69)
      }
      for info in chosen {
        do {
          try await central.startDiscovery(adapter: info.id, filter: DiscoveryFilter())
          FileHandle.standardError.write(Data("scanning on \(info.id)…\n".utf8))
        } catch {
          FileHandle.standardError.write(Data("cannot scan on \(info.id): \(error)\n".utf8))
        }
      }
      let gateway = GatewayID(GatewayConfiguration.Gateway.systemHostname())
      // Monotonic: a clock set while scanning (NTP at boot) moves neither end.
      let deadline = duration.map { ContinuousClock.now + .seconds($0) }
      let timer = Task {
        if let duration { try? await Task.sleep(for: .seconds(duration)) } else { return }
        runner.cancel()
      }
      defer { timer.cancel() }
      for await event in events {
        if let deadline, ContinuousClock.now >= deadline { break }
        switch event {
        case .deviceAppeared(let advertisement), .deviceUpdated(let advertisement):
          if json {
            let value = advertisement.json(gateway: gateway, time: Date().timeIntervalSince1970)
            print(value.serialized())
          } else {
            print(Self.line(advertisement))
          }
        case .stackLost:
          FileHandle.standardError.write(Data("bluetoothd went away; waiting…\n".utf8))
        default:
          break
        }
      }
    }

    static func line(_ advertisement: Advertisement) -> String {
      var parts = ["\(advertisement.address)"]
      if let rssi = advertisement.rssi { parts.append("rssi \(rssi)") }
      if let name = advertisement.name {
        parts.append("name \(TopicSegment.sanitize(name).debugDescription)")
      }
      if !advertisement.serviceUUIDs.isEmpty {
        parts.append(
          "uuids " + advertisement.serviceUUIDs.map(\.shortForm).sorted().joined(separator: ","))
      }
      return parts.joined(separator: "  ")
    }
  }
}
