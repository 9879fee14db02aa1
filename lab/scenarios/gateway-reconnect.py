"""The sensor's process is killed and restarted (same address) 10 times: each time the gateway reconnects and re-arms notifications from the retained /notify (through AcquireNotify's socket each time) (one subscription per connection, every value once); connection/set disconnected tears down in order and stays away, connected brings it back."""

import asyncio
import json
import signal

from labkit import uuids
from procs import LabError

ROWS = "C4 C7 C10"
TIMEOUT = 900

ROUNDS = 10
HR_COUNT = 20  # notifications per subscription
HR_RATE = 20  # per second


def subscriptions_per_connection(peer) -> list[int]:
    """Heart-rate subscriptions the peer saw on each of its connections, in order."""
    counts: list[int] = []
    for e in peer.history:
        if e.get("event") == "connected":
            counts.append(0)
        elif e.get("event") == "subscribed" and e.get("char") == "hr" and counts:
            counts[-1] += 1
    return counts


async def run(lab):
    address = lab.address()
    dev = address.replace(":", "").upper()
    hr = f"gatt2mqtt/{dev}/gatt/{uuids.HEART_RATE_SERVICE.lower()}/{uuids.HEART_RATE_MEASUREMENT.lower()}"
    connection = f"gatt2mqtt/{dev}/connection"
    mqtt = await lab.mqtt(subscribe="gatt2mqtt/#")
    # The desired notification state, retained before the gateway even starts: it must be
    # honoured at every connection.
    mqtt.publish(f"{hr}/notify", "on", retain=True)

    async def start_sensor():
        return await lab.peer("sensor", address=address, hr_rate=HR_RATE, hr_count=HR_COUNT)

    def state(m) -> str:
        return m.json().get("state")

    async def connected_and_armed(peer, mark: int, what: str, peer_mark: int = 0) -> None:
        """Ready again, notifications re-armed once, every value of this connection once."""
        await mqtt.expect(connection, after=mark, where=lambda m: state(m) == "ready", timeout=120)
        await peer.wait("subscribed", where=lambda e: e["char"] == "hr", after=peer_mark, timeout=60)
        await peer.wait("hr_done", after=peer_mark, timeout=60)

        def values() -> list:
            return mqtt.received(hr, after=mark)

        try:
            await mqtt.expect(hr, after=mark, where=lambda m: len(values()) >= HR_COUNT, timeout=30)
        except LabError:
            raise LabError(f"{what}: {len(values())} of {HR_COUNT} values published") from None
        await asyncio.sleep(1.5)  # time for extra (duplicate) values to show
        seqs = [int.from_bytes(bytes.fromhex(m.text)[2:4], "little") for m in values()]
        lab.check(seqs == list(range(HR_COUNT)),
                  f"{what}: values {seqs}, expected 0..{HR_COUNT - 1} once each (repeats: a second "
                  f"subscription or handler; the first missing: bluetoothd re-enables a D-Bus client's "
                  f"notifications by itself as soon as the link is up again)")
        counts = subscriptions_per_connection(peer)
        lab.check(counts and counts[-1] == 1 and max(counts) == 1,
                  f"{what}: heart-rate subscriptions per connection {counts}")
        lab.log(f"{what}: ready, re-armed, {len(seqs)} values")

    sensor = await start_sensor()
    mark = mqtt.mark()
    gateway = await lab.gateway(f"""
mqtt:
  host: 127.0.0.1
  port: 1883
gateway:
  id: lab
log:
  level: debug
bluetooth:
  radio: bluez
  adapter: {lab.adapter}
  connect:
    addresses: ["{address}"]
    retry_min_delay: 1
    retry_max_delay: 4
""")
    await connected_and_armed(sensor, mark, "first connection")

    # C4 + C7: the peripheral dies (no disconnection of its own: the link times out) and
    # comes back with the same address, ten times.
    for i in range(1, ROUNDS + 1):
        mark = mqtt.mark()
        sensor.proc.send_signal(signal.SIGKILL)
        await sensor.stop()
        m = await mqtt.expect(connection, after=mark, where=lambda m: state(m) != "ready", timeout=60)
        lab.check(state(m) in ("disconnected", "connecting", "failed"), f"round {i}: after the kill: {m.text}")
        sensor = await start_sensor()
        await connected_and_armed(sensor, mark, f"round {i}")
    events = [m.json().get("type") for m in mqtt.received("gatt2mqtt/bridge/lab/event")]
    lab.log(f"bridge events: {events.count('connected')} connected, {events.count('disconnected')} disconnected")

    # C10: disconnect on demand: notifications off first, then the link; and it stays down
    # although the sensor keeps advertising.
    mark = mqtt.mark()
    mark_peer = sensor.mark()
    mqtt.publish(f"{connection}/set", json.dumps({"state": "disconnected"}))
    await mqtt.expect(connection, after=mark, where=lambda m: state(m) == "disconnected", timeout=60)
    await sensor.wait("disconnected", after=mark_peer, timeout=60)
    order = [e["event"] for e in sensor.history[mark_peer:] if e["event"] in ("unsubscribed", "disconnected")]
    lab.check(order[:2] == ["unsubscribed", "disconnected"],
              f"teardown order {order}: notifications must be turned off before disconnecting")
    mark_quiet = mqtt.mark()
    mark_peer = sensor.mark()
    await asyncio.sleep(10)  # the sensor re-advertises every 3 s meanwhile
    lab.check(not sensor.events("connected", after=mark_peer), "reconnected after connection/set disconnected")
    states = [state(m) for m in mqtt.received(connection, after=mark_quiet)]
    lab.check(not states, f"connection changed while it should stay disconnected: {states}")

    # And back on demand, notifications re-armed once more.
    mark = mqtt.mark()
    mark_peer = sensor.mark()
    mqtt.publish(f"{connection}/set", json.dumps({"state": "connected"}))
    await connected_and_armed(sensor, mark, "connection/set connected", peer_mark=mark_peer)
    # Every connection re-acquired the heart rate's notification socket (the default method).
    log = gateway.log_path.read_text(errors="replace")
    acquired = [line for line in log.splitlines()
                if "notifications through AcquireNotify" in line and "180d/2a37" in line]
    lab.check(len(acquired) >= ROUNDS + 2,
              f"heart rate acquired {len(acquired)} times over {ROUNDS + 2} connections")
    lab.check(gateway.running, "the gateway kept running")
