"""UUIDs shared by the zoo peers, the self-test scenarios and (later) gateway scenarios."""

# Bluetooth SIG services/characteristics used by the sensor.
BATTERY_SERVICE = "180F"
BATTERY_LEVEL = "2A19"
HEART_RATE_SERVICE = "180D"
HEART_RATE_MEASUREMENT = "2A37"

# The actuator: a custom 128-bit service.
ACTUATOR_SERVICE = "5A1D0000-6A63-4B3C-9C5E-3B5C7D2A0001"
ACTUATOR_COMMAND = "5A1D0001-6A63-4B3C-9C5E-3B5C7D2A0001"  # write with response
ACTUATOR_STREAM = "5A1D0002-6A63-4B3C-9C5E-3B5C7D2A0001"  # write without response
ACTUATOR_STATUS = "5A1D0003-6A63-4B3C-9C5E-3B5C7D2A0001"  # read (+ notify): reflects writes

# The sensor's alert service (--alert): one indicate-only characteristic.
ALERT_SERVICE = "5A1E0000-6A63-4B3C-9C5E-3B5C7D2A0001"
ALERT_LEVEL = "5A1E0001-6A63-4B3C-9C5E-3B5C7D2A0001"  # indicate only: seq as uint16 LE

# The transfer service: Apple's "BTLE Transfer" sample (MISSION.md P2).
TRANSFER_SERVICE = "E20A39F4-73F5-4BC4-A12F-17D1AD07A961"
TRANSFER_CHARACTERISTIC = "08590F7E-DB05-467E-8757-72F6FAEB13D4"

# The hostile peripheral's service.
HOSTILE_SERVICE = "BAD00000-0BAD-4BAD-8BAD-00000000BAD0"
HOSTILE_FAILING_READ = "BAD00001-0BAD-4BAD-8BAD-00000000BAD0"  # every read fails with an ATT error
HOSTILE_ECHO = "BAD00002-0BAD-4BAD-8BAD-00000000BAD0"  # read/write, holds invalid UTF-8


def long_form(uuid: str) -> str:
    """Full lower-case 128-bit form (what BlueZ and bleak report)."""
    u = uuid.lower()
    if len(u) == 4:
        return f"0000{u}-0000-1000-8000-00805f9b34fb"
    return u
