"""The gateway connects to the sensor, actuator and hostile peers: retained connection and GATT tree, decoded battery /get, /set with and without response, 20 queued writes in order, and error results (invalid_payload, not_permitted, unknown_characteristic, unknown_device, a failing read) that break nothing."""

import json

from labkit import uuids
from procs import LabError

ROWS = "C4 C5 C6 C8"
TIMEOUT = 480


def seg(uuid: str) -> str:
    """A UUID as a topic segment (TOPICS.md): short form for SIG UUIDs, else lower case."""
    return uuid.lower()


BATTERY = f"{seg(uuids.BATTERY_SERVICE)}/{seg(uuids.BATTERY_LEVEL)}"
ACT = seg(uuids.ACTUATOR_SERVICE)
COMMAND = f"{ACT}/{seg(uuids.ACTUATOR_COMMAND)}"
STREAM = f"{ACT}/{seg(uuids.ACTUATOR_STREAM)}"
STATUS = f"{ACT}/{seg(uuids.ACTUATOR_STATUS)}"
HOSTILE = seg(uuids.HOSTILE_SERVICE)
FAILING = f"{HOSTILE}/{seg(uuids.HOSTILE_FAILING_READ)}"
ECHO = f"{HOSTILE}/{seg(uuids.HOSTILE_ECHO)}"


def characteristics(tree: dict) -> dict:
    return {(s["uuid"], c["uuid"]): c for s in tree["services"] for c in s["characteristics"]}


async def run(lab):
    sensor = await lab.peer("sensor", battery=87)
    actuator = await lab.peer("actuator")
    hostile = await lab.peer("hostile")
    peers = {"sensor": sensor, "actuator": actuator, "hostile": hostile}
    dev = {name: p.address.replace(":", "").upper() for name, p in peers.items()}
    mqtt = await lab.mqtt(subscribe="gatt2mqtt/#")
    gateway = await lab.gateway(lab.bluez_gateway_config(
        connect=[sensor.address, actuator.address, hostile.address], extra=f"""\
    retry_min_delay: 1
  gatt:
    formats: ["*/{BATTERY}=decoded", "*/{STATUS}=utf8"]
"""))

    def topic(name: str, char: str, verb: str = "") -> str:
        return f"gatt2mqtt/{dev[name]}/gatt/{char}" + (f"/{verb}" if verb else "")

    async def request(name: str, char: str, verb: str, payload: str, timeout: float = 60):
        """Publish a request; the first result on that characteristic's result topic."""
        mark = mqtt.mark()
        mqtt.publish(topic(name, char, verb), payload)
        result = await mqtt.expect(topic(name, char, "result"), after=mark, timeout=timeout)
        lab.log(f"{verb} {name} {char} {payload!r} -> {result.text}")
        return result.json(), mark

    # C4: every device connected, services resolved: `ready`, retained, owned by this gateway.
    for name in peers:
        m = await mqtt.expect(f"gatt2mqtt/{dev[name]}/connection",
                              where=lambda m: m.json().get("state") == "ready", timeout=180)
        lab.check(m.json().get("owner") == "lab", f"{name} connection: {m.text}")
        await peers[name].wait("connected", timeout=30)
    late = await lab.mqtt("late", subscribe=[f"gatt2mqtt/{d}/{t}" for d in dev.values()
                                             for t in ("connection", "gatt")])
    trees = {}
    for name, d in dev.items():
        c = await late.expect(f"gatt2mqtt/{d}/connection", timeout=30)
        lab.check(c.retain and c.json().get("state") == "ready", f"retained {name} connection: {c.text}")
        g = await late.expect(f"gatt2mqtt/{d}/gatt", timeout=30)
        lab.check(g.retain, f"{name} GATT tree is retained")
        trees[name] = characteristics(g.json())

    # C5: the GATT trees: UUIDs in topic form, flags as BlueZ reports them, descriptors.
    battery = trees["sensor"].get(tuple(BATTERY.split("/")))
    lab.check(battery and {"read", "notify"} <= set(battery["flags"]), f"battery level: {battery}")
    lab.check("2902" in battery.get("descriptors", []), f"battery level descriptors: {battery}")
    hr = trees["sensor"].get(("180d", "2a37"))
    lab.check(hr and "notify" in hr["flags"], f"heart rate measurement: {hr}")
    for char, flags in ((COMMAND, {"write"}), (STREAM, {"write-without-response"}),
                        (STATUS, {"read", "notify"})):
        c = trees["actuator"].get(tuple(char.split("/")))
        lab.check(c and flags <= set(c["flags"]), f"actuator {char}: {c}")
    failing = trees["hostile"].get(tuple(FAILING.split("/")))
    lab.check(failing and "read" in failing["flags"], f"hostile failing read: {failing}")

    # C6: a read through /get: the decoded value on the value topic, then an ok result
    # echoing the transaction.
    mark_peer = sensor.mark()  # (bluetoothd's battery plugin reads the level by itself too)
    result, mark = await request("sensor", BATTERY, "get", json.dumps({"transaction": "b1"}))
    lab.check(result.get("op") == "read" and result.get("status") == "ok"
              and result.get("transaction") == "b1", f"battery read result: {result}")
    value = await mqtt.expect(topic("sensor", BATTERY), after=mark, timeout=30)
    lab.check(value.json().get("battery_level") == 87, f"decoded battery value: {value.text}")
    await sensor.wait("battery_read", after=mark_peer)
    # An empty /get reads too; the value follows a change on the peer.
    sensor.send("battery", level=55)
    await sensor.wait("battery", where=lambda e: e["level"] == 55)
    result, mark = await request("sensor", BATTERY, "get", "")
    lab.check(result.get("status") == "ok" and "transaction" not in result, f"empty /get: {result}")
    value = await mqtt.expect(topic("sensor", BATTERY), after=mark, timeout=30)
    lab.check(value.json().get("battery_level") == 55, f"battery after the change: {value.text}")

    # C8: a write with response (JSON and bare hex), a write without response.
    mark_peer = actuator.mark()
    result, _ = await request("actuator", COMMAND, "set", json.dumps({"hex": "a001", "transaction": "w1"}))
    lab.check(result.get("op") == "write" and result.get("status") == "ok"
              and result.get("transaction") == "w1", f"write with response: {result}")
    e = await actuator.wait("write", where=lambda e: e["char"] == "command", after=mark_peer)
    lab.check(e["value"] == "a001" and e["response"], f"actuator got {e}")
    result, _ = await request("actuator", COMMAND, "set", "a002")
    lab.check(result.get("status") == "ok", f"bare hex write: {result}")
    result, _ = await request("actuator", STREAM, "set",
                              json.dumps({"hex": "b001", "response": False, "transaction": "w2"}))
    lab.check(result.get("status") == "ok" and result.get("transaction") == "w2",
              f"write without response: {result}")
    e = await actuator.wait("write", where=lambda e: e["char"] == "stream", after=mark_peer)
    lab.check(e["value"] == "b001" and not e["response"], f"actuator got {e}")
    writes = [(e["char"], e["value"]) for e in actuator.events("write", after=mark_peer)]
    lab.check(writes == [("command", "a001"), ("command", "a002"), ("stream", "b001")],
              f"actuator writes: {writes}")
    # Read back through the gateway: the status characteristic (utf8 format) reflects them.
    mark_peer = actuator.mark()
    result, mark = await request("actuator", STATUS, "get", json.dumps({"transaction": 3}))
    lab.check(result.get("status") == "ok" and result.get("transaction") == 3, f"status read: {result}")
    status = (await mqtt.expect(topic("actuator", STATUS), after=mark, timeout=30)).json()
    lab.check(status == {"command": "a002", "commands": 2, "stream": "b001", "streams": 1},
              f"status read through the gateway: {status}")
    e = await actuator.wait("status_read", after=mark_peer)
    lab.check(json.loads(e["status"]) == status, f"peer served {e['status']}, gateway published {status}")

    # A write the device refuses (ATT 0x80): an error result, nothing else.
    mark_peer = actuator.mark()
    result, _ = await request("actuator", COMMAND, "set", json.dumps({"utf8": "fail", "transaction": "f"}))
    lab.check(result.get("status") == "error" and result.get("error") and result.get("message")
              and result.get("transaction") == "f", f"refused write: {result}")
    await actuator.wait("write_refused", after=mark_peer)

    # 20 writes published back to back on one characteristic: all ok, in order, and the
    # peripheral got them in that order.
    mark_peer = actuator.mark()
    mark = mqtt.mark()
    for i in range(20):
        mqtt.publish(topic("actuator", COMMAND, "set"), json.dumps({"hex": f"c0{i:02x}", "transaction": i}))

    def results_in() -> list:
        return [m.json() for m in mqtt.received(topic("actuator", COMMAND, "result"), after=mark)]

    try:
        await mqtt.expect(topic("actuator", COMMAND, "result"), after=mark,
                          where=lambda m: len(results_in()) >= 20, timeout=120)
    except LabError:
        raise LabError(f"{len(results_in())} of 20 write results arrived; last: {results_in()[-2:]}") from None
    got = results_in()
    lab.check([r.get("transaction") for r in got] == list(range(20)),
              f"results out of order: {[r.get('transaction') for r in got]}")
    lab.check(all(r.get("status") == "ok" for r in got),
              f"failed writes: {[r for r in got if r.get('status') != 'ok'][:3]}")
    values = [e["value"] for e in actuator.events("write", after=mark_peer) if e["char"] == "command"]
    lab.check(values == [f"c0{i:02x}" for i in range(20)], f"peer got {values}")

    # Malformed /set payloads: invalid_payload, and nothing reaches the device.
    mark_peer = actuator.mark()
    for payload in ("zz", '{"hex": "0102"', '{"hex": "01", "base64": "AQ=="}', '{"hex": "01", "colour": 1}'):
        result, _ = await request("actuator", COMMAND, "set", payload)
        lab.check(result.get("status") == "error" and result.get("error") == "invalid_payload"
                  and result.get("message"), f"malformed /set {payload!r}: {result}")
    result, _ = await request("actuator", COMMAND, "set", json.dumps({"hex": "d0", "transaction": "fence"}))
    lab.check(result.get("status") == "ok", f"write after the malformed ones: {result}")
    await actuator.wait("write", where=lambda e: e["value"] == "d0", after=mark_peer)
    values = [e["value"] for e in actuator.events("write", after=mark_peer)]
    lab.check(values == ["d0"], f"malformed payloads reached the device: {values}")

    # Requests that cannot be served: read-only characteristic written, unknown
    # characteristic, unknown device; each answered on that characteristic's result topic.
    result, _ = await request("sensor", BATTERY, "set", "01")
    lab.check(result.get("error") == "not_permitted", f"/set on battery level: {result}")
    result, _ = await request("sensor", "180f/2a99", "get", json.dumps({"transaction": "u"}))
    lab.check(result.get("status") == "error" and result.get("error") == "unknown_characteristic"
              and result.get("transaction") == "u", f"unknown characteristic: {result}")
    stranger = lab.address().replace(":", "")
    mark = mqtt.mark()
    mqtt.publish(f"gatt2mqtt/{stranger}/gatt/{BATTERY}/get", json.dumps({"transaction": "x"}))
    m = await mqtt.expect(f"gatt2mqtt/{stranger}/gatt/{BATTERY}/result", after=mark, timeout=60)
    lab.check(m.json().get("error") == "unknown_device" and m.json().get("transaction") == "x",
              f"unknown device: {m.text}")

    # The hostile peer: a read that fails with ATT 0x80 is an error result with a message;
    # its invalid UTF-8 value reads fine (hex); everything else keeps working.
    mark_all = mqtt.mark()
    peer_marks = {name: p.mark() for name, p in peers.items()}
    mark_peer = hostile.mark()
    result, _ = await request("hostile", FAILING, "get", json.dumps({"transaction": "h"}))
    lab.check(result.get("status") == "error" and result.get("error") in ("bluez_error", "not_permitted")
              and result.get("message") and result.get("transaction") == "h", f"failing read: {result}")
    await hostile.wait("read_failed", after=mark_peer)
    result, mark = await request("hostile", ECHO, "get", "")
    lab.check(result.get("status") == "ok", f"hostile echo read: {result}")
    echo = await mqtt.expect(topic("hostile", ECHO), after=mark, timeout=30)
    lab.check(echo.text == "fffec328", f"hostile echo value: {echo.payload!r}")
    result, mark = await request("sensor", BATTERY, "get", json.dumps({"transaction": "after"}))
    lab.check(result.get("status") == "ok", f"battery read after the hostile peer: {result}")
    value = await mqtt.expect(topic("sensor", BATTERY), after=mark, timeout=30)
    lab.check(value.json().get("battery_level") == 55, f"battery value: {value.text}")

    # Nothing broke: the gateway runs, no device left `ready` during the requests.
    lab.check(gateway.running, "the gateway kept running")
    for name in peers:
        states = [m.json().get("state") for m in mqtt.received(f"gatt2mqtt/{dev[name]}/connection", after=mark_all)]
        lab.check(all(s == "ready" for s in states), f"{name} connection changed: {states}")
        lab.check(not peers[name].events("disconnected", after=peer_marks[name]), f"{name} was disconnected")
