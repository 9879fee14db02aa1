import BridgeCore
import Testing

@Suite("Scanner watchdog steps as bridge events")
struct ScannerWatchdogEventTests {
  @Test("each step has its event type, the adapter and the silence in seconds")
  func mapping() {
    let restarted = ScannerWatchdogEvent.discoveryRestarted(
      adapter: "hci0", silence: .milliseconds(60_250)
    ).bridgeEvent
    #expect(restarted.type == "scanner_restarted")
    #expect(restarted.data["adapter"] == .string("hci0"))
    #expect(restarted.data["silence_s"] == .number(60.3))
    let cycled = ScannerWatchdogEvent.adapterPowerCycled(adapter: "hci1", silence: .seconds(180))
      .bridgeEvent
    #expect(cycled.type == "adapter_power_cycled")
    #expect(cycled.data["adapter"] == .string("hci1"))
    #expect(ScannerWatchdogEvent.recovered(adapter: "hci0").bridgeEvent.type == "scanner_recovered")
  }

  @Test("a failed step carries the step and the error code")
  func failure() {
    let failed = ScannerWatchdogEvent.stepFailed(
      adapter: "hci0", step: .powerCycle,
      error: CentralError(.inProgress, message: "busy", detail: "org.bluez.Error.InProgress")
    ).bridgeEvent
    #expect(failed.type == "scanner_watchdog_failed")
    #expect(failed.data["step"] == .string("power_cycle"))
    #expect(failed.data["error"] == .string("in_progress"))
  }
}
