#!/usr/bin/env python3
"""Benchmarks of the bridge through the simulated radio, against a real mosquitto.

Not tests: nothing here runs in scripts/test. Run through Benchmarks/simulated (which provides
paho-mqtt). Each measurement starts its own mosquitto on a free loopback port (errors logged
only) and the gateway binary with `--radio simulated --world <generated file>`:

  throughput  notifications/s and advertisements/s the bridge forwards to the broker, and CPU
              time per message (utime+stime of the gateway, /proc/<pid>/stat), against a
              Python paho publisher doing the same publishes (same topic shapes, payload sizes,
              QoS 1) at the rate the gateway reached, in the same run and measured the same way:
              ratio = baseline CPU/msg over gatt2mqtt CPU/msg (above 1: gatt2mqtt is cheaper).
  rotation    RSS of the gateway with 1,000 beacons whose random addresses rotate so that
              10,000 addresses come and go over the run (default 10 minutes), with a registry
              large enough (bluetooth.max_devices 20000) that only forgetting removed devices
              can keep it bounded; RSS after a warm-up (10% of the run) against the end; PASS
              when it grew less than 5%. The gateway's health reports give the registry size.
  startup     seconds from process start to the retained `online` state on the broker
              (median of 10 runs), with the default simulated world and with --radio none.
  idle        a gateway with nothing to do (--radio none, and the simulated radio with an empty
              world), 20 s after start-up: wake-ups per second by thread (voluntary context
              switches) and CPU per minute.

Messages are counted by a bare MQTT 3.1.1 subscriber on a raw socket (QoS 0, packets walked,
not decoded), so that counting 20,000 messages/s takes little of the CPU the gateway, the
broker and the baseline share; its CPU share is reported with every window.

Figures go to stdout and to Benchmarks/results/<timestamp>-simulated.json.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CLK_TCK = os.sysconf("SC_CLK_TCK")
GROWTH_LIMIT = 5.0  # percent


# -- processes -------------------------------------------------------------------------------
def cpu_seconds(pid: int) -> float:
    """utime + stime of a process (all its threads), in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def own_cpu_seconds() -> float:
    t = os.times()
    return t.user + t.system


def rss_kib(pid: int) -> tuple[int, int]:
    """(VmRSS, VmHWM) in KiB."""
    values = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            values[key] = int(rest.split()[0])
    return values["VmRSS"], values["VmHWM"]


def wait_listening(proc: subprocess.Popen, port: int, seconds: float = 10) -> None:
    """Returns once something listens on 127.0.0.1:`port`; exits if `proc` ends or time runs out."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"benchmark: {proc.args[0]} did not start listening on {port}")
            time.sleep(0.02)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Broker:
    def __init__(self, workdir: Path):
        self.port = free_port()
        conf = workdir / f"mosquitto-{self.port}.conf"
        lines = [f"listener {self.port} 127.0.0.1", "allow_anonymous true", "persistence false",
                 "log_dest stderr", "log_type error", "max_queued_messages 0"]
        if os.geteuid() == 0:
            lines.append("user root")
        conf.write_text("\n".join(lines) + "\n")
        self.log = open(workdir / f"mosquitto-{self.port}.log", "w")
        self.proc = subprocess.Popen(["mosquitto", "-c", str(conf)], stderr=self.log)
        wait_listening(self.proc, self.port)

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait()
        self.log.close()


# -- counting subscriber ---------------------------------------------------------------------
def _mqtt_string(text: str) -> bytes:
    data = text.encode()
    return struct.pack("!H", len(data)) + data


def _mqtt_packet(first: int, body: bytes) -> bytes:
    length, encoded = len(body), bytearray()
    while True:
        byte, length = length % 128, length // 128
        encoded.append(byte | (0x80 if length else 0))
        if not length:
            return bytes([first]) + bytes(encoded) + body


class Counter:
    """A bare MQTT 3.1.1 subscriber (QoS 0, no keep-alive) counting PUBLISH packets per kind
    (the topic's last level; `bridge/<what>` for the gateway's own topics), their payload
    bytes, the device ids seen, retained clears (empty payloads); keeps the last `health`."""

    def __init__(self, port: int, topics: list[str]):
        self.counts: dict[str, int] = {}
        self.bytes: dict[str, int] = {}
        self.clears: dict[str, int] = {}
        self.devices: set[bytes] = set()
        self.health: dict | None = None
        self.states: dict[str, tuple[float, bytes]] = {}  # gateway id -> (arrival, payload)
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        client_id = f"bench-{os.getpid()}-{time.time_ns() % 10**9}"
        self.sock.sendall(_mqtt_packet(0x10, _mqtt_string("MQTT") + bytes([4, 0x02, 0, 0])
                                       + _mqtt_string(client_id)))
        body = struct.pack("!H", 1) + b"".join(_mqtt_string(t) + b"\x00" for t in topics)
        self.sock.sendall(_mqtt_packet(0x82, body))
        self.subscribed = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()
        if not self.subscribed.wait(10):
            raise SystemExit("benchmark: no SUBACK from mosquitto")

    def _run(self) -> None:
        buf = bytearray()
        counts, sizes, clears, devices = self.counts, self.bytes, self.clears, self.devices
        while True:
            try:
                chunk = self.sock.recv(1 << 20)
            except OSError:
                return
            if not chunk:
                return
            buf += chunk
            pos, end = 0, len(buf)
            while end - pos >= 2:
                length, shift, i, complete = 0, 0, pos + 1, False
                while i < end and i < pos + 5:
                    byte = buf[i]
                    i += 1
                    length |= (byte & 0x7F) << shift
                    if not byte & 0x80:
                        complete = True
                        break
                    shift += 7
                if not complete:
                    break
                if i + length > end:
                    break
                kind_byte = buf[pos] >> 4
                if kind_byte == 3:
                    tl = (buf[i] << 8) | buf[i + 1]
                    topic = bytes(buf[i + 2:i + 2 + tl])
                    payload_len = length - 2 - tl - (2 if buf[pos] & 0x06 else 0)
                    parts = topic.split(b"/")
                    if parts[1] == b"bridge":
                        kind = "bridge/" + b"/".join(parts[3:]).decode()
                        if kind == "bridge/health":
                            start = i + 2 + tl
                            try:
                                self.health = json.loads(bytes(buf[start:start + payload_len]))
                            except ValueError:
                                pass
                        elif kind == "bridge/state":
                            start = i + 2 + tl
                            self.states[parts[2].decode()] = (
                                time.monotonic(), bytes(buf[start:start + payload_len]))
                    else:
                        kind = parts[-1].decode()
                        devices.add(parts[1])
                    counts[kind] = counts.get(kind, 0) + 1
                    sizes[kind] = sizes.get(kind, 0) + payload_len
                    if payload_len == 0:
                        clears[kind] = clears.get(kind, 0) + 1
                elif kind_byte == 9:
                    self.subscribed.set()
                pos = i + length
            del buf[:pos]

    def count(self, kind: str) -> int:
        return self.counts.get(kind, 0)

    def snapshot(self, kind: str) -> tuple[int, int]:
        return self.counts.get(kind, 0), self.bytes.get(kind, 0)

    def close(self) -> None:
        try:
            self.sock.sendall(b"\xe0\x00")  # DISCONNECT
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()
        self.thread.join(5)


# -- the gateway -----------------------------------------------------------------------------
def start_gateway(binary: str, port: int, world: str | None, workdir: Path, gateway_id: str,
                  extra: list[str]) -> subprocess.Popen:
    argv = [binary, "run", "--mqtt.host", "127.0.0.1", "--mqtt.port", str(port),
            "--gateway.id", gateway_id, "--log.level", "warning"]
    if world is not None:
        path = workdir / f"world-{gateway_id}.yaml"
        path.write_text(world)
        argv += ["--radio", "simulated", "--world", str(path)]
    argv += extra
    log = open(workdir / f"gateway-{gateway_id}.log", "w")
    env = {k: v for k, v in os.environ.items() if not k.startswith("GATT2MQTT_")}
    proc = subprocess.Popen(argv, stdout=log, stderr=log, env=env)
    proc.argv = argv  # type: ignore[attr-defined]
    return proc


def stop(proc: subprocess.Popen) -> int:
    proc.terminate()
    try:
        return proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return -9


def wait_for(cond, timeout: float, what: str, gateway: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if gateway is not None and gateway.poll() is not None:
            raise SystemExit(f"benchmark: the gateway exited ({gateway.returncode}) before {what}")
        if time.monotonic() > deadline:
            raise SystemExit(f"benchmark: {what} not within {timeout:.0f} s")
        time.sleep(0.05)


def health_figures(health: dict | None) -> dict:
    """The health counters a window compares (0 where absent)."""
    h = health or {}
    return {"mqtt_published": h.get("mqtt", {}).get("published", 0),
            "mqtt_dropped": h.get("mqtt", {}).get("dropped", 0),
            "radio_notifications": h.get("connections", {}).get("notifications", 0),
            "adverts_received": h.get("discovery", {}).get("adverts_received", 0),
            "adverts_published": h.get("discovery", {}).get("adverts_published", 0)}


# -- the baseline publisher ------------------------------------------------------------------
def publisher_main(args) -> None:
    """`simulated.py publish`: publishes `rate`/s QoS 1 messages of `size` bytes, round robin on
    `devices` topics shaped like the gateway's, until SIGTERM. Prints `ready` once connected."""
    import paho.mqtt.client as mqtt

    stopping = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stopping.set())
    client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=f"baseline-{os.getpid()}")
    client.max_inflight_messages_set(1000)
    client.max_queued_messages_set(0)
    client.connect("127.0.0.1", args.port)
    client.loop_start()
    # Payload bytes like the gateway's: hex digits for values, a JSON-sized text for adverts.
    payload = ("0" * args.size).encode()
    topics = [f"gatt2mqtt/{0xB0_0000_0000 + i:012X}/{args.suffix}" for i in range(args.devices)]
    print("ready", flush=True)
    start = time.monotonic()
    sent = 0
    while not stopping.is_set():
        due = int((time.monotonic() - start) * args.rate)
        while sent < due:
            client.publish(topics[sent % len(topics)], payload, qos=1)
            sent += 1
        time.sleep(0.001)
    client.loop_stop()
    client.disconnect()


def baseline(port: int, counter: Counter, kind: str, suffix: str, rate: float, window: float,
             size: int, devices: int) -> dict:
    """Runs the paho publisher at `rate`/s and measures it as the gateway is measured: the
    subscriber's count and the process's utime+stime over `window` s after 2 s of warm-up."""
    argv = [sys.executable, __file__, "publish", "--port", str(port), "--suffix", suffix,
            "--rate", str(rate), "--size", str(size), "--devices", str(devices)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE)
    try:
        if proc.stdout.readline().strip() != b"ready":
            raise SystemExit("benchmark: the baseline publisher did not start")
        time.sleep(2)
        n0, c0, t0 = counter.count(kind), cpu_seconds(proc.pid), time.monotonic()
        time.sleep(window)
        n1, c1, t1 = counter.count(kind), cpu_seconds(proc.pid), time.monotonic()
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return {"asked_per_s": round(rate, 1), "reached_per_s": round((n1 - n0) / (t1 - t0), 1),
            "messages": n1 - n0, "cpu_s": round(c1 - c0, 3), "payload_bytes": size}


# -- measurements ----------------------------------------------------------------------------
def measure_window(gateway, counter: Counter, kind: str, window: float) -> dict:
    h0 = health_figures(counter.health)
    (n0, b0), c0, s0, t0 = counter.snapshot(kind), cpu_seconds(gateway.pid), own_cpu_seconds(), \
        time.monotonic()
    time.sleep(window)
    (n1, b1), c1, s1, t1 = counter.snapshot(kind), cpu_seconds(gateway.pid), own_cpu_seconds(), \
        time.monotonic()
    time.sleep(1.2)  # the next health report (health_interval 1), to compare counters
    h1 = health_figures(counter.health)
    seconds = t1 - t0
    messages = n1 - n0
    delta = {k: h1[k] - h0[k] for k in h0}
    events = delta["radio_notifications"] + delta["adverts_received"]
    return {"forwarded_per_s": round(messages / seconds, 1), "messages": messages,
            "cpu_s": round(c1 - c0, 3), "payload_bytes": round((b1 - b0) / messages) if messages else 0,
            "subscriber_cpu_percent": round((s1 - s0) / seconds * 100, 1),
            "health_delta": delta, "seconds": round(seconds, 2),
            "dropped_percent": round(delta["mqtt_dropped"] / events * 100, 1) if events else 0.0}


def throughput(binary: str, workdir: Path, window: float, event_interval: float | None = None,
               kinds: str = "all", batch_window: float | None = None) -> dict:
    results: dict = {"window_s": window, "notifications": [], "advertisements": [],
                     "event_interval": event_interval, "batch_window": batch_window}
    # The world's own batching (`event_interval`, 5 ms by default) unless asked otherwise: a
    # tiny interval hands the bridge each event on its own, as a radio at a modest rate does.
    head = f"event_interval: {event_interval}\n" if event_interval is not None else ""
    broker = Broker(workdir)
    counter = Counter(broker.port, ["gatt2mqtt/+/gatt/180d/2a37", "gatt2mqtt/+/advertisement",
                                    "gatt2mqtt/bridge/+/health"])
    health = ["--gateway.health_interval", "1"]
    if batch_window is not None:
        health += ["--bluetooth.batch_window", str(batch_window)]
    try:
        # Notifications: 5 heart-rate sensors at a sweep of rates.
        # The last rate is beyond what the bridge sustains: its forwarded/s is the ceiling.
        for per_device in (200, 1000, 10000) if kinds in ("all", "notifications") else ():
            world = head + (f"advertising_interval: 0.5\nconnect_latency: 0.01\ndevices:\n"
                     f"  - kind: heart_rate\n    count: 5\n    name: sim-hr\n"
                     f"    notify_rate: {per_device}\n")
            counter.devices.clear()
            gateway = start_gateway(binary, broker.port, world, workdir, f"notify{per_device}",
                                    ["--bluetooth.connect.names", "sim-hr*",
                                     "--bluetooth.connect.max_connections", "5",
                                     "--bluetooth.gatt.notify", "*/180d/2a37"] + health)
            try:
                first = counter.count("2a37")
                wait_for(lambda: len(counter.devices) == 5 and counter.count("2a37") - first > 1000,
                         60, "values from all 5 sensors", gateway)
                time.sleep(2)
                row = {"offered_per_s": per_device * 5} | measure_window(gateway, counter, "2a37", window)
            finally:
                row_exit = stop(gateway)
            row["gateway_exit"] = row_exit
            row["baseline"] = baseline(broker.port, counter, "2a37", "gatt/180d/2a37",
                                       row["forwarded_per_s"], window, row["payload_bytes"], 5)
            results["notifications"].append(row)
            print("  notifications", json.dumps(row), flush=True)

        # Advertisements: 1,000 beacons, every advertisement new data, no rate limit.
        for interval in (2.0, 0.5, 0.05, 0.02) if kinds in ("all", "advertisements") else ():
            world = head + (f"devices:\n  - kind: beacon\n    count: 1000\n    name: sim-b\n"
                     f"    advertising_interval: {interval}\n")
            counter.devices.clear()
            gateway = start_gateway(binary, broker.port, world, workdir, f"adv{int(interval * 1000)}",
                                    ["--bluetooth.advertisement_min_interval", "0.001",
                                     "--bluetooth.max_devices", "2000"] + health)
            try:
                wait_for(lambda: len(counter.devices) >= 1000, 60,
                         f"every beacon on MQTT ({len(counter.devices)} seen)", gateway)
                time.sleep(2)
                row = {"offered_per_s": round(1000 / interval)} | \
                    measure_window(gateway, counter, "advertisement", window)
            finally:
                row_exit = stop(gateway)
            row["gateway_exit"] = row_exit
            row["baseline"] = baseline(broker.port, counter, "advertisement", "advertisement",
                                       row["forwarded_per_s"], window, row["payload_bytes"], 1000)
            results["advertisements"].append(row)
            print("  advertisements", json.dumps(row), flush=True)
    finally:
        counter.close()
        broker.stop()
    return results


def rotation(binary: str, workdir: Path, minutes: float, max_devices: int) -> dict:
    duration = minutes * 60
    rotate = duration / 10  # 10 addresses per beacon over the run: 10,000 in all
    world = (f"advertising_interval: 2\ndevices:\n  - kind: beacon\n    count: 1000\n"
             f"    name: sim-r\n    rotate: {rotate:g}\n")
    broker = Broker(workdir)
    counter = Counter(broker.port, ["gatt2mqtt/+/advertisement", "gatt2mqtt/+/availability",
                                    "gatt2mqtt/bridge/+/health"])
    extra = ["--bluetooth.max_devices", str(max_devices), "--gateway.health_interval", "5"]
    gateway = start_gateway(binary, broker.port, world, workdir, "rotation", extra)
    samples = []

    def sample(start: float) -> None:
        rss, hwm = rss_kib(gateway.pid)
        discovery = (counter.health or {}).get("discovery", {})
        samples.append({"t": round(time.monotonic() - start, 1), "rss_kib": rss, "hwm_kib": hwm,
                        "cpu_s": round(cpu_seconds(gateway.pid), 2),
                        "ids_seen": len(counter.devices),
                        "registry_devices": discovery.get("devices"),
                        "evictions": discovery.get("device_evictions"),
                        "availability_clears": counter.clears.get("availability", 0)})

    try:
        start = time.monotonic()
        next_sample = start
        while time.monotonic() - start < duration:
            if gateway.poll() is not None:
                raise SystemExit(f"benchmark: the gateway exited ({gateway.returncode}) "
                                 f"during the rotation run")
            sample(start)
            next_sample += 5
            time.sleep(max(0.0, next_sample - time.monotonic()))
        sample(start)
        print("  " + json.dumps(samples[-1]), flush=True)
    finally:
        exit_code = stop(gateway)
        counter.close()
        broker.stop()
    warm = next(s for s in samples if s["t"] >= duration * 0.1)
    end = samples[-1]
    growth = (end["rss_kib"] - warm["rss_kib"]) / warm["rss_kib"] * 100
    return {"minutes": minutes, "beacons": 1000, "rotate_s": rotate, "max_devices": max_devices,
            "gateway_argv": gateway.argv, "gateway_exit": exit_code,  # type: ignore[attr-defined]
            "warm": warm, "end": end, "peak_kib": end["hwm_kib"],
            "growth_percent": round(growth, 2), "pass": growth < GROWTH_LIMIT, "samples": samples}


def startup(binary: str, workdir: Path, runs: int = 10) -> dict:
    broker = Broker(workdir)
    counter = Counter(broker.port, ["gatt2mqtt/bridge/+/state"])
    results = {}
    try:
        for label, radio in (("simulated (built-in world)", "simulated"), ("radio none", "none")):
            times = []
            for n in range(runs):
                gateway_id = f"start{n}{radio[0]}"
                time.sleep(0.2)
                t0 = time.monotonic()
                gateway = start_gateway(binary, broker.port, None, workdir, gateway_id,
                                        ["--radio", radio])
                try:
                    wait_for(lambda: b"online" in counter.states.get(gateway_id, (0, b""))[1], 30,
                             f"the online state of {gateway_id}", gateway)
                    times.append(counter.states[gateway_id][0] - t0)
                finally:
                    stop(gateway)
            results[label] = {"median_s": round(statistics.median(times), 4),
                              "min_s": round(min(times), 4), "max_s": round(max(times), 4),
                              "runs": runs, "times_s": [round(t, 4) for t in times]}
    finally:
        counter.close()
        broker.stop()
    return results


def thread_switches(pid: int) -> dict[str, int]:
    """Voluntary context switches (a thread going to sleep: each is a wake-up later) of a
    process's threads, by thread name."""
    out: dict[str, int] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            name = (task / "comm").read_text().strip()
            status = (task / "status").read_text()
        except OSError:
            continue  # the thread ended meanwhile
        for line in status.splitlines():
            if line.startswith("voluntary_ctxt_switches:"):
                out[name] = out.get(name, 0) + int(line.split()[1])
    return out


def idle(binary: str, workdir: Path, seconds: float = 20) -> dict:
    """A gateway with nothing to do: its wake-ups per second by thread and its CPU, after
    start-up has settled. What a gateway costs a Pi between events."""
    broker = Broker(workdir)
    counter = Counter(broker.port, ["gatt2mqtt/bridge/+/state"])
    results = {}
    try:
        for label, gateway_id, world, extra in (
                ("radio none", "idlen", None, ["--radio", "none"]),
                ("simulated, empty world", "idles", "devices: []\n", [])):
            gateway = start_gateway(binary, broker.port, world, workdir, gateway_id, extra)
            try:
                wait_for(lambda: b"online" in counter.states.get(gateway_id, (0, b""))[1], 30,
                         f"the online state of {gateway_id}", gateway)
                time.sleep(3)
                before, cpu0 = thread_switches(gateway.pid), cpu_seconds(gateway.pid)
                time.sleep(seconds)
                after, cpu1 = thread_switches(gateway.pid), cpu_seconds(gateway.pid)
            finally:
                stop(gateway)
            threads = {name: round(max(0, n - before.get(name, 0)) / seconds, 2)
                       for name, n in after.items()}
            threads = {k: v for k, v in sorted(threads.items(), key=lambda kv: -kv[1]) if v > 0}
            results[label] = {"seconds": seconds, "wakeups_per_s": round(sum(threads.values()), 2),
                              "threads": threads,
                              "cpu_ms_per_min": round((cpu1 - cpu0) / seconds * 60 * 1000, 1)}
    finally:
        counter.close()
        broker.stop()
    return results


# -- report ----------------------------------------------------------------------------------
def ms(cpu: float, n: int) -> str:
    return f"{cpu / n * 1000:.3f} ms" if n else "-"


def report(results: dict) -> str:
    lines = [f"simulated: the bridge through the simulated radio; gateway {results['gateway']}",
             f"  {results['host']}"]
    t = results.get("throughput")
    if t:
        every = (f"; the world hands over each event within {t['event_interval']:g} s"
                 if t.get("event_interval") is not None else "")
        if t.get("batch_window") is not None:
            every += f"; bluetooth.batch_window {t['batch_window']:g} s"
        lines += ["", f"throughput ({t['window_s']:g} s windows{every}; CPU = utime+stime, "
                  f"{1000 / CLK_TCK:.0f} ms ticks; baseline = paho publisher, same publishes)",
                  f"  {'':15}{'offered/s':>10}{'forwarded/s':>12}{'bytes':>6}{'gatt2mqtt CPU/msg':>19}"
                  f"{'dropped':>8}{'baseline/s':>11}{'baseline CPU/msg':>18}{'ratio':>8}"
                  f"{'sub CPU':>8}"]
        short = False
        for kind in ("notifications", "advertisements"):
            for row in t[kind]:
                b = row["baseline"]
                mine = row["cpu_s"] / row["messages"] if row["messages"] else 0
                theirs = b["cpu_s"] / b["messages"] if b["messages"] else 0
                mark = "*" if b["reached_per_s"] < 0.95 * b["asked_per_s"] else ""
                short = short or bool(mark)
                ratio = f"{theirs / mine:.2f}x{mark}" if mine and theirs else "-"
                lines.append(f"  {kind:15}{row['offered_per_s']:>10}{row['forwarded_per_s']:>12}"
                             f"{row['payload_bytes']:>6}{ms(row['cpu_s'], row['messages']):>19}"
                             f"{row['dropped_percent']:>7.1f}%"
                             f"{b['reached_per_s']:>11}{ms(b['cpu_s'], b['messages']):>18}"
                             f"{ratio:>8}{row['subscriber_cpu_percent']:>7.0f}%")
        lines.append("  dropped: the gateway's health, mqtt.dropped / events from the radio (its "
                     "bounded MQTT queue overflowing)")
        lines.append("  baseline/s: what the paho publisher reached when asked for forwarded/s; "
                     "sub CPU: the counting subscriber")
        if short:
            lines.append("  * the baseline fell short of the asked rate (one Python thread "
                         "saturated): not the same load, the ratio is not like for like")
        for kind in ("notifications", "advertisements"):
            for row in t[kind]:
                if row["gateway_exit"] not in (0, None):
                    lines.append(f"  ! {kind} at {row['offered_per_s']}/s: gateway exit status "
                                 f"{row['gateway_exit']} on SIGTERM")
    r = results.get("rotation")
    if r:
        w, e = r["warm"], r["end"]
        lines += ["", f"rotation: 1,000 beacons, addresses rotating every {r['rotate_s']:g} s for "
                  f"{r['minutes']:g} min, bluetooth.max_devices {r['max_devices']}",
                  f"  {'':22}{'t':>7}{'RSS':>11}{'ids on MQTT':>13}{'registry':>10}"
                  f"{'evicted':>9}{'cleared':>9}"]
        for label, s in (("after warm-up (10%)", w), ("end", e)):
            lines.append(f"  {label:22}{s['t']:>6.0f}s{s['rss_kib'] / 1024:>7.1f} MiB"
                         f"{s['ids_seen']:>13}{str(s['registry_devices']):>10}"
                         f"{str(s['evictions']):>9}{s['availability_clears']:>9}")
        lines.append(f"  peak (VmHWM) {r['peak_kib'] / 1024:.1f} MiB; RSS growth "
                     f"{r['growth_percent']:+.2f}% -> {'PASS' if r['pass'] else 'FAIL'} "
                     f"(< {GROWTH_LIMIT:g}%)")
        lines.append("  (registry/evicted: the gateway's health report; cleared: retained "
                     "availability cleared, i.e. devices forgotten or evicted)")
    s = results.get("startup")
    if s:
        lines += ["", "startup: process start to the retained online state on the broker"]
        for label, row in s.items():
            lines.append(f"  {label:28} median {row['median_s'] * 1000:.0f} ms "
                         f"(min {row['min_s'] * 1000:.0f}, max {row['max_s'] * 1000:.0f}, "
                         f"{row['runs']} runs)")
    i = results.get("idle")
    if i:
        lines += ["", "idle: a gateway with nothing to do, after start-up (wake-ups = voluntary "
                  "context switches of its threads)"]
        for label, row in i.items():
            busiest = ", ".join(f"{name} {n:g}" for name, n in list(row["threads"].items())[:4])
            lines.append(f"  {label:24} {row['wakeups_per_s']:>6.1f} wake-ups/s ({busiest}); "
                         f"CPU {row['cpu_ms_per_min']:g} ms per minute")
    return "\n".join(lines) + "\n"


def host() -> str:
    cpu = "?"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    return f"{os.cpu_count()} CPUs ({cpu}), load {os.getloadavg()[0]:.2f} at start"


def decoding(binary: str, workdir: Path, window: float) -> dict:
    """The advertisement path with the decoders and Home Assistant discovery (issue 18): 1,000
    BTHome thermometers, every advertisement new data, each rate measured three ways in one run:
    decoding off and discovery off, decoding on, both on (the defaults)."""
    results: dict = {"window_s": window, "rows": []}
    broker = Broker(workdir)
    counter = Counter(broker.port, ["gatt2mqtt/+/advertisement", "gatt2mqtt/bridge/+/health"])
    variants = [("plain", ["--bluetooth.decode", "false", "--homeassistant.enabled", "false"]),
                ("decoded", ["--homeassistant.enabled", "false"]),
                ("decoded+HA", [])]
    try:
        for interval in (2.0, 0.5):
            for label, options in variants:
                world = (f"devices:\n  - kind: thermometer\n    count: 1000\n    name: sim-t\n"
                         f"    advertising_interval: {interval}\n")
                counter.devices.clear()
                name = f"dec{int(interval * 1000)}{label.replace('+', '')}"
                gateway = start_gateway(binary, broker.port, world, workdir, name,
                                        ["--bluetooth.advertisement_min_interval", "0.001",
                                         "--bluetooth.max_devices", "2000",
                                         "--gateway.health_interval", "1"] + options)
                try:
                    wait_for(lambda: len(counter.devices) >= 1000, 60,
                             f"every thermometer on MQTT ({len(counter.devices)} seen)", gateway)
                    time.sleep(3)
                    row = {"variant": label, "offered_per_s": round(1000 / interval)} | \
                        measure_window(gateway, counter, "advertisement", window)
                finally:
                    row["gateway_exit"] = stop(gateway)
                results["rows"].append(row)
                print("  decoding", json.dumps(row), flush=True)
    finally:
        counter.close()
        broker.stop()
    return results


def decoding_report(result: dict) -> str:
    lines = ["Advertisement path with decoding and Home Assistant discovery (1,000 BTHome "
             f"thermometers, {result['window_s']:g}-s windows)",
             f"  {'variant':<12}{'offered/s':>10}{'forwarded/s':>12}{'CPU/advert':>12}{'vs plain':>10}"]
    plain: dict = {}
    for row in result["rows"]:
        per = row["cpu_s"] / row["messages"] * 1000 if row["messages"] else float("nan")
        if row["variant"] == "plain":
            plain[row["offered_per_s"]] = per
        base = plain.get(row["offered_per_s"])
        ratio = f"{per / base:.2f}x" if base else ""
        lines.append(f"  {row['variant']:<12}{row['offered_per_s']:>10}{row['forwarded_per_s']:>12}"
                     f"{per:>9.3f} ms{ratio:>10}")
    return "\n".join(lines) + "\n"


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "publish":
        p = argparse.ArgumentParser()
        p.add_argument("publish")
        for name, kind in (("--port", int), ("--suffix", str), ("--rate", float),
                           ("--size", int), ("--devices", int)):
            p.add_argument(name, type=kind, required=True)
        publisher_main(p.parse_args())
        return
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("which", nargs="?", default="all",
                   choices=["throughput", "rotation", "startup", "idle", "decoding", "all"])
    p.add_argument("--gateway", default=str(REPO / ".build/release/gatt2mqtt"))
    p.add_argument("--minutes", type=float, default=10, help="length of the rotation run")
    p.add_argument("--window", type=float, default=15, help="seconds per throughput window")
    p.add_argument("--event-interval", type=float, default=None,
                   help="the simulated world's event_interval in the throughput run (default: the "
                        "world's 5 ms batches; 0.0005 hands over each event on its own)")
    p.add_argument("--kinds", default="all", choices=["all", "notifications", "advertisements"],
                   help="which throughput rows to run")
    p.add_argument("--batch-window", type=float, default=None,
                   help="the gateway's bluetooth.batch_window in the throughput run (default: the "
                        "gateway's, 0.1 s; 0 hands each turn of the world over at once, the shape "
                        "before the simulated radio gathered)")
    p.add_argument("--max-devices", type=int, default=20000,
                   help="bluetooth.max_devices in the rotation run (default 20000: no cap)")
    args = p.parse_args()
    if not os.access(args.gateway, os.X_OK):
        raise SystemExit(f"benchmark: no gateway binary at {args.gateway} "
                         "(swift build -c release, or --gateway PATH)")
    gateway = str(Path(args.gateway).resolve())
    stat = Path(gateway).stat()
    results: dict = {"gateway": gateway, "gateway_mtime": time.strftime(
        "%Y-%m-%dT%H:%M:%S", time.localtime(stat.st_mtime)), "host": host(),
        "date": time.strftime("%Y-%m-%dT%H:%M:%S")}
    with tempfile.TemporaryDirectory(prefix="gatt2mqtt-bench-") as tmp:
        workdir = Path(tmp)
        if args.which in ("startup", "all"):
            print("startup…", flush=True)
            results["startup"] = startup(gateway, workdir)
        if args.which in ("idle", "all"):
            print("idle…", flush=True)
            results["idle"] = idle(gateway, workdir)
        if args.which in ("throughput", "all"):
            print("throughput…", flush=True)
            results["throughput"] = throughput(gateway, workdir, args.window, args.event_interval,
                                               args.kinds, args.batch_window)
        if args.which == "decoding":
            print("decoding…", flush=True)
            results["decoding"] = decoding(gateway, workdir, args.window)
        if args.which in ("rotation", "all"):
            print(f"rotation ({args.minutes:g} min)…", flush=True)
            results["rotation"] = rotation(gateway, workdir, args.minutes, args.max_devices)
    out = REPO / "Benchmarks" / "results"
    out.mkdir(exist_ok=True)
    path = out / f"{time.strftime('%Y%m%d-%H%M%S')}-simulated.json"
    path.write_text(json.dumps(results, indent=1))
    print()
    if "decoding" in results:
        print(decoding_report(results["decoding"]), end="")
    else:
        print(report(results), end="")
    print(f"raw figures: {path}")
    rotation_result = results.get("rotation")
    if rotation_result and not rotation_result["pass"]:
        sys.exit(1)


if __name__ == "__main__":
    main()
