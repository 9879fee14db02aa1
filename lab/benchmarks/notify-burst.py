"""Benchmark, not a test: where notifications are lost when a peripheral bursts faster than bluetoothd drains them: 2000 heart-rate values sent flat out, once per notify method (start, auto = AcquireNotify), counted at HCI (btmon), in the gateway (health) and on MQTT (Benchmarks/notify-burst)."""

# Run by Benchmarks/notify-burst (lab/run --scenario-dir lab/benchmarks --scenario notify-burst).
# For each method (twice, alternating) the gateway gets a fresh sensor that sends NOTIFICATIONS values as fast as the
# link takes them (each awaited by Bumble). Counted:
#   mqtt      values published on <dev>/gatt/180d/2a37, with the missing sequence numbers
#   gateway   the bridge's own count of notifications (health: connections.notifications) and
#             mqtt.dropped, so that a loss before the bridge and one after it are told apart
#   bluetoothd  its log lines about failed sends on the notification socket ("sendmsg")
# Results: <scenario dir>/benchmark.txt and benchmark.json.

import asyncio
import json
import time

from procs import LabError

ROWS = "BENCH"
TIMEOUT = 1200

NOTIFICATIONS = 2000
METHODS = ("start", "auto", "start", "auto")  # alternating: conditions drift under emulation


def find(value, key):
    """The first value of `key` anywhere in a JSON document."""
    if isinstance(value, dict):
        if key in value:
            return value[key]
        for v in value.values():
            found = find(v, key)
            if found is not None:
                return found
    return None


async def burst(lab, mqtt, method: str) -> dict:
    sensor = await lab.peer("sensor", hr_rate=0, hr_count=NOTIFICATIONS, hr_steady=True)
    dev = sensor.address.replace(":", "").upper()
    topic = f"gatt2mqtt/{dev}/gatt/180d/2a37"
    mark = mqtt.mark()
    log_path = lab.dir / "gateway.log"
    offset = log_path.stat().st_size if log_path.exists() else 0
    gateway = await lab.gateway(f"""
mqtt:
  host: 127.0.0.1
  port: 1883
gateway:
  id: lab
  health_interval: 1
log:
  level: debug
bluetooth:
  radio: bluez
  adapter: {lab.adapter}
  connect:
    addresses: ["{sensor.address}"]
  gatt:
    notify: ["*/180d/2a37"]
    notify_methods: ["*/180d/2a37={method}"]
""", config_name=f"gatt2mqtt-{method}-{len(mqtt.received('gatt2mqtt/bridge/lab/health'))}.yaml")
    try:
        await sensor.wait("hr_done", timeout=lab.timeout(600))
        # Until the published values stop coming.
        last, since = -1, time.monotonic()
        while time.monotonic() - since < 10:
            n = len(mqtt.received(topic, after=mark))
            if n != last:
                last, since = n, time.monotonic()
            if n >= NOTIFICATIONS:
                break
            await asyncio.sleep(0.5)
        await asyncio.sleep(2.5)  # one more health report after the last value
        health = mqtt.received("gatt2mqtt/bridge/lab/health", after=mark)
        report = health[-1].json() if health else {}
    finally:
        await gateway.stop()
        await sensor.stop()
    seqs = [int.from_bytes(bytes.fromhex(m.text)[2:4], "little") for m in mqtt.received(topic, after=mark)]
    got = mqtt.received(topic, after=mark)
    with open(gateway.log_path, "rb") as f:
        f.seek(offset)
        log = f.read().decode(errors="replace")
    return {
        "method": method, "published": len(seqs), "in_order": seqs == sorted(seqs),
        "missing": sorted(set(range(NOTIFICATIONS)) - set(seqs)),
        "bridge_notifications": find(report, "notifications"), "mqtt_dropped": find(report, "dropped"),
        "acquired": "notifications through AcquireNotify" in log,
        "seconds": round(got[-1].t - got[0].t, 1) if len(got) > 1 else 0,
        "sensor": sensor.events("hr_done"),
    }


def table(results: list[dict], sendmsg: list[str]) -> str:
    lines = [f"notify-burst: {NOTIFICATIONS} heart-rate notifications flat out, per notify method (one lab run)",
             f"  {'method':8}{'published':>10}{'bridge saw':>12}{'mqtt dropped':>14}{'seconds':>9}  missing"]
    for r in results:
        missing = r.get("missing", [])
        text = ", ".join(map(str, missing[:12])) + (" …" if len(missing) > 12 else "") if missing else "-"
        if "error" in r:
            lines.append(f"  {r['method']:8}error: {r['error']}")
            continue
        lines.append(f"  {r['method'] + ('*' if r['acquired'] else ''):8}{r['published']:>10}"
                     f"{str(r['bridge_notifications']):>12}{str(r['mqtt_dropped']):>14}{r['seconds']:>9}  {text}")
    lines.append("  * notifications came through AcquireNotify's socket")
    lines.append(f"  bluetoothd 'sendmsg' errors during the run: {len(sendmsg)}" + (f" (first: {sendmsg[0]})" if sendmsg else ""))
    return "\n".join(lines) + "\n"


async def run(lab):
    mqtt = await lab.mqtt(subscribe=["gatt2mqtt/+/gatt/180d/2a37", "gatt2mqtt/bridge/lab/health"])
    results = []
    for method in METHODS:
        lab.log("burst:", method)
        try:
            results.append(await burst(lab, mqtt, method))
        except LabError as e:
            results.append({"method": method, "error": str(e)})
        lab.log("burst:", method, results[-1])
    sendmsg = []
    for path in lab.dir.glob("bluetoothd*.log"):
        sendmsg += [line for line in path.read_text(errors="replace").splitlines() if "sendmsg" in line]
    (lab.dir / "benchmark.json").write_text(json.dumps({"results": results, "sendmsg": sendmsg}, indent=1))
    (lab.dir / "benchmark.txt").write_text(table(results, sendmsg))
    lab.log("\n" + table(results, sendmsg))
    failed = [r["method"] for r in results if "error" in r]
    lab.check(not failed, f"runs failed: {failed}")
