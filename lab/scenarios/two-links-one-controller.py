"""bluetoothd's controller holds two links at once (sensor + actuator via bleak): notifications on one, writes and reads on the other, all in order. Fails with Debian's unpatched btvirt."""

import asyncio
import json


from bluez import BlueZ
from labkit import uuids

ROWS = "LAB"
TIMEOUT = 300

HR_COUNT = 300
WRITES = 60


async def run(lab):
    sensor, actuator = await asyncio.gather(
        lab.peer("sensor", hr_rate=100, hr_count=HR_COUNT),
        lab.peer("actuator"))
    dev_s = await lab.find(sensor.address)
    dev_a = await lab.find(actuator.address)

    async with lab.connect(dev_s) as cs:
        async with lab.connect(dev_a) as ca:
            bluez = await BlueZ().connect()
            try:
                connected = {d["Address"] for d in (await bluez.devices()).values() if d.get("Connected")}
            finally:
                bluez.close()
            lab.check({sensor.address, actuator.address} <= connected,
                      f"bluetoothd does not hold both links: connected {connected}")
            await sensor.wait("connected")
            await actuator.wait("connected")

            seqs: list[int] = []
            all_in = asyncio.Event()

            def on_hr(_, data):
                seqs.append(int.from_bytes(bytes(data)[2:4], "little"))
                if len(seqs) >= HR_COUNT:
                    all_in.set()

            await cs.start_notify(uuids.long_form(uuids.HEART_RATE_MEASUREMENT), on_hr)

            # While the sensor streams on link 1: writes with response and reads on link 2.
            command = uuids.long_form(uuids.ACTUATOR_COMMAND)
            status = uuids.long_form(uuids.ACTUATOR_STATUS)
            for i in range(WRITES):
                await ca.write_gatt_char(command, i.to_bytes(2, "little"), response=True)
                if i % 10 == 9:
                    state = json.loads(await ca.read_gatt_char(status))
                    lab.check(state["commands"] == i + 1, f"status after {i + 1} writes: {state}")
                    level = await cs.read_gatt_char(uuids.long_form(uuids.BATTERY_LEVEL))
                    lab.check(len(level) == 1, f"battery read {bytes(level)!r}")
            lab.log(f"{WRITES} writes done while {len(seqs)} HR notifications arrived")
            lab.check(len(seqs) > 0, "no HR notification arrived while writing on the other link")
            try:
                await asyncio.wait_for(all_in.wait(), lab.timeout(120))
            except asyncio.TimeoutError:
                raise AssertionError(f"only {len(seqs)} of {HR_COUNT} HR notifications arrived") from None
            lab.check(seqs == list(range(HR_COUNT)), "HR notifications out of order or lost")
            writes = [int.from_bytes(bytes.fromhex(e["value"]), "little")
                      for e in actuator.events("write") if e["char"] == "command"]
            lab.check(writes == list(range(WRITES)), f"actuator got {len(writes)} writes, not in order")
