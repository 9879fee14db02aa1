#!/usr/bin/env python3
"""Benchmarks of the bridge through the simulated radio, against a real mosquitto.

Not tests: nothing here runs in scripts/test. Run through Benchmarks/simulated (which provides
paho-mqtt). Each measurement starts its own mosquitto on a free loopback port (errors logged
only) and the gateway binary with `--radio simulated --world <generated file>`:

  throughput  notifications/s and advertisements/s the bridge forwards to the broker, and CPU
              time per message (utime+stime of the gateway, /proc/<pid>/stat), against a
              Python paho publisher doing the same publishes (same topics, payload sizes, QoS 1)
              at the rate the gateway reached, in the same run: ratio = baseline CPU/msg over
              gatt2mqtt CPU/msg (above 1: gatt2mqtt is cheaper).
  rotation    RSS of the gateway with 1,000 beacons whose random addresses rotate so that
              10,000 addresses come and go over the run (default 10 minutes); RSS after a
              warm-up (10% of the run) against the end; PASS when it grew less than 5%.
  startup     seconds from process start to the retained `online` state on the broker
              (median of 10 runs), with the default simulated world and with --radio none.

Figures go to stdout and to Benchmarks/results/<timestamp>-simulated.json.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import paho.mqtt.client as mqtt

REPO = Path(__file__).resolve().parents[1]
CLK_TCK = os.sysconf("SC_CLK_TCK")


# -- processes -------------------------------------------------------------------------------
def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def rss_kib(pid: int) -> tuple[int, int]:
    """(VmRSS, VmHWM) in KiB."""
    values = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, rest = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            values[key] = int(rest.split()[0])
    return values["VmRSS"], values["VmHWM"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Broker:
    def __init__(self, workdir: Path):
        self.port = free_port()
        conf = workdir / "mosquitto.conf"
        lines = [f"listener {self.port} 127.0.0.1", "allow_anonymous true", "persistence false",
                 "log_dest stderr", "log_type error", "log_type warning"]
        if os.geteuid() == 0:
            lines.append("user root")
        conf.write_text("\n".join(lines) + "\n")
        self.proc = subprocess.Popen(["mosquitto", "-c", str(conf)], stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise SystemExit("mosquitto did not start")
                time.sleep(0.05)

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait()


class Counter:
    """A paho subscriber counting messages per topic kind (thread-safe enough: one loop thread)."""

    def __init__(self, port: int, topics: list[str]):
        self.counts: dict[str, int] = {}
        self.devices: set[str] = set()
        self.first: dict[str, float] = {}
        self.lock = threading.Lock()
        self.client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=f"bench-{os.getpid()}-{time.time_ns()}")
        self.client.on_message = self.on_message
        self.client.connect("127.0.0.1", port)
        for topic in topics:
            self.client.subscribe(topic, qos=1)
        self.client.loop_start()

    def on_message(self, client, userdata, message):
        parts = message.topic.split("/")
        kind = parts[-1] if parts[1] != "bridge" else "/".join(parts[3:])
        with self.lock:
            self.counts[kind] = self.counts.get(kind, 0) + 1
            self.first.setdefault(message.topic, time.monotonic())
            if parts[1] != "bridge":
                self.devices.add(parts[1])

    def count(self, kind: str) -> int:
        with self.lock:
            return self.counts.get(kind, 0)

    def close(self) -> None:
        self.client.loop_stop()
        self.client.disconnect()


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
    return subprocess.Popen(argv, stdout=log, stderr=log, env=env)


def stop(proc: subprocess.Popen) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def wait_for(cond, timeout: float, what: str, gateway: subprocess.Popen | None = None) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if gateway is not None and gateway.poll() is not None:
            raise SystemExit(f"benchmark: the gateway exited ({gateway.returncode}) before {what}")
        if time.monotonic() > deadline:
            raise SystemExit(f"benchmark: {what} not within {timeout:.0f} s")
        time.sleep(0.05)


# -- the baseline publisher ------------------------------------------------------------------
def publisher_main(args) -> None:
    """`simulated.py publish`: publishes `rate`/s messages on `devices` topics for `seconds`,
    QoS 1, payloads of `size` bytes; prints how many it published."""
    client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=f"baseline-{os.getpid()}")
    client.max_inflight_messages_set(1000)
    client.max_queued_messages_set(0)
    client.connect("127.0.0.1", args.port)
    client.loop_start()
    payload = ("x" * args.size).encode()
    topics = [f"bench/{i:012X}/{args.kind}" for i in range(args.devices)]
    start = time.monotonic()
    sent = 0
    while True:
        elapsed = time.monotonic() - start
        if elapsed >= args.seconds:
            break
        due = int(elapsed * args.rate)
        while sent < due:
            client.publish(topics[sent % len(topics)], payload, qos=1)
            sent += 1
        time.sleep(0.001)
    client.loop_stop()
    client.disconnect()
    print(json.dumps({"published": sent}))


def baseline(port: int, kind: str, rate: float, seconds: float, size: int, devices: int) -> dict:
    argv = [sys.executable, __file__, "publish", "--port", str(port), "--kind", kind,
            "--rate", str(rate), "--seconds", str(seconds), "--size", str(size),
            "--devices", str(devices)]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE)
    cpu = 0.0
    while proc.poll() is None:
        try:
            cpu = cpu_seconds(proc.pid)  # the last reading before it exits
        except OSError:
            break
        time.sleep(0.05)
    out = proc.communicate()[0].decode().strip().splitlines()
    published = json.loads(out[-1])["published"] if out else 0
    return {"messages": published, "cpu_s": round(cpu, 3), "seconds": seconds}


# -- measurements ----------------------------------------------------------------------------
def throughput(binary: str, workdir: Path, window: float) -> dict:
    results: dict = {"window_s": window, "notifications": [], "advertisements": []}
    broker = Broker(workdir)
    try:
        # Notifications: 5 heart-rate sensors at a sweep of rates.
        # The last rate is beyond what the bridge sustains: its forwarded/s is the ceiling.
        for per_device in (200, 1000, 10000):
            world = (f"advertising_interval: 0.5\nconnect_latency: 0.01\ndevices:\n"
                     f"  - kind: heart_rate\n    count: 5\n    name: sim-hr\n"
                     f"    notify_rate: {per_device}\n")
            counter = Counter(broker.port, ["gatt2mqtt/+/gatt/180d/2a37"])
            gateway = start_gateway(binary, broker.port, world, workdir, f"notify{per_device}",
                                    ["--bluetooth.connect.names", "sim-hr*",
                                     "--bluetooth.connect.max_connections", "5",
                                     "--bluetooth.gatt.notify", "*/180d/2a37"])
            try:
                wait_for(lambda: len(counter.devices) == 5 and counter.count("2a37") > 1000, 60,
                         "values from all 5 sensors", gateway)
                time.sleep(1)
                n0, c0, t0 = counter.count("2a37"), cpu_seconds(gateway.pid), time.monotonic()
                time.sleep(window)
                n1, c1, t1 = counter.count("2a37"), cpu_seconds(gateway.pid), time.monotonic()
            finally:
                stop(gateway)
                counter.close()
            rate = (n1 - n0) / (t1 - t0)
            row = {"offered_per_s": per_device * 5, "forwarded_per_s": round(rate, 1),
                   "messages": n1 - n0, "cpu_s": round(c1 - c0, 3)}
            row["baseline"] = baseline(broker.port, "2a37", rate, window, 4, 5)
            results["notifications"].append(row)
            print("  notifications", row, flush=True)

        # Advertisements: 1,000 beacons.
        for interval in (2.0, 0.5, 0.05):
            world = (f"devices:\n  - kind: beacon\n    count: 1000\n    name: sim-b\n"
                     f"    advertising_interval: {interval}\n")
            counter = Counter(broker.port, ["gatt2mqtt/+/advertisement"])
            gateway = start_gateway(binary, broker.port, world, workdir, f"adv{int(interval * 1000)}",
                                    ["--bluetooth.advertisement_min_interval", "0.001",
                                     "--bluetooth.max_devices", "2000"])
            try:
                wait_for(lambda: len(counter.devices) >= 1000, 60,
                         f"every beacon on MQTT ({len(counter.devices)} seen)", gateway)
                n0, c0, t0 = counter.count("advertisement"), cpu_seconds(gateway.pid), time.monotonic()
                time.sleep(window)
                n1, c1, t1 = counter.count("advertisement"), cpu_seconds(gateway.pid), time.monotonic()
            finally:
                stop(gateway)
                counter.close()
            rate = (n1 - n0) / (t1 - t0)
            row = {"offered_per_s": round(1000 / interval), "forwarded_per_s": round(rate, 1),
                   "messages": n1 - n0, "cpu_s": round(c1 - c0, 3)}
            # An advertisement's JSON is about 190 bytes.
            row["baseline"] = baseline(broker.port, "advertisement", rate, window, 190, 1000)
            results["advertisements"].append(row)
            print("  advertisements", row, flush=True)
    finally:
        broker.stop()
    return results


def rotation(binary: str, workdir: Path, minutes: float) -> dict:
    duration = minutes * 60
    rotate = duration / 10  # 10 addresses per beacon over the run: 10,000 in all
    world = (f"advertising_interval: 2\ndevices:\n  - kind: beacon\n    count: 1000\n"
             f"    name: sim-r\n    rotate: {rotate}\n")
    broker = Broker(workdir)
    counter = Counter(broker.port, ["gatt2mqtt/+/advertisement"])
    gateway = start_gateway(binary, broker.port, world, workdir, "rotation", [])
    samples = []
    try:
        start = time.monotonic()
        while (elapsed := time.monotonic() - start) < duration:
            rss, hwm = rss_kib(gateway.pid)
            samples.append({"t": round(elapsed, 1), "rss_kib": rss, "hwm_kib": hwm,
                            "devices_seen": len(counter.devices)})
            time.sleep(5)
        rss, hwm = rss_kib(gateway.pid)
        samples.append({"t": round(time.monotonic() - start, 1), "rss_kib": rss, "hwm_kib": hwm,
                        "devices_seen": len(counter.devices)})
        cpu = cpu_seconds(gateway.pid)
    finally:
        stop(gateway)
        counter.close()
        broker.stop()
    warm = next(s for s in samples if s["t"] >= duration * 0.1)
    end = samples[-1]
    growth = (end["rss_kib"] - warm["rss_kib"]) / warm["rss_kib"] * 100
    return {"minutes": minutes, "beacons": 1000, "rotate_s": rotate,
            "addresses_seen": end["devices_seen"], "rss_warm_kib": warm["rss_kib"],
            "rss_end_kib": end["rss_kib"], "peak_kib": end["hwm_kib"],
            "growth_percent": round(growth, 2), "pass": growth < 5, "cpu_s": round(cpu, 2),
            "samples": samples}


def startup(binary: str, workdir: Path, runs: int = 10) -> dict:
    broker = Broker(workdir)
    results = {}
    try:
        for label, world in (("simulated (built-in world)", ""), ("radio none", None)):
            times = []
            for n in range(runs):
                gateway_id = f"start{n}{'s' if world is not None else 'n'}"
                seen = threading.Event()
                client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=f"watch-{gateway_id}")
                client.on_message = lambda c, u, m: seen.set() if b"online" in m.payload else None
                client.connect("127.0.0.1", broker.port)
                client.subscribe(f"gatt2mqtt/bridge/{gateway_id}/state", qos=1)
                client.loop_start()
                time.sleep(0.2)
                t0 = time.monotonic()
                if world is None:
                    gateway = start_gateway(binary, broker.port, None, workdir, gateway_id,
                                            ["--radio", "none"])
                else:
                    gateway = start_gateway(binary, broker.port, None, workdir, gateway_id,
                                            ["--radio", "simulated"])
                if not seen.wait(30):
                    raise SystemExit(f"benchmark: no online state from {gateway_id}")
                times.append(time.monotonic() - t0)
                stop(gateway)
                client.loop_stop()
                client.disconnect()
            results[label] = {"median_s": round(statistics.median(times), 3),
                              "min_s": round(min(times), 3), "max_s": round(max(times), 3),
                              "runs": runs}
    finally:
        broker.stop()
    return results


# -- report ----------------------------------------------------------------------------------
def ms(cpu: float, n: int) -> str:
    return f"{cpu / n * 1000:.3f} ms" if n else "-"


def report(results: dict) -> str:
    lines = [f"simulated: the bridge through the simulated radio, gateway {results['gateway']}"]
    t = results.get("throughput")
    if t:
        lines += ["", f"throughput ({t['window_s']:.0f} s windows; CPU = utime+stime, "
                  f"{1000 / CLK_TCK:.0f} ms ticks; baseline = paho publisher, same publishes)",
                  f"  {'':26}{'offered/s':>10}{'forwarded/s':>12}{'gatt2mqtt CPU/msg':>19}"
                  f"{'baseline CPU/msg':>18}{'ratio':>8}"]
        for kind in ("notifications", "advertisements"):
            for row in t[kind]:
                b = row["baseline"]
                mine = row["cpu_s"] / row["messages"] if row["messages"] else 0
                theirs = b["cpu_s"] / b["messages"] if b["messages"] else 0
                ratio = f"{theirs / mine:.2f}x" if mine and theirs else "-"
                lines.append(f"  {kind:26}{row['offered_per_s']:>10}{row['forwarded_per_s']:>12}"
                             f"{ms(row['cpu_s'], row['messages']):>19}"
                             f"{ms(b['cpu_s'], b['messages']):>18}{ratio:>8}")
    r = results.get("rotation")
    if r:
        lines += ["", f"rotation: 1,000 beacons, addresses rotating every {r['rotate_s']:.0f} s for "
                  f"{r['minutes']:g} min ({r['addresses_seen']} device ids seen on MQTT)",
                  f"  RSS after warm-up {r['rss_warm_kib'] / 1024:.1f} MiB, at the end "
                  f"{r['rss_end_kib'] / 1024:.1f} MiB, peak {r['peak_kib'] / 1024:.1f} MiB: "
                  f"growth {r['growth_percent']:+.2f}% -> {'PASS' if r['pass'] else 'FAIL'} (< 5%)"]
    s = results.get("startup")
    if s:
        lines += ["", "startup: process start to retained online state"]
        for label, row in s.items():
            lines.append(f"  {label:28} median {row['median_s'] * 1000:.0f} ms "
                         f"(min {row['min_s'] * 1000:.0f}, max {row['max_s'] * 1000:.0f}, "
                         f"{row['runs']} runs)")
    return "\n".join(lines) + "\n"


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "publish":
        p = argparse.ArgumentParser()
        p.add_argument("publish")
        for name, kind in (("--port", int), ("--kind", str), ("--rate", float),
                           ("--seconds", float), ("--size", int), ("--devices", int)):
            p.add_argument(name, type=kind, required=True)
        publisher_main(p.parse_args())
        return
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("which", nargs="?", default="all",
                   choices=["throughput", "rotation", "startup", "all"])
    p.add_argument("--gateway", default=str(REPO / ".build/release/gatt2mqtt"))
    p.add_argument("--minutes", type=float, default=10, help="length of the rotation run")
    p.add_argument("--window", type=float, default=15, help="seconds per throughput window")
    args = p.parse_args()
    if not os.access(args.gateway, os.X_OK):
        raise SystemExit(f"benchmark: no gateway binary at {args.gateway} "
                         "(swift build -c release, or --gateway PATH)")
    results: dict = {"gateway": args.gateway, "date": time.strftime("%Y-%m-%dT%H:%M:%S")}
    with tempfile.TemporaryDirectory(prefix="gatt2mqtt-bench-") as tmp:
        workdir = Path(tmp)
        if args.which in ("startup", "all"):
            print("startup…", flush=True)
            results["startup"] = startup(args.gateway, workdir)
        if args.which in ("throughput", "all"):
            print("throughput…", flush=True)
            results["throughput"] = throughput(args.gateway, workdir, args.window)
        if args.which in ("rotation", "all"):
            print(f"rotation ({args.minutes:g} min)…", flush=True)
            results["rotation"] = rotation(args.gateway, workdir, args.minutes)
    out = REPO / "Benchmarks" / "results"
    out.mkdir(exist_ok=True)
    path = out / f"{time.strftime('%Y%m%d-%H%M%S')}-simulated.json"
    path.write_text(json.dumps(results, indent=1))
    print()
    print(report(results), end="")
    print(f"raw figures: {path}")
    rotation_result = results.get("rotation")
    if rotation_result and not rotation_result["pass"]:
        sys.exit(1)


if __name__ == "__main__":
    main()
