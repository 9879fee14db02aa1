"""bleak through bluetoothd <-> the actuator: write with response, refused writes (ATT errors), 500 writes without response in order, status read and notify reflect them."""

import asyncio
import json

from bleak.exc import BleakError

from labkit import uuids

ROWS = "LAB"
TIMEOUT = 300

STREAM_COUNT = 500


async def run(lab):
    actuator = await lab.peer("actuator")
    device, adv = await lab.find_adv(actuator.address)
    lab.check(uuids.long_form(uuids.ACTUATOR_SERVICE) in adv.service_uuids,
              f"actuator service not advertised: {adv.service_uuids}")

    command = uuids.long_form(uuids.ACTUATOR_COMMAND)
    stream = uuids.long_form(uuids.ACTUATOR_STREAM)
    status = uuids.long_form(uuids.ACTUATOR_STATUS)

    async with lab.connect(device) as client:
        chars = {c.uuid: c for s in client.services for c in s.characteristics}
        lab.check("write" in chars[command].properties, f"command flags {chars[command].properties}")
        lab.check("write-without-response" in chars[stream].properties,
                  f"stream flags {chars[stream].properties}")
        lab.check({"read", "notify"} <= set(chars[status].properties),
                  f"status flags {chars[status].properties}")

        # Write with response: the peer gets exactly these bytes, the status reflects them.
        for i in range(10):
            value = bytes([0xA0, i]) + b"on"
            mark = actuator.mark()
            await client.write_gatt_char(command, value, response=True)
            e = await actuator.wait("write", where=lambda e: e["char"] == "command", after=mark)
            lab.check(e["value"] == value.hex() and e["response"], f"peer got {e}")
        state = json.loads(await client.read_gatt_char(status))
        lab.check(state["command"] == (bytes([0xA0, 9]) + b"on").hex() and state["commands"] == 10,
                  f"status after 10 writes: {state}")

        # Refused writes come back as errors (ATT 0x0D too long, 0x80 application error).
        for value, code in ((b"x" * 21, 0x0D), (b"fail", 0x80)):
            mark = actuator.mark()
            try:
                await client.write_gatt_char(command, value, response=True)
            except BleakError as e:
                lab.log(f"write {value!r} refused as expected: {e}")
            else:
                raise AssertionError(f"write of {value!r} succeeded; the actuator refuses it with 0x{code:02X}")
            e = await actuator.wait("write_refused", after=mark)
            lab.check(e["error"] == code, f"refused with {e}")
        state = json.loads(await client.read_gatt_char(status))
        lab.check(state["commands"] == 10, f"a refused write changed the status: {state}")

        # Writes without response, in order, each reflected by a status notification.
        notified: list[dict] = []
        last = asyncio.Event()

        def on_status(_, data):
            s = json.loads(bytes(data))
            notified.append(s)
            if s["streams"] == STREAM_COUNT:
                last.set()

        await client.start_notify(status, on_status)
        await actuator.wait("subscribed", where=lambda e: e["char"] == "status")
        mark = actuator.mark()
        t0 = asyncio.get_running_loop().time()
        for i in range(STREAM_COUNT):
            await client.write_gatt_char(stream, i.to_bytes(2, "little"), response=False)
        await asyncio.wait_for(last.wait(), lab.timeout(120))
        dt = asyncio.get_running_loop().time() - t0
        lab.log(f"{STREAM_COUNT} writes without response reflected in {dt:.1f} s")
        got = [int.from_bytes(bytes.fromhex(e["value"]), "little")
               for e in actuator.events("write", after=mark) if e["char"] == "stream"]
        lab.check(got == list(range(STREAM_COUNT)),
                  f"peer got {len(got)} stream writes; first out of order at "
                  f"{next((i for i, v in enumerate(got) if v != i), len(got))}")
        counts = [s["streams"] for s in notified]
        lab.check(counts == sorted(counts) and len(set(counts)) == len(counts),
                  "status notifications out of order")
        lab.check(len(counts) == STREAM_COUNT, f"{len(counts)} status notifications for {STREAM_COUNT} writes")
        state = json.loads(await client.read_gatt_char(status))
        lab.check(state["streams"] == STREAM_COUNT and state["stream"] == (STREAM_COUNT - 1).to_bytes(2, "little").hex(),
                  f"final status {state}")
