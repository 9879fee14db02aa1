#!/usr/bin/env python3
"""Soak: the gateway on the simulated radio for a long run under churn, broker restarts and
bad input, with memory, losses and answers counted (issue 15, item 4). Not a test: run through
Benchmarks/soak (which provides paho-mqtt); Benchmarks/README.md has the figures.

The run (defaults: 5 minutes; `--minutes 60` is the long one):
  - 1,000 beacons whose random addresses rotate (10,000 addresses come and go over the run);
  - 20 heart-rate peripherals connected (bluetooth.connect.names) and notifying at 10/s each,
    every measurement numbered by the simulated radio (`numbered: true`: its number as
    Energy Expended), so that a lost or repeated one shows;
  - the broker (mosquitto, persistence on) stopped and started again `--restarts` (5) times,
    evenly spread: every run/(restarts+1), 50 s in the 5-minute run, 10 minutes in the hour;
  - bursts of bad requests between the restarts: malformed JSON, invalid UTF-8, unknown verbs,
    payloads over mqtt.inbound.max_request_bytes, device topics that do not parse, mixed with
    valid health_checks.

Counted: RSS every 5 s (flat within 2 % from the end of a warm-up — 10 % of the run and at least
one address rotation plus forget_after, 30 % of the 5-minute run — to the end); per device, the measurement numbers an observer with a persistent session (QoS 1,
clean_session false, on a broker that keeps its sessions across the restarts) received:
missing and repeated numbers (PASS needs none missing and none dropped by the gateway's offline
queue, which is never full here); bridge requests sent against responses received.

Figures go to stdout and to Benchmarks/results/<timestamp>-soak.json.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import paho.mqtt.client as mqtt

sys.path.insert(0, str(Path(__file__).resolve().parent))
from simulated import cpu_seconds, free_port, rss_kib, start_gateway, stop, wait_listening  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
GATEWAY_ID = "soak"
BASE = f"gatt2mqtt/bridge/{GATEWAY_ID}"
RSS_LIMIT = 2.0  # percent
INFLIGHT = 100  # the gateway's in-flight window for QoS 1 (MQTTClientConfiguration.maxInflight)
OFFLINE_AFTER, FORGET_AFTER = 30, 60  # seconds: the registry settles one rotation + 60 s in
HR_TOPIC = "gatt2mqtt/+/gatt/180d/2a37"


class PersistentBroker:
    """mosquitto on a fixed port with persistence, so that a persistent session and its queued
    QoS 1 messages survive a stop and start (SIGTERM: mosquitto saves its database)."""

    def __init__(self, workdir: Path):
        self.port = free_port()
        self.conf = workdir / "mosquitto.conf"
        lines = [f"listener {self.port} 127.0.0.1", "allow_anonymous true", "persistence true",
                 f"persistence_location {workdir}/", "autosave_interval 30",
                 "max_queued_messages 1000000", "max_inflight_messages 100",
                 "log_dest stderr", "log_type error"]
        if os.geteuid() == 0:
            lines.append("user root")
        self.conf.write_text("\n".join(lines) + "\n")
        self.log = open(workdir / "mosquitto.log", "a")
        self.proc: subprocess.Popen | None = None
        self.restarts = 0
        self.down_s = 0.0

    def start(self) -> None:
        self.proc = subprocess.Popen(["mosquitto", "-c", str(self.conf)], stderr=self.log)
        wait_listening(self.proc, self.port)

    def stop(self) -> None:
        if self.proc:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=30)
            self.proc = None

    def restart(self) -> None:
        t = time.monotonic()
        self.stop()
        self.start()
        self.restarts += 1
        self.down_s += time.monotonic() - t


class Observer:
    """A paho client with a persistent session (QoS 1) counting measurement numbers per device,
    bridge responses, and keeping the last health report."""

    def __init__(self, port: int, client_id: str):
        self.lock = threading.Lock()
        self.numbers: dict[str, list[int]] = {}
        self.last: dict[str, int] = {}  # per device, the last number, unwrapped
        self.responses = 0
        self.events: dict[str, int] = {}
        self.health: dict | None = None
        self.connects = 0
        self.client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=client_id,
                                  clean_session=False)
        self.client.max_inflight_messages_set(100)
        self.client.max_queued_messages_set(0)
        self.client.reconnect_delay_set(min_delay=0.05, max_delay=0.5)
        self.client.on_connect = self._connected
        self.client.on_message = self._message
        self.client.connect("127.0.0.1", port, keepalive=30)
        self.client.loop_start()

    def _connected(self, client, userdata, flags, reason, properties) -> None:
        self.connects += 1
        client.subscribe([(HR_TOPIC, 1), (f"{BASE}/response/#", 1), (f"{BASE}/event", 1),
                          (f"{BASE}/health", 0)])

    def _message(self, client, userdata, message) -> None:
        topic = message.topic
        with self.lock:
            if topic.endswith("/180d/2a37"):
                value = bytes.fromhex(message.payload.decode())
                if len(value) == 4 and value[0] == 0x08:
                    dev = topic.split("/")[1]
                    number = value[2] | value[3] << 8  # 16 bits: wraps after 109 min at 10/s
                    last = self.last.get(dev, number)
                    number += (last - (last & 0xFFFF))  # the wraps seen so far
                    if number < last - 0x8000:
                        number += 0x10000
                    elif number > last + 0x8000:
                        number -= 0x10000  # a late repeat from before a wrap
                    self.last[dev] = max(last, number)
                    self.numbers.setdefault(dev, []).append(number)
            elif topic.startswith(f"{BASE}/response/"):
                self.responses += 1
            elif topic == f"{BASE}/event":
                kind = json.loads(message.payload).get("type", "?")
                self.events[kind] = self.events.get(kind, 0) + 1
            elif topic == f"{BASE}/health":
                self.health = json.loads(message.payload)

    def close(self) -> None:
        self.client.loop_stop()
        self.client.disconnect()


def burst(port: int, index: int, size: int) -> int:
    """Publishes `size` bridge requests (QoS 1), most of them bad, and a few device-plane
    requests whose topics do not parse; returns the number of bridge requests sent."""
    client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=f"soak-burst-{index}")
    client.connect("127.0.0.1", port)
    client.loop_start()
    bad = [b"not json", b"\xff\xfe\xfd", b"[1,2,3]", b'{"transaction": ' + b"1" * 300 + b"}",
           b"x" * 70_000]
    infos = []
    for i in range(size):
        kind = i % 8
        if kind == 0:
            topic, payload = f"{BASE}/request/health_check", json.dumps({"transaction": f"b{index}-{i}"}).encode()
        elif kind == 1:
            topic, payload = f"{BASE}/request/no_such_verb_{i}", b"{}"
        else:
            topic, payload = f"{BASE}/request/health_check", bad[i % len(bad)]
        infos.append(client.publish(topic, payload, qos=1))
    for i in range(size // 10):
        infos.append(client.publish(f"gatt2mqtt/NOT-A-DEVICE-{i}/gatt/zz/yy/set", b"00", qos=1))
    for info in infos:
        info.wait_for_publish(timeout=30)
    client.loop_stop()
    client.disconnect()
    return size


def run(binary: str, workdir: Path, minutes: float, restarts: int, burst_size: int) -> dict:
    duration = minutes * 60
    rotate = duration / 10
    world = (f"advertising_interval: 2\nmax_connections: 25\ndevices:\n"
             f"  - kind: beacon\n    count: 1000\n    name: soak-b\n    rotate: {rotate:g}\n"
             f"  - kind: heart_rate\n    count: 20\n    name: soak-hr\n    notify_rate: 10\n"
             f"    numbered: true\n")
    broker = PersistentBroker(workdir)
    broker.start()
    observer = Observer(broker.port, f"soak-observer-{os.getpid()}")
    time.sleep(0.5)
    extra = ["--gateway.health_interval", "5", "--bluetooth.max_devices", "20000",
             "--bluetooth.offline_after", str(OFFLINE_AFTER), "--bluetooth.forget_after", str(FORGET_AFTER),
             "--bluetooth.connect.names", "soak-hr*", "--bluetooth.connect.max_connections", "20",
             "--bluetooth.gatt.notify", "*/180d/2a37"]
    gateway = start_gateway(binary, broker.port, world, workdir, GATEWAY_ID, extra)
    samples: list[dict] = []
    sent = 0
    every = duration / (restarts + 1)
    restart_at = [every * (k + 1) for k in range(restarts)]
    burst_at = [every * (k + 0.5) for k in range(restarts + 1)]
    start = time.monotonic()

    def sample() -> None:
        rss, hwm = rss_kib(gateway.pid)
        with observer.lock:
            received = sum(len(v) for v in observer.numbers.values())
        samples.append({"t": round(time.monotonic() - start, 1), "rss_kib": rss, "hwm_kib": hwm,
                        "cpu_s": round(cpu_seconds(gateway.pid), 2), "numbers": received})

    try:
        next_sample = start
        while (elapsed := time.monotonic() - start) < duration:
            if gateway.poll() is not None:
                log = (workdir / f"gateway-{GATEWAY_ID}.log").read_text(errors="replace")
                raise SystemExit(f"soak: the gateway exited ({gateway.returncode}):\n{log[-2000:]}")
            if restart_at and elapsed >= restart_at[0]:
                restart_at.pop(0)
                broker.restart()
                print(f"  {elapsed:6.0f} s: broker restarted ({broker.restarts})", flush=True)
            if burst_at and elapsed >= burst_at[0]:
                burst_at.pop(0)
                sent += burst(broker.port, len(burst_at), burst_size)
                print(f"  {elapsed:6.0f} s: {burst_size} bad and good requests", flush=True)
            if time.monotonic() >= next_sample:
                sample()
                next_sample += 5
            time.sleep(0.05)
        sample()
        time.sleep(10)  # what is queued or in flight arrives
        health = observer.health or {}
    finally:
        exit_code = stop(gateway)
        time.sleep(1)
        observer.close()
        broker.stop()

    # RSS after the warm-up — 10 % of the run, and at least one address rotation plus
    # forget_after, by when the device registry holds as many devices as it ever will — against
    # the end: each the mean of one minute of samples (one sample wobbles by ±0.5 MiB).
    warm_t = min(max(duration * 0.1, rotate + FORGET_AFTER), duration * 0.5)
    window = min(60.0, (duration - warm_t) / 3)
    warm_samples = [x for x in samples if warm_t <= x["t"] < warm_t + window]
    end_samples = [x for x in samples if x["t"] >= duration - window]

    def mean(xs: list[dict]) -> dict:
        return {"t": xs[0]["t"], "rss_kib": round(sum(x["rss_kib"] for x in xs) / len(xs)),
                "hwm_kib": xs[-1]["hwm_kib"], "samples": len(xs)}

    warm, end = mean(warm_samples), mean(end_samples)
    growth = (end["rss_kib"] - warm["rss_kib"]) / warm["rss_kib"] * 100
    devices = {}
    for dev, numbers in observer.numbers.items():
        unique = set(numbers)
        span = max(numbers) - min(numbers) + 1
        devices[dev] = {"received": len(numbers), "first": min(numbers), "last": max(numbers),
                        "missing": span - len(unique), "repeated": len(numbers) - len(unique)}
    mqtt_health = health.get("mqtt", {})
    missing = sum(d["missing"] for d in devices.values()) + sum(d["first"] for d in devices.values())
    return {
        "minutes": minutes, "beacons": 1000, "rotate_s": rotate, "heart_rate_devices": 20,
        "notify_rate_per_device": 10, "broker_restarts": broker.restarts,
        "broker_down_s": round(broker.down_s, 2), "gateway_exit": exit_code,
        "rss": {"warm": warm, "end": end, "window_s": window, "growth_percent": round(growth, 2),
                "flat": abs(growth) < RSS_LIMIT},
        "samples": samples,
        "notifications": {"devices": len(devices),
                          "received": sum(d["received"] for d in devices.values()),
                          "missing": missing,
                          "repeated": sum(d["repeated"] for d in devices.values()),
                          "per_device": devices},
        "gateway_health": {"dropped": mqtt_health.get("dropped"),
                           "reconnects": mqtt_health.get("reconnects"),
                           "received_dropped": mqtt_health.get("received_dropped"),
                           "received_discarded": mqtt_health.get("received_discarded"),
                           "requests_refused": health.get("errors", {}).get("requests_refused"),
                           "request_errors": health.get("errors", {}).get("requests"),
                           "healthy": health.get("healthy"), "reasons": health.get("reasons")},
        "requests": {"bridge_sent": sent, "bridge_answered": observer.responses,
                     "request_error_events": observer.events.get("request_error", 0)},
        "observer_connects": observer.connects,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--gateway", default=str(REPO / ".build/release/gatt2mqtt"))
    p.add_argument("--minutes", type=float, default=5)
    p.add_argument("--restarts", type=int, default=5)
    p.add_argument("--burst", type=int, default=400, help="bridge requests per burst")
    args = p.parse_args()
    if not os.access(args.gateway, os.X_OK):
        raise SystemExit(f"soak: no gateway at {args.gateway} (swift build -c release)")
    with tempfile.TemporaryDirectory(prefix="gatt2mqtt-soak-") as tmp:
        print(f"soak: {args.minutes:g} min, {args.restarts} broker restarts, gateway {args.gateway}", flush=True)
        r = run(args.gateway, Path(tmp), args.minutes, args.restarts, args.burst)
    n, g, q, rss = r["notifications"], r["gateway_health"], r["requests"], r["rss"]
    # The offline queue (10,000 messages) is never full in this run: any drop, of any topic, is a
    # failure, and every missing number one too.
    lost_beyond_policy = n["missing"] + (g["dropped"] or 0)
    # QoS 1 is at least once: a message in flight (sent, not yet acknowledged) when the broker
    # stops is sent again after the reconnection, and the broker may have delivered it already.
    repeat_bound = r["broker_restarts"] * INFLIGHT
    lines = [
        "",
        f"soak: {r['minutes']:g} min; 1,000 beacons rotating every {r['rotate_s']:g} s; 20 heart-rate "
        f"devices at 10/s; broker restarted {r['broker_restarts']}x ({r['broker_down_s']:.1f} s down in all)",
        f"  RSS {rss['warm']['rss_kib'] / 1024:.1f} MiB from {rss['warm']['t']:g} s (after warm-up) -> "
        f"{rss['end']['rss_kib'] / 1024:.1f} MiB from {rss['end']['t']:g} s (means of {rss['window_s']:g} s): "
        f"{rss['growth_percent']:+.2f} % "
        f"({'flat' if rss['flat'] else 'NOT flat'}, limit {RSS_LIMIT:g} %); peak {rss['end']['hwm_kib'] / 1024:.1f} MiB",
        f"  notifications: {n['received']} received from {n['devices']} devices; {n['missing']} missing, "
        f"{n['repeated']} repeated (QoS 1 redeliveries after a restart, at most "
        f"{repeat_bound}: {r['broker_restarts']} restarts x {INFLIGHT} in flight); the gateway counted {g['dropped']} dropped (offline queue) and "
        f"reconnected {g['reconnects']}x",
        f"  requests: {q['bridge_sent']} bridge requests, {q['bridge_answered']} answered; "
        f"{q['request_error_events']} request_error events for bad device topics; "
        f"refused unread {g['requests_refused']}, dropped unanswered {g['received_dropped']}",
        f"  health at the end: healthy {g['healthy']} {g['reasons'] or ''}; gateway exit {r['gateway_exit']}",
    ]
    print("\n".join(lines), flush=True)
    out = REPO / "Benchmarks" / "results"
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{time.strftime('%Y%m%d-%H%M%S')}-soak.json"
    path.write_text(json.dumps(r, indent=1))
    print(f"  figures: {path.relative_to(REPO)}")
    ok = (rss["flat"] and lost_beyond_policy == 0 and n["repeated"] <= repeat_bound
          and q["bridge_answered"] >= q["bridge_sent"] and r["gateway_exit"] == 0 and n["devices"] == 20)
    print("soak: PASS" if ok else "soak: FAIL")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
