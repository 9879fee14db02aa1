"""The gateway forwards notifications: a retained /notify on subscribes (ok result), 1000 heart-rate notifications at 50/s are all published in order on the value topic, /notify off unsubscribes; the connected sensor's RSSI read from the link through the kernel's management socket (device/rssi, as root)."""

import json

from labkit import uuids
from procs import LabError

ROWS = "C7 C11"
TIMEOUT = 360

HR_COUNT = 1000
HR_RATE = 50  # per second: 20 s of notifications


async def run(lab):
    sensor = await lab.peer("sensor", hr_rate=HR_RATE, hr_count=HR_COUNT, hr_steady=True)
    dev = sensor.address.replace(":", "").upper()
    mqtt = await lab.mqtt(subscribe="gatt2mqtt/#")
    gateway = await lab.gateway(lab.bluez_gateway_config(connect=[sensor.address]))
    await mqtt.expect(f"gatt2mqtt/{dev}/connection", where=lambda m: m.json().get("state") == "ready",
                      timeout=180)
    # C11: the connected sensor's link read through the kernel's management socket (root has
    # CAP_NET_ADMIN): an answer with an RSSI, and no "unavailable" event.
    mark = mqtt.mark()
    mqtt.publish("gatt2mqtt/bridge/lab/request/device/rssi",
                 json.dumps({"device": sensor.address, "transaction": "rssi"}))
    answer = await mqtt.expect("gatt2mqtt/bridge/lab/response/device/rssi", after=mark, timeout=30)
    data = answer.json().get("data", {})
    lab.check(answer.json().get("status") == "ok" and isinstance(data.get("rssi"), int)
              and -127 <= data["rssi"] <= 20 and data.get("device") == dev,
              f"device/rssi: {answer.text}")
    lab.log(f"link quality through the management socket: {answer.text}")
    refused = [m for m in mqtt.received("gatt2mqtt/bridge/lab/event")
               if m.json().get("type") == "connection_rssi_unavailable"]
    lab.check(not refused, f"link RSSI refused as root: {[m.text for m in refused]}")

    # (bluetoothd's battery plugin subscribes to the battery level by itself: heart rate only)
    early = [e for e in sensor.events("subscribed") if e["char"] == "hr"]
    lab.check(not early, f"heart rate subscribed before any request: {early}")

    # /notify on (retained: the desired state): an ok result, the peer sees the subscription.
    hr = f"gatt2mqtt/{dev}/gatt/{uuids.HEART_RATE_SERVICE.lower()}/{uuids.HEART_RATE_MEASUREMENT.lower()}"
    mark = mqtt.mark()
    mqtt.publish(f"{hr}/notify", "on", retain=True)
    result = await mqtt.expect(f"{hr}/result", after=mark, timeout=60)
    lab.check(result.json().get("op") == "notify" and result.json().get("status") == "ok"
              and result.json().get("notifying") is True, f"notify on: {result.text}")
    await sensor.wait("subscribed", where=lambda e: e["char"] == "hr", timeout=30)

    # Every notification, once, in order: the sensor numbers them (Energy Expended field).
    def values() -> list:
        return mqtt.received(hr, after=mark)

    try:
        await mqtt.expect(hr, after=mark, where=lambda m: len(values()) >= HR_COUNT,
                          timeout=HR_COUNT / HR_RATE * 4 + 60)
    except LabError:
        raise LabError(f"only {len(values())} of {HR_COUNT} heart-rate values published "
                       f"(sensor: {sensor.events('hr_done') or sensor.events('hr_stopped')})") from None
    got = values()
    dt = got[-1].t - got[0].t
    lab.log(f"{len(got)} values in {dt:.1f} s ({len(got) / max(dt, 0.001):.0f}/s)")
    done = await sensor.wait("hr_done", timeout=30)
    lab.check(done["sent"] == HR_COUNT, f"sensor sent {done['sent']}")
    lab.log(f"the sensor sent {done['sent']} in {done['seconds']} s")
    measurements = [bytes.fromhex(m.text) for m in got]
    lab.check(all(len(v) == 4 and v[0] == 0x08 for v in measurements),
              f"malformed values: {[m.text for m in got if len(bytes.fromhex(m.text)) != 4][:3]}")
    seqs = [int.from_bytes(v[2:4], "little") for v in measurements]
    lab.check(seqs == list(range(HR_COUNT)),
              f"values out of order, lost or repeated: first bad index "
              f"{next((i for i, s in enumerate(seqs) if s != i), len(seqs))}")
    lab.check(not any(m.retain for m in got), "values are not retained (mqtt.retain_values is false)")

    # /notify off: an ok result, the peer sees the unsubscription, no more values.
    mark = mqtt.mark()
    mark_peer = sensor.mark()
    mqtt.publish(f"{hr}/notify", "off", retain=True)
    result = await mqtt.expect(f"{hr}/result", after=mark, timeout=60)
    lab.check(result.json().get("status") == "ok" and result.json().get("notifying") is False,
              f"notify off: {result.text}")
    await sensor.wait("unsubscribed", where=lambda e: e["char"] == "hr", after=mark_peer, timeout=30)
    subscriptions = [e for e in sensor.events("subscribed") if e["char"] == "hr"]
    lab.check(len(subscriptions) == 1, f"{len(subscriptions)} subscriptions for one /notify on")
    lab.check(gateway.running, "the gateway kept running")
