"""bleak through bluetoothd <-> the hostile peripheral: wildcard/invalid-UTF-8 name, 24-byte manufacturer data, reads failing with ATT error 0x80, invalid UTF-8 values; bluetoothd survives."""

import asyncio

from bleak.exc import BleakError

from labkit import uuids

ROWS = "LAB"
TIMEOUT = 240


async def run(lab):
    hostile = await lab.peer("hostile")
    adv_event = await hostile.wait("advertising")
    lab.check(len(bytes.fromhex(adv_event["adv"])) == 31, "advertising data is not a full 31-byte PDU")

    device, adv = await lab.find_adv(hostile.address)
    # What BlueZ makes of the raw name b"lab/+#\xff\xfe\xc3\x28-hostile": it keeps the valid
    # UTF-8 prefix. The gateway sees this name (and must sanitise '/', '+', '#').
    lab.log(f"name as bluetoothd reports it: {adv.local_name!r}")
    lab.check(adv.local_name is not None and adv.local_name.startswith("lab/+#"),
              f"name {adv.local_name!r}")
    lab.check(adv.manufacturer_data.get(0xFFFF) == bytes(range(24)),
              f"manufacturer data {adv.manufacturer_data}")

    async with lab.connect(device) as client:
        failing = uuids.long_form(uuids.HOSTILE_FAILING_READ)
        echo = uuids.long_form(uuids.HOSTILE_ECHO)
        for _ in range(3):
            try:
                value = await client.read_gatt_char(failing)
            except BleakError as e:
                lab.log(f"read failed as designed: {e}")
                lab.check("0x80" in str(e), f"error does not name ATT error 0x80: {e}")
            else:
                raise AssertionError(f"read of the failing characteristic returned {bytes(value)!r}")
        lab.check(len(hostile.events("read_failed")) == 3, "the peer did not see 3 failing reads")

        value = await client.read_gatt_char(echo)
        lab.check(bytes(value) == b"\xff\xfe\xc3\x28", f"echo holds {bytes(value)!r}")

        got = asyncio.Queue()
        await client.start_notify(echo, lambda _, d: got.put_nowait(bytes(d)))
        for payload in (b"\x00\xff\x00", b"\xc0\xaf", b"ok"):
            await client.write_gatt_char(echo, payload, response=True)
            n = await asyncio.wait_for(got.get(), lab.timeout(30))
            lab.check(n == payload, f"echo notified {n!r} for {payload!r}")
