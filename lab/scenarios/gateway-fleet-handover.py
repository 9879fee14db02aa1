"""Two gateways on two controllers of one bluetoothd (hci0 and hci1, `fleet.ownership` on, one broker) hear one sensor: exactly one claims it and connects, its notifications reach MQTT once each, in order; SIGKILL the owner → its last will hands the device to the other gateway, which connects through its own controller and the notifications resume within 10 s (the figure is logged), again once each and in order; the successor's ownership_gained names the killed owner and owner_offline (a killed gateway cannot say ownership_lost: its last will does; a clean stop says it, shown in Tests/Fleet)."""

import json
import os
import signal
import time

from bluez import BlueZ
from labkit import uuids
from procs import LabError, scaled

ROWS = "C3 C7"
TIMEOUT = 420
CONTROLLERS = 2

HR_RATE = 20  # per second, for as long as a central is subscribed
BEFORE = 100  # values that must arrive through the first owner
AFTER = 60  # values that must arrive through the second one
HANDOVER_LIMIT = 10.0  # seconds from the kill to the first value through the new owner
# The lab's virtual controllers report no RSSI (HCI's 127, "not available"), which ranks every
# gateway as the weakest: it waits the whole `claim_delay` before claiming a device whose owner
# went offline. 2 s is what a gateway hearing the device at -58 dBm waits with the default 5 s
# (docs/FLEET.md); the rest of the hand-over (the will, the 1 s settle, connecting, resolving,
# re-arming notifications) is as configured by default.


def config(gw: str, adapter: str, sensor: str) -> str:
    return f"""
mqtt:
  host: 127.0.0.1
  port: 1883
gateway:
  id: {gw}
log:
  level: debug
bluetooth:
  radio: bluez
  adapter: {adapter}
  connect:
    addresses: ["{sensor}"]
fleet:
  ownership:
    enabled: true
    claim_delay: 2
"""


def seqs(messages) -> list[int]:
    """The sensor's sequence numbers (heart-rate Energy Expended field) of published values."""
    return [int.from_bytes(bytes.fromhex(m.text)[2:4], "little") for m in messages]


async def connected_adapters(address: str) -> list[str]:
    """The controllers (hci0, hci1) on which bluetoothd holds a link to `address`."""
    bluez = await BlueZ().connect()
    try:
        devices = await bluez.devices()
    finally:
        bluez.close()
    return sorted(path.split("/")[3] for path, d in devices.items()
                  if d.get("Address", "").upper() == address.upper() and d.get("Connected"))


async def run(lab):
    # hr_count 0: a stream per subscription, numbered from 0, until it is unsubscribed.
    sensor = await lab.peer("sensor", hr_rate=HR_RATE, hr_count=0, hr_steady=True,
                            advertise_connected=True)
    dev = sensor.address.replace(":", "").upper()
    mqtt = await lab.mqtt(subscribe="gatt2mqtt/#")
    hr = (f"gatt2mqtt/{dev}/gatt/{uuids.HEART_RATE_SERVICE.lower()}/"
          f"{uuids.HEART_RATE_MEASUREMENT.lower()}")
    # The wish is the device's, not a gateway's: it follows the device to its owner.
    mqtt.publish(f"{hr}/notify", "on", retain=True)
    mark = mqtt.mark()
    adapter_of = {"lab-a": "hci0", "lab-b": "hci1"}
    gateways = {
        gw: await lab.gateway(config(gw, adapter, sensor.address), name=f"gateway-{gw}",
                              config_name=f"{gw}.yaml")
        for gw, adapter in adapter_of.items()
    }

    def owner_claims(after: int) -> list[dict]:
        return [m.json() for m in mqtt.received(f"gatt2mqtt/{dev}/owner", after=after) if m.payload]

    await mqtt.expect(f"gatt2mqtt/{dev}/connection", after=mark,
                      where=lambda m: m.json().get("state") == "ready", timeout=180)
    claims = owner_claims(mark)
    lab.check(claims, "the device became ready without an owner claim")
    owner = claims[-1]["gw"]
    other = "lab-b" if owner == "lab-a" else "lab-a"
    lab.log(f"owner {owner} ({adapter_of[owner]}); claims: {claims}")

    async def stream(gw: str, after: int, count: int) -> list[int]:
        """Waits for `count` values after position `after` and checks them: the sensor's
        numbers from 0 (one stream per subscription), each once, in order."""
        try:
            await mqtt.expect(hr, after=after, timeout=count / HR_RATE * 4 + 60,
                              where=lambda m: len(mqtt.received(hr, after=after)) >= count)
        except LabError:
            raise LabError(f"through {gw}: only {len(mqtt.received(hr, after=after))} of {count} "
                           "heart-rate values published") from None
        got = seqs(mqtt.received(hr, after=after))
        lab.check(got == list(range(len(got))),
                  f"through {gw}: values lost, repeated or out of order: {got[:20]}…")
        return got

    await stream(owner, mark, BEFORE)
    links = await connected_adapters(sensor.address)
    lab.check(links == [adapter_of[owner]], f"links to the sensor before the kill: {links}")
    connections = sensor.events("connected")
    lab.check(len(connections) == 1, f"the sensor accepted {len(connections)} connections: {connections}")
    lab.check(gateways[other].running, f"{other} (not the owner) kept running")

    # The owner dies without a word: the broker publishes its will, the other takes over.
    start = mark
    mark = mqtt.mark()
    killed_at = time.monotonic()
    os.kill(gateways[owner].pid, signal.SIGKILL)
    try:
        gain = await mqtt.expect(f"gatt2mqtt/bridge/{other}/event", after=mark, timeout=60,
                                 where=lambda m: m.json().get("type") == "ownership_gained")
    except LabError:
        raise LabError(f"{other} did not take the device over within 60 s of killing {owner}") from None
    taken = mqtt.messages.index(gain)
    # Everything the killed owner published, up to the take-over: once each, in order.
    everything = mqtt.received(hr, after=start)
    old = seqs(everything[: len(everything) - len(mqtt.received(hr, after=taken))])
    lab.check(old == list(range(len(old))),
              f"through {owner}: values lost, repeated or out of order: {old[-20:]}")
    try:
        await mqtt.expect(hr, after=taken, timeout=120)
    except LabError:
        raise LabError(f"no value through {other} within 120 s of killing {owner}") from None
    resumed = mqtt.received(hr, after=taken)[0].t - killed_at
    lab.log(f"{other} took over {gain.t - killed_at:.1f} s after {owner} was killed; "
            f"notifications resumed after {resumed:.1f} s")
    lab.check(resumed <= scaled(HANDOVER_LIMIT),
              f"notifications resumed {resumed:.1f} s after the kill (limit {scaled(HANDOVER_LIMIT):.0f} s)")
    # (A refresh the killed owner had in flight may still arrive after the mark; nothing of it
    # after the take-over.)
    claims = owner_claims(mark)
    theirs = [c for c in claims if c["gw"] == other]
    lab.check(theirs and theirs[0].get("reason") == "owner_offline"
              and not [c for c in owner_claims(taken) if c["gw"] == owner],
              f"claims after the kill: {claims}")
    lab.check(gain.json().get("data", {}).get("from") == owner,
              f"{other} did not say ownership_gained from {owner}: {gain.text}")

    # A new subscription: the sensor numbers its stream from 0 again.
    second = await stream(other, taken, AFTER)
    links = await connected_adapters(sensor.address)
    lab.check(adapter_of[other] in links, f"links to the sensor after the hand-over: {links}")
    ready = [m.json() for m in mqtt.received(f"gatt2mqtt/{dev}/connection", after=mark)
             if m.json().get("state") == "ready"]
    lab.check(ready and ready[-1].get("owner") == other,
              f"connection after the hand-over: {ready[-1:] or 'never ready'}")
    lab.log(f"{len(old)} values through {owner}, then {len(second)} through {other}; links {links}")
    lab.check(gateways[other].running, f"{other} kept running")
    lab.log(json.dumps({"handover_seconds": round(resumed, 2), "owner": owner, "successor": other}))
