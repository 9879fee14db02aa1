import BridgeCore
@_spi(Fuzzing) import DBus
import Foundation
import GatewaySettings
import SimulatedRadio

/// The target, from `FUZZ_TARGET` (see `Fuzz/README.md`).
let target = ProcessInfo.processInfo.environment["FUZZ_TARGET"] ?? ""

/// libFuzzer's entry point: one input, every invariant checked with `precondition` (a failed
/// one is a crash libFuzzer reports and keeps).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOne(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
  let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? []
  switch target {
  case "json": FuzzTargets.json(bytes)
  case "requests": FuzzTargets.requests(bytes)
  case "values": FuzzTargets.values(bytes)
  case "transfer": FuzzTargets.transfer(bytes)
  case "world": FuzzTargets.world(bytes)
  case "config": FuzzTargets.config(bytes)
  case "dbus": FuzzTargets.dbus(bytes)
  case "adverts": FuzzTargets.adverts(bytes)
  case "mgmt": FuzzTargets.mgmt(bytes)
  default:
    fatalError("set FUZZ_TARGET to one of: \(FuzzTargets.all.joined(separator: ", "))")
  }
  return 0
}

/// libFuzzer's driver (`-sanitize=fuzzer` links it).
@_silgen_name("LLVMFuzzerRunDriver")
func LLVMFuzzerRunDriver(
  _ argc: UnsafeMutablePointer<CInt>,
  _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
  _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

/// The executable's entry point under the name SwiftPM gives it (`<target>_main`), so that the
/// linker takes it for `main` instead of libFuzzer's; it hands over to libFuzzer's driver.
@_cdecl("gatt2mqtt_fuzz_main")
func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
  var count = argc
  var arguments = argv
  return LLVMFuzzerRunDriver(&count, &arguments) { data, size in fuzzOne(data, size) }
}
