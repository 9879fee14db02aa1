"""Fleet ownership end to end (issue 16): ten gatt2mqtt processes on one real mosquitto, each
with its own simulated world in which the same thirty actuators appear at different RSSI (four
of them at the same RSSI on nine gateways), every gateway configured to connect them all.

Three of the devices (roam-00…02) are not connected by any gateway; the other 27 are.

Checked, from the broker alone (an observer subscribed to everything):
- after settling, every device has exactly one valid owner claim, every gateway's devices list
  names that owner, the owner's `<dev>/connection` is `ready`, and the simulated peripherals
  counted exactly one connection per connected device (0 duplicate connections);
- a `/set` to each device is carried out exactly once (the simulated peripherals' write counts
  in the gateways' health, and one result per request, from the owner);
- retained `presence` never goes `away` while the RSSI wanders (±6 dB per advertisement);
- SIGKILL of the gateway that owns ten devices: each has a new owner (that has it `ready` when
  it is connected) within 10 s, with `ownership_gained` events saying why;
- the killed gateway comes back hearing two unconnected devices 25 dB better than their new
  owners: they move back after the dwell, with `ownership_lost` events on the gateways that let
  them go; one unconnected device only 4 dB better (inside the 10 dB margin) and seven
  connected ones 25 dB better (a connected device is never taken) stay.

Usage: fleet_e2e.py GATEWAY [ARTIFACTS]. Prints "N passed, N failed"; also writes the figures
of the run (messages, retained topics, hand-over times) to ARTIFACTS/fleet-figures.json.
"""

import json
import os
import random
import signal
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "PythonSupport"))
from e2e import Run, wait_for  # noqa: E402

import paho.mqtt.client as mqtt  # noqa: E402

GATEWAY = sys.argv[1]
ARTIFACTS = sys.argv[2] if len(sys.argv) > 2 else None
BASE = "fleet"
GATEWAYS = [f"gw{i}" for i in range(10)]
# roam-00…02 are owned but never connected (no connect rule names them); the rest are.
DEVICES = [f"roam-{i:02d}" for i in range(3)] + [f"fleet-{i:02d}" for i in range(3, 30)]
LINKED = DEVICES[3:]
SERVICE = "5a1d0000-6a63-4b3c-9c5e-3b5c7d2a0001"
COMMAND = "5a1d0001-6a63-4b3c-9c5e-3b5c7d2a0001"
DWELL = 15
CONNECTED = ("connected", "discovering", "ready")

random.seed(16)
# MEANS[g][d]: the mean RSSI gateway g hears device d at. gw0 is by far the strongest for the
# first ten devices and barely hears the rest; devices 10, 15, 20, 25 are at -62 on gw1…gw9.
MEANS = []
for g in range(len(GATEWAYS)):
    row = []
    for d in range(len(DEVICES)):
        if d < 10:
            row.append(-45 if g == 0 else random.randint(-80, -66))
        elif d % 5 == 0:
            row.append(-95 if g == 0 else -62)
        else:
            row.append(-95 if g == 0 else random.randint(-80, -50))
    MEANS.append(row)


class Observer:
    """Everything under the base topic, as it arrives."""

    def __init__(self, port):
        self.lock = threading.Lock()
        self.latest = {}
        self.history = []  # (time, topic, payload)
        self.count = 0
        try:
            client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION1, client_id="fleet-observer")
        except AttributeError:
            client = mqtt.Client(client_id="fleet-observer")
        client.on_message = self.on_message
        client.connect("127.0.0.1", port)
        client.subscribe(BASE + "/#", qos=1)
        client.loop_start()
        self.client = client

    def on_message(self, _client, _userdata, message):
        try:
            payload = message.payload.decode("utf-8")
        except UnicodeDecodeError:
            payload = ""
        with self.lock:
            self.count += 1
            self.latest[message.topic] = payload
            self.history.append((time.monotonic(), message.topic, payload))

    def json(self, topic):
        with self.lock:
            text = self.latest.get(topic)
        try:
            return json.loads(text) if text else None
        except ValueError:
            return None

    def since(self, start, suffix=""):
        with self.lock:
            return [(t, topic, p) for t, topic, p in self.history if t >= start and topic.endswith(suffix)]

    def publish(self, topic, payload):
        self.client.publish(topic, payload, qos=1)


def world(path, means):
    lines = ["seed: 16", "advertising_interval: 0.5", "connect_latency: 0.3", "max_connections: 32",
             "devices:"]
    for name, rssi in zip(DEVICES, means):
        lines.append(f"  - {{kind: actuator, name: {name}, rssi: {rssi}}}")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def config(run, gateway, port, world_path):
    path = os.path.join(run.work, f"{gateway}.yaml")
    with open(path, "w") as f:
        f.write(f"""mqtt:
  host: 127.0.0.1
  port: {port}
  base_topic: {BASE}
gateway:
  id: {gateway}
  health_interval: 2
log:
  level: info
bluetooth:
  radio: simulated
  simulation: {world_path}
  connect:
    names: ["fleet-*"]
    max_connections: 32
homeassistant:
  enabled: false
fleet:
  ownership:
    enabled: true
    dwell: {DWELL}
""")
    return path


def start(run, index, port, means, log=None):
    gateway = GATEWAYS[index]
    world_path = os.path.join(run.work, f"world-{log or gateway}.yaml")
    world(world_path, means)
    return run.start(log or gateway, [GATEWAY, "run", "--config", config(run, gateway, port, world_path)])


def main():
    run = Run("fleet")
    port = run.broker()
    observer = Observer(port)
    processes = {}
    figures = {}
    started = time.monotonic()
    for index in range(len(GATEWAYS)):
        processes[index] = start(run, index, port, MEANS[index])

    def ids():
        """Device name → id, from the gateways' devices lists."""
        found = {}
        for gateway in GATEWAYS:
            for entry in observer.json(f"{BASE}/bridge/{gateway}/devices") or []:
                if entry.get("name") in DEVICES:
                    found[entry["name"]] = entry["id"]
        return found

    def claim(device_id):
        return observer.json(f"{BASE}/{device_id}/owner")

    def online(gateway):
        state = observer.json(f"{BASE}/bridge/{gateway}/state") or {}
        return state.get("state") == "online"

    def settled(names=DEVICES):
        known = ids()
        if not all(name in known for name in names):
            return None
        for name in names:
            device = known[name]
            owner = (claim(device) or {}).get("gw")
            if not owner or not online(owner):
                return None
            connection = observer.json(f"{BASE}/{device}/connection") or {}
            if name in LINKED and (connection.get("state") != "ready" or connection.get("owner") != owner):
                return None
        return known

    known = wait_for(settled, 90, 1)
    figures["settle_seconds"] = round(time.monotonic() - started, 1)
    figures["messages_while_settling"] = observer.count
    settled_at = time.monotonic()
    if not run.check("every device has one owner that has it ready", known is not None,
                     f"{len(ids())} devices known"):
        finish(run, observer, figures)
    owners = {name: claim(known[name])["gw"] for name in DEVICES}
    run.check("the strongest gateway owns its ten devices",
              all(owners[name] == "gw0" for name in DEVICES[:10]), str(owners))
    run.check("devices heard alike by nine gateways have one owner each",
              all(owners[DEVICES[d]] in GATEWAYS[1:] for d in (10, 15, 20, 25)), str(owners))

    def lists_agree():
        for gateway in GATEWAYS:
            if not online(gateway):
                continue
            for entry in observer.json(f"{BASE}/bridge/{gateway}/devices") or []:
                name = entry.get("name")
                if name in owners and entry.get("owner") != owners[name]:
                    return False
        return True
    run.check("every gateway's devices list names the same owners", wait_for(lists_agree, 10, 1))

    def links():
        """Device name → gateways whose devices list shows it connected."""
        found = {name: [] for name in DEVICES}
        for gateway in GATEWAYS:
            if not online(gateway):
                continue
            for entry in observer.json(f"{BASE}/bridge/{gateway}/devices") or []:
                if entry.get("name") in found and entry.get("connection") in CONNECTED:
                    found[entry["name"]].append(gateway)
        return found

    def health_sum(key):
        return sum(((observer.json(f"{BASE}/bridge/{g}/health") or {}).get("simulation") or {}).get(key, 0)
                   for g in GATEWAYS)

    def one_link_each():
        found = links()
        return all(len(found[n]) == 1 for n in LINKED) and all(not found[n] for n in DEVICES[:3])
    run.check("0 duplicate connections: each connected device on exactly one gateway",
              wait_for(one_link_each, 10, 1), str(links()))
    # Steady state: ten seconds in which nothing happens but advertisements, presence and health.
    quiet = time.monotonic()
    time.sleep(10)
    window = observer.since(quiet)
    figures["steady_messages_per_second"] = round(len(window) / 10, 1)
    kinds = {}
    for _, topic, _p in window:
        kind = topic.rsplit("/", 1)[-1]
        kinds[kind] = kinds.get(kind, 0) + 1
    figures["steady_messages_by_last_level"] = kinds
    run.check("the simulated peripherals accepted exactly 27 connections in all",
              health_sum("connections") == len(LINKED), str(health_sum("connections")))
    by_id = {known[name]: name for name in DEVICES}
    foreign = []
    for _, topic, payload in window:
        device = topic[len(BASE) + 1:].split("/", 1)[0]
        if device in by_id and topic.endswith("/presence"):
            gw = (json.loads(payload) if payload else {}).get("gw")
            if gw != owners[by_id[device]]:
                foreign.append((topic, gw))
    run.check("device-level state comes from each device's owner only (presence names it)",
              not foreign and any(t.endswith("/presence") for _, t, _p in window), str(foreign[:5]))

    # One write to every device, by its id; each carried out once.
    sent = time.monotonic()
    for name in DEVICES:
        observer.publish(f"{BASE}/{known[name]}/gatt/{SERVICE}/{COMMAND}/set",
                         json.dumps({"hex": "2a", "transaction": name}))

    def results():
        found = {}
        for _, topic, payload in observer.since(sent, "/result"):
            try:
                body = json.loads(payload)
            except ValueError:
                continue
            if body.get("op") == "write":
                found.setdefault(body.get("transaction"), []).append(body)
        return found
    done = wait_for(lambda: len(results()) == len(DEVICES) and results(), 15, 0.5) or results()
    time.sleep(2)
    done = results()
    expected = {name: ("ok" if name in LINKED else "error") for name in DEVICES}
    run.check("every /set answered exactly once, by the device's owner (ok; not_connected when "
              "it is not connected)",
              len(done) == len(DEVICES) and all(
                  len(v) == 1 and v[0].get("status") == expected[k] and v[0].get("gw") == owners[k]
                  for k, v in done.items()), json.dumps(done)[:600])
    wait_for(lambda: health_sum("writes") == len(LINKED), 10, 1)
    run.check("the simulated peripherals carried out exactly 27 writes in all",
              health_sum("writes") == len(LINKED), str(health_sum("writes")))

    def flaps(start):
        """Presence publications saying away after the start (RSSI wanders; none should)."""
        away = []
        for _, topic, payload in observer.since(start, "/presence"):
            if '"away"' in payload:
                away.append(topic)
        return away
    run.check("retained presence never goes away while RSSI wanders", not flaps(started),
              str(flaps(started)))

    # SIGKILL the owner of ten devices.
    killed = time.monotonic()
    processes[0].send_signal(signal.SIGKILL)
    processes[0].wait()

    def moved():
        new = {}
        for name in DEVICES[:10]:
            device = known[name]
            owner = (claim(device) or {}).get("gw")
            if owner in (None, "gw0"):
                return None
            connection = observer.json(f"{BASE}/{device}/connection") or {}
            if name in LINKED and (connection.get("state") != "ready" or connection.get("owner") != owner):
                return None
            new[name] = owner
        return new
    new_owners = wait_for(moved, 20, 0.2)
    handover = time.monotonic() - killed
    figures["messages_from_kill_to_handover"] = len(observer.since(killed))
    figures["handover_seconds"] = round(handover, 2)
    run.check("after SIGKILL each of its ten devices has a new owner (with it ready) within 10 s",
              new_owners is not None and handover <= 10, f"{handover:.1f} s {moved()}")
    gained = [json.loads(p) for _, t, p in observer.since(killed, "/event") if '"ownership_gained"' in p]
    run.check("the new owners say ownership_gained, owner_offline",
              len([e for e in gained if e["data"].get("reason") == "owner_offline"]) >= 10,
              json.dumps(gained)[:600])
    run.check("still 0 duplicate connections after the hand-over (lists refreshed)",
              wait_for(one_link_each, 10, 1), str(links()))

    if new_owners:
        # gw0 comes back: 25 dB better than the new owners for roam-00, roam-01 and the seven
        # connected devices, 4 dB for roam-02.
        back = list(MEANS[0])
        for d in range(10):
            owner = GATEWAYS.index(new_owners[DEVICES[d]])
            back[d] = MEANS[owner][d] + (4 if d == 2 else 25)
        restarted = time.monotonic()
        processes[0] = start(run, 0, port, back, log="gw0-back")
        time.sleep(DWELL + 20)
        final = {name: (claim(known[name]) or {}).get("gw") for name in DEVICES[:10]}
        run.check("back with 25 dB more for the dwell, gw0 takes roam-00 and roam-01 back",
                  final["roam-00"] == "gw0" and final["roam-01"] == "gw0", str(final))
        run.check("with only 4 dB more (inside the margin) it does not take roam-02",
                  final["roam-02"] == new_owners["roam-02"], str(final))
        run.check("nor, 25 dB better, any of the seven devices connected to their owners",
                  all(final[DEVICES[d]] == new_owners[DEVICES[d]] for d in range(3, 10)), str(final))
        lost = [json.loads(p) for _, t, p in observer.since(restarted, "/event")
                if '"ownership_lost"' in p]
        run.check("the gateways that let them go say ownership_lost to gw0, stronger",
                  len([e for e in lost if e["data"].get("to") == "gw0"
                       and e["data"].get("reason") == "stronger"]) == 2, json.dumps(lost)[:600])
        regained = [json.loads(p) for _, t, p in observer.since(restarted, "/event")
                    if t == f"{BASE}/bridge/gw0/event" and '"ownership_gained"' in p]
        run.check("and gw0 says ownership_gained from them, stronger: both sides of each hand-over",
                  sorted((e["data"].get("from"), e["data"].get("reason")) for e in regained)
                  == sorted((new_owners[n], "stronger") for n in ("roam-00", "roam-01")),
                  json.dumps(regained)[:600])
        run.check("0 duplicate connections at the end", wait_for(one_link_each, 10, 1), str(links()))
        run.check("every connection the live gateways' peripherals accepted is one per device",
                  wait_for(lambda: health_sum("connections") == len(LINKED), 10, 1),
                  str(health_sum("connections")))
    run.check("retained presence never went away, hand-overs included", not flaps(started),
              str(flaps(started)))

    # A rename sent to one gateway holds on every gateway: the name is the device's id in every
    # devices list, its owner serves it under the name, and a /set by the name is done once.
    target = "fleet-12"
    old_id = known[target]
    owner = (claim(old_id) or {}).get("gw")
    asker = next(g for g in GATEWAYS[1:] if g != owner and online(g))
    renamed_at = time.monotonic()
    observer.publish(f"{BASE}/bridge/{asker}/request/device/rename",
                     json.dumps({"device": old_id, "name": "fleet/renamed"}))

    def everywhere():
        for gateway in GATEWAYS:
            if not online(gateway):
                continue
            entry = next((e for e in observer.json(f"{BASE}/bridge/{gateway}/devices") or []
                          if e.get("name") == target), None)
            if not entry or entry.get("id") != "fleet/renamed":
                return False
        connection = observer.json(f"{BASE}/fleet/renamed/connection") or {}
        return connection.get("state") == "ready" and connection.get("owner") == owner
    run.check("a device/rename sent to one gateway names the device alike on every gateway, "
              "its owner serving it under the name", wait_for(everywhere, 15, 0.5),
              str([(g, [e.get("id") for e in observer.json(f"{BASE}/bridge/{g}/devices") or []
                        if e.get("name") == target]) for g in GATEWAYS if online(g)]))
    writes_before = health_sum("writes")
    observer.publish(f"{BASE}/fleet/renamed/gatt/{SERVICE}/{COMMAND}/set",
                     json.dumps({"hex": "2b", "transaction": "renamed"}))
    time.sleep(3)
    answers = [json.loads(p) for _, t, p in observer.since(renamed_at, "/result")
               if t == f"{BASE}/fleet/renamed/gatt/{SERVICE}/{COMMAND}/result"]
    wait_for(lambda: health_sum("writes") == writes_before + 1, 6, 1)
    run.check("a /set by the new name is answered once, by the owner, and carried out once",
              [(a.get("status"), a.get("gw")) for a in answers] == [("ok", owner)]
              and health_sum("writes") == writes_before + 1,
              f"{answers} writes {writes_before} -> {health_sum('writes')}")

    # A clean stop (SIGTERM) of a gateway that owns devices: it says ownership_lost, stopping,
    # for each, and the new owners ownership_gained, owner_offline.
    mine = lambda gw: [n for n in DEVICES if (claim(known[n]) or {}).get("gw") == gw]
    leaving = max(GATEWAYS[1:], key=lambda gw: len(mine(gw)))
    let_go = mine(leaving)
    stopped = time.monotonic()
    processes[GATEWAYS.index(leaving)].send_signal(signal.SIGTERM)
    processes[GATEWAYS.index(leaving)].wait(timeout=10)
    taken = wait_for(lambda: all((claim(known[n]) or {}).get("gw") not in (None, leaving)
                                 for n in let_go) or None, 20, 0.2)
    said = [json.loads(p) for _, t, p in observer.since(stopped, "/event")
            if t == f"{BASE}/bridge/{leaving}/event" and '"ownership_lost"' in p]

    def welcomed() -> list:
        """The devices the other gateways said they gained from the leaving one, sorted."""
        events = [json.loads(p) for _, t, p in observer.since(stopped, "/event")
                  if t != f"{BASE}/bridge/{leaving}/event" and '"ownership_gained"' in p]
        return sorted(e["data"].get("device") for e in events
                      if e["data"].get("from") == leaving
                      and e["data"].get("reason") == "owner_offline")

    # A new owner publishes its claim before its event: wait for the events too (a CI run
    # once sampled them between the two).
    expected = sorted(known[n] for n in let_go)
    wait_for(lambda: welcomed() == expected, 10, 0.2)
    run.check(f"{leaving} stopped cleanly says ownership_lost, stopping, for its {len(let_go)} devices",
              len(let_go) > 0 and sorted(e["data"].get("device") for e in said
                                         if e["data"].get("reason") == "stopping")
              == sorted(known[n] for n in let_go), json.dumps(said)[:600])
    run.check("and their new owners say ownership_gained from it, owner_offline",
              taken is not None and welcomed() == expected,
              f"expected {expected}, said {welcomed()}")
    reasons = {}
    for _, _topic, payload in observer.since(settled_at, "/owner"):
        try:
            reason = json.loads(payload).get("reason") if payload else "released"
        except ValueError:
            reason = "malformed"
        reasons[reason] = reasons.get(reason, 0) + 1
    figures["claims_after_settling_by_reason"] = reasons
    finish(run, observer, figures, started)


def finish(run, observer, figures, started=None):
    elapsed = time.monotonic() - (started or time.monotonic())
    with observer.lock:
        figures["messages"] = observer.count
        figures["retained_topics"] = sum(1 for v in observer.latest.values() if v)
        figures["claims"] = sum(1 for _, topic, _p in observer.history if topic.endswith("/owner"))
    figures["seconds"] = round(elapsed, 1)
    figures["messages_per_second"] = round(figures["messages"] / elapsed, 1) if elapsed else 0
    print("fleet: figures " + json.dumps(figures))
    if ARTIFACTS:
        os.makedirs(ARTIFACTS, exist_ok=True)
        with open(os.path.join(ARTIFACTS, "fleet-figures.json"), "w") as f:
            json.dump(figures, f, indent=1)
    observer.client.loop_stop()
    run.finish(ARTIFACTS, failure_logs=["gw0.log", "gw1.log", "mosquitto.log"])


if __name__ == "__main__":
    main()
