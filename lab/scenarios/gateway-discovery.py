"""The gateway scans through bluetoothd: adapter state, a sensor's advertisements, the device registry, presence, availability, scan stop/start requests."""

import json

ROWS = "C1 C2 C3 C11"
TIMEOUT = 300


async def run(lab):
    sensor = await lab.peer("sensor", battery=80)
    dev = sensor.address.replace(":", "").upper()
    mqtt = await lab.mqtt(subscribe="gatt2mqtt/#")
    await lab.gateway(f"""
mqtt:
  host: 127.0.0.1
  port: 1883
gateway:
  id: lab
  health_interval: 5
log:
  level: debug
bluetooth:
  radio: bluez
  adapter: {lab.adapter}
  offline_after: 20
  forget_after: 600
  presence:
    away_after: 10
""")

    # C1: the adapter is published with its state, and scanning runs while it is powered.
    await mqtt.expect("gatt2mqtt/bridge/lab/state", where=lambda m: m.json()["state"] == "online" and len(m.json()["instance"]) == 16, timeout=60)
    await mqtt.expect(
        "gatt2mqtt/bridge/lab/adapters",
        where=lambda m: any(a.get("id") == lab.adapter and a.get("state") == "poweredOn" and a.get("discovering")
                            for a in m.json()),
        timeout=90)

    # C2: the sensor's advertisement, as TOPICS.md describes it.
    adv = await mqtt.expect(f"gatt2mqtt/{dev}/advertisement",
                            where=lambda m: m.json().get("name") == "lab-sensor", timeout=120)
    body = adv.json()
    lab.check(body["id"] == sensor.address.upper(), f"id {body.get('id')}")
    lab.check(body.get("addr_type") == "random", f"addr_type {body.get('addr_type')}")
    lab.check({"180f", "180d"} <= set(body.get("uuids", [])), f"uuids {body.get('uuids')}")
    lab.check(body.get("gw") == "lab", f"gw {body.get('gw')}")
    lab.check(isinstance(body.get("rssi"), int), f"rssi {body.get('rssi')}")
    lab.check(not adv.retain, "advertisements are not retained")

    # C3: one registry: availability and the devices list.
    await mqtt.expect(f"gatt2mqtt/{dev}/availability", where=lambda m: m.json()["state"] == "online", timeout=60)
    await mqtt.expect("gatt2mqtt/bridge/lab/devices",
                      where=lambda m: sensor.address.upper() in m.text, timeout=60)
    # A newcomer gets the retained state at once: adapters, devices, availability.
    late = await lab.mqtt("late", subscribe=["gatt2mqtt/bridge/lab/adapters", "gatt2mqtt/bridge/lab/devices",
                                             f"gatt2mqtt/{dev}/availability"])
    for topic in ("gatt2mqtt/bridge/lab/adapters", "gatt2mqtt/bridge/lab/devices", f"gatt2mqtt/{dev}/availability"):
        m = await late.expect(topic, timeout=30)
        lab.check(m.retain, f"{topic} is retained")

    # C11: presence from the smoothed RSSI.
    await mqtt.expect(f"gatt2mqtt/{dev}/presence", where=lambda m: m.json()["state"] == "present", timeout=60)

    # scan request: stop, then start again; each answered on the response topic.
    mark = mqtt.mark()
    mqtt.publish("gatt2mqtt/bridge/lab/request/scan", json.dumps({"action": "stop", "transaction": 1}))
    resp = await mqtt.expect("gatt2mqtt/bridge/lab/response/scan", after=mark, timeout=60)
    lab.check(resp.json().get("status") == "ok" and resp.json().get("transaction") == 1, f"scan stop: {resp.text}")
    await mqtt.expect("gatt2mqtt/bridge/lab/adapters", after=mark,
                      where=lambda m: any(a.get("id") == lab.adapter and not a.get("discovering") for a in m.json()),
                      timeout=60)
    mark = mqtt.mark()
    mqtt.publish("gatt2mqtt/bridge/lab/request/scan", json.dumps({"action": "start", "transaction": 2}))
    resp = await mqtt.expect("gatt2mqtt/bridge/lab/response/scan", after=mark, timeout=60)
    lab.check(resp.json().get("status") == "ok", f"scan start: {resp.text}")
    await mqtt.expect("gatt2mqtt/bridge/lab/adapters", after=mark,
                      where=lambda m: any(a.get("id") == lab.adapter and a.get("discovering") for a in m.json()),
                      timeout=60)
    # A malformed scan request gets an error, and the gateway carries on.
    mark = mqtt.mark()
    mqtt.publish("gatt2mqtt/bridge/lab/request/scan", '{"action": "sideways"}')
    resp = await mqtt.expect("gatt2mqtt/bridge/lab/response/scan", after=mark, timeout=60)
    lab.check(resp.json().get("error") == "invalid_payload", f"bad scan: {resp.text}")

    # The sensor goes away: away, then offline.
    mark = mqtt.mark()
    await sensor.stop()
    await mqtt.expect(f"gatt2mqtt/{dev}/presence", after=mark, where=lambda m: m.json()["state"] == "away", timeout=90)
    await mqtt.expect(f"gatt2mqtt/{dev}/availability", after=mark,
                      where=lambda m: m.json()["state"] == "offline", timeout=120)
    health = await mqtt.expect("gatt2mqtt/bridge/lab/health", where=lambda m: "discovery" in m.json(), timeout=60)
    # The BlueZ session's own section: one bus connection, mirroring bluetoothd, nothing lost.
    bluez = health.json().get("bluez") or {}
    lab.check(bluez.get("synced") is True and bluez.get("connections") == 1
              and bluez.get("snapshots", 0) >= 1 and bluez.get("snapshots_after_loss") == 0,
              f"health's bluez section: {bluez}")
