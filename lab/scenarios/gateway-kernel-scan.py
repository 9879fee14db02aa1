"""bluetooth.scan_method: management on real bluetoothd: discovery runs on the kernel's management socket, so a beacon's every new advertisement is published while bluetoothd emits no PropertiesChanged for it (counted with dbus-monitor); the sensor's advertisement as TOPICS.md describes it; discovery survives the kernel's 10.24-s LE discovery timeout; a connection to a device bluetoothd never saw goes through a short discovery of bluetoothd's own, then the kernel's scanning resumes; a scan stop/start request works on it."""

import asyncio
import json
import time

ROWS = "C1 C2 C4"
TIMEOUT = 420

BEACON_INTERVAL = 0.5  # s: a new advertisement (new manufacturer data) every half second


def beacon_counter(m) -> int | None:
    data = m.json().get("manufacturerdata", {}).get("ffff")
    return int.from_bytes(bytes.fromhex(data)[:4], "little") if data else None


async def run(lab):
    # bluetoothd's PropertiesChanged signals, as any D-Bus client would see them.
    monitor = await lab.process("dbus-monitor", [
        "dbus-monitor", "--system",
        "type='signal',sender='org.bluez',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged'"])
    beacon = await lab.peer("beacon", interval=BEACON_INTERVAL)
    bdev = beacon.address.replace(":", "").upper()
    bpath = "dev_" + beacon.address.replace(":", "_").upper()
    mqtt = await lab.mqtt(subscribe="gatt2mqtt/#")
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
  scan_method: management
  advertisement_min_interval: 0.001
""")

    # C1: discovery runs, through the kernel (the log says so), and the adapters topic says
    # discovering although bluetoothd's own Discovering stays false.
    await mqtt.expect(
        "gatt2mqtt/bridge/lab/adapters",
        where=lambda m: any(a.get("id") == lab.adapter and a.get("discovering") for a in m.json()),
        timeout=90)
    log = await gateway.wait_log("discovery started through the kernel")
    lab.check("scanning through bluetoothd instead" not in log, "the gateway fell back to bluetoothd as root")

    # C2: every new advertisement of the beacon is published, across the kernel's discovery
    # timeout (10.24 s): 30 s of advertisements, each counter once or more, few gaps.
    first = await mqtt.expect(f"gatt2mqtt/{bdev}/advertisement", where=lambda m: beacon_counter(m) is not None,
                              timeout=120)
    signals_before = monitor.log_path.read_text(errors="replace").count(bpath)
    mark, t0 = mqtt.mark(), time.monotonic()
    await mqtt.expect(f"gatt2mqtt/{bdev}/advertisement", after=mark,
                      where=lambda m: time.monotonic() - t0 > 30, timeout=120)
    counters = sorted({c for m in mqtt.received(f"gatt2mqtt/{bdev}/advertisement", after=mark)
                       if (c := beacon_counter(m)) is not None})
    span = counters[-1] - counters[0] + 1 if counters else 0
    lab.log(f"beacon: {len(counters)} of {span} advertisements published over 30 s (counters {counters[:1]}..{counters[-1:]})")
    lab.check(len(counters) >= 40, f"only {len(counters)} beacon advertisements in 30 s (expected ~60)")
    lab.check(len(counters) >= 0.8 * span, f"{span - len(counters)} of {span} beacon advertisements missing")
    body = first.json()
    lab.check(body.get("addr_type") == "random" and isinstance(body.get("rssi"), int)
              and body.get("name") == "lab-beacon" and body.get("gw") == "lab",
              f"beacon advertisement: {first.text}")
    signals = monitor.log_path.read_text(errors="replace").count(bpath) - signals_before
    lab.log(f"bluetoothd PropertiesChanged signals of the beacon meanwhile: {signals}")
    lab.check(signals == 0, f"bluetoothd emitted {signals} PropertiesChanged signals for the beacon")

    # C4: a sensor bluetoothd never saw: the gateway runs bluetoothd's discovery to learn it,
    # connects, and the kernel's discovery resumes (the beacon's advertisements go on).
    sensor = await lab.peer("sensor", battery=80)
    dev = sensor.address.replace(":", "").upper()
    adv = await mqtt.expect(f"gatt2mqtt/{dev}/advertisement", where=lambda m: m.json().get("name") == "lab-sensor",
                            timeout=120)
    lab.check({"180f", "180d"} <= set(adv.json().get("uuids", [])), f"sensor uuids: {adv.text}")
    mark = mqtt.mark()
    mqtt.publish("gatt2mqtt/bridge/lab/request/device/connect",
                 json.dumps({"device": sensor.address, "transaction": "c"}))
    await mqtt.expect(f"gatt2mqtt/{dev}/connection", after=mark,
                      where=lambda m: m.json().get("state") == "ready", timeout=180)
    await gateway.wait_log("discovering through bluetoothd to learn a device")
    mark = mqtt.mark()
    await mqtt.expect(f"gatt2mqtt/{bdev}/advertisement", after=mark, where=lambda m: beacon_counter(m) is not None,
                      timeout=60)
    mark, t0 = mqtt.mark(), time.monotonic()
    await mqtt.expect(f"gatt2mqtt/{bdev}/advertisement", after=mark,
                      where=lambda m: time.monotonic() - t0 > 15, timeout=90)
    after = {c for m in mqtt.received(f"gatt2mqtt/{bdev}/advertisement", after=mark)
             if (c := beacon_counter(m)) is not None}
    lab.check(len(after) >= 15, f"only {len(after)} beacon advertisements in 15 s after the connection")

    # A scan stop/start request works on the kernel's discovery.
    mark = mqtt.mark()
    mqtt.publish("gatt2mqtt/bridge/lab/request/scan", json.dumps({"action": "stop", "transaction": 1}))
    resp = await mqtt.expect("gatt2mqtt/bridge/lab/response/scan", after=mark, timeout=60)
    lab.check(resp.json().get("status") == "ok", f"scan stop: {resp.text}")
    await mqtt.expect("gatt2mqtt/bridge/lab/adapters", after=mark,
                      where=lambda m: any(a.get("id") == lab.adapter and not a.get("discovering") for a in m.json()),
                      timeout=60)
    mark = mqtt.mark()
    await asyncio.sleep(5)
    stopped = mqtt.received(f"gatt2mqtt/{bdev}/advertisement", after=mark)
    lab.check(len(stopped) <= 1, f"{len(stopped)} beacon advertisements published after scan stop")
    mark = mqtt.mark()
    mqtt.publish("gatt2mqtt/bridge/lab/request/scan", json.dumps({"action": "start", "transaction": 2}))
    resp = await mqtt.expect("gatt2mqtt/bridge/lab/response/scan", after=mark, timeout=60)
    lab.check(resp.json().get("status") == "ok", f"scan start: {resp.text}")
    await mqtt.expect(f"gatt2mqtt/{bdev}/advertisement", after=mark, where=lambda m: beacon_counter(m) is not None,
                      timeout=60)
    lab.check(gateway.running, "the gateway exited")
    # The monitor does see bluetoothd's signals (those of its own discovery for the connection):
    # the zero above is a count, not a deaf monitor.
    seen = monitor.log_path.read_text(errors="replace").count("member=PropertiesChanged")
    lab.check(seen > 0, "dbus-monitor saw no PropertiesChanged at all: the beacon's zero proves nothing")
