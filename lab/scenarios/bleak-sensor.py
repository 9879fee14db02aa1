"""bleak through bluetoothd <-> the sensor: scan, connect, read battery, battery notify, 500 heart-rate notifications (200/s) in order."""

import asyncio

from labkit import uuids

ROWS = "LAB"
TIMEOUT = 240

HR_COUNT = 500
HR_RATE = 200  # per second; a fast real sensor (7.5 ms connection interval, 1-2 per event)


async def run(lab):
    sensor = await lab.peer("sensor", battery=87, hr_rate=HR_RATE, hr_count=HR_COUNT)
    device, adv = await lab.find_adv(sensor.address)
    lab.check(adv.local_name == "lab-sensor", f"advertised name {adv.local_name!r}")
    advertised = {u.lower() for u in adv.service_uuids}
    for u in (uuids.BATTERY_SERVICE, uuids.HEART_RATE_SERVICE):
        lab.check(uuids.long_form(u) in advertised, f"service {u} not advertised: {advertised}")

    async with lab.connect(device) as client:
        lab.log("connected")
        level = await client.read_gatt_char(uuids.long_form(uuids.BATTERY_LEVEL))
        lab.check(bytes(level) == bytes([87]), f"battery level read {bytes(level)!r}, expected 87")

        # Battery: a notification carries a new level.
        levels: list[int] = []
        battery_changed = asyncio.Event()

        def on_battery(_, data):
            levels.append(data[0])
            if data[0] == 42:
                battery_changed.set()

        await client.start_notify(uuids.long_form(uuids.BATTERY_LEVEL), on_battery)
        await sensor.wait("subscribed", where=lambda e: e["char"] == "battery")
        sensor.send("battery", level=42)
        await asyncio.wait_for(battery_changed.wait(), lab.timeout(30))

        # Heart rate: the sensor sends HR_COUNT notifications at HR_RATE/s; each carries its
        # sequence number (Energy Expended field).
        seqs: list[int] = []
        all_in = asyncio.Event()

        def on_hr(_, data):
            data = bytes(data)
            lab.check(len(data) == 4 and data[0] == 0x08, f"malformed HR measurement {data.hex()}")
            seqs.append(int.from_bytes(data[2:4], "little"))
            if len(seqs) >= HR_COUNT:
                all_in.set()

        t0 = asyncio.get_running_loop().time()
        await client.start_notify(uuids.long_form(uuids.HEART_RATE_MEASUREMENT), on_hr)
        try:
            await asyncio.wait_for(all_in.wait(), lab.timeout(120))
        except asyncio.TimeoutError:
            raise AssertionError(f"only {len(seqs)} of {HR_COUNT} HR notifications arrived") from None
        dt = asyncio.get_running_loop().time() - t0
        lab.log(f"{len(seqs)} HR notifications in {dt:.1f} s ({len(seqs) / dt:.0f}/s)")
        done = await sensor.wait("hr_done")
        lab.check(done["sent"] == HR_COUNT, f"sensor sent {done['sent']}")
        lab.check(seqs == list(range(HR_COUNT)),
                  f"HR notifications out of order or lost: first bad index "
                  f"{next(i for i, s in enumerate(seqs + [None]) if s != i)}")
        await asyncio.sleep(0.5)
        lab.check(len(seqs) == HR_COUNT, f"{len(seqs) - HR_COUNT} extra HR notifications")
        await client.stop_notify(uuids.long_form(uuids.HEART_RATE_MEASUREMENT))
        await sensor.wait("unsubscribed", where=lambda e: e["char"] == "hr")
    await sensor.wait("disconnected")
