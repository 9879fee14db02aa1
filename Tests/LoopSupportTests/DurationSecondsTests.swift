import LoopSupport
import Testing

@Suite("Duration in seconds and milliseconds, as the loops' settings and system calls count it")
struct DurationSecondsTests {
  @Test("seconds keep the fraction; milliseconds are whole, rounded toward zero")
  func conversions() {
    #expect(Duration.milliseconds(1500).seconds == 1.5)
    #expect(Duration.microseconds(250).seconds == 0.000_25)
    #expect(Duration.milliseconds(1500).milliseconds == 1500)
    #expect(Duration.microseconds(2999).milliseconds == 2)
    #expect(Duration.seconds(-1.5).milliseconds == -1500)
    #expect(Duration.microseconds(-2999).milliseconds == -2)
    #expect(Duration.seconds(Int64.max).milliseconds == .max)
    #expect(Duration.seconds(Int64.min).milliseconds == .min)
    #expect(Duration.seconds(86_400).milliseconds == 86_400_000)
  }
}
