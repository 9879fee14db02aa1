"""Benchmark, not a test: a 64 KiB text to two Bumble centrals at once through the gateway's peripheral role, with `peripheral.several_centrals: signals` and `socket` (Benchmarks/peripheral-two-centrals)."""

# Run by Benchmarks/peripheral-two-centrals (lab/run --scenario-dir lab/benchmarks --scenario
# peripheral-two-centrals): lab/run runs lab/scenarios/ only, so `lab/run` and scripts/test
# never run this.
#
# Issue 14 asks, for two or more subscribed centrals, to measure both ways of keeping a
# transfer correct on BlueZ 5.66 (which gives the notification socket to the first subscriber
# only and then carries every datagram to every subscriber, telling the socket's owner nothing
# of the others) and to choose:
#   signals  the gateway lets go of the socket when the second device connects; every chunk is
#            a PropertiesChanged signal, one per peripheral.chunk_interval (5 ms, the default);
#            each later subscription is seen (StartNotify).
#   socket   the gateway keeps the socket; the second device counts as a subscriber of
#            unknown MTU 5 s after it connected (the text then goes again), chunks are cut for
#            the smallest MTU known.
# Per MTU (23, 247) and mode: central a connects and subscribes (gets the short warm-up text),
# then central b (gets it too: seen, or counted after the grace), then a 64 KiB text is
# published; both centrals time it from their first chunk to EOM and compare it byte for byte.
# At MTU 247 both centrals read the characteristic before subscribing: the only way BlueZ 5.66
# tells a GATT application a central's MTU outside AcquireNotify, needed by both modes.
# Results: <scenario dir>/benchmark.json and benchmark.txt.

import json
import time

from procs import LabError, cpu_seconds, pids

ROWS = "BENCH"
TIMEOUT = 1800

SIZE = 65536
MTUS = (23, 247)
MODES = ("signals", "socket")
TEXT_TIMEOUT = 300  # s (scaled by LAB_TIME_SCALE): 64 KiB as signals at MTU 23 takes ~30 s
SERVICE = "e20a39f4-73f5-4bc4-a12f-17d1ad07a961"
TEXT_SET = "gatt2mqtt/bridge/lab/peripheral/text/set"
EVENT = "gatt2mqtt/bridge/lab/peripheral/event"
WARM_UP = "warm-up ✓".encode()


def text_of(size: int) -> bytes:
    """`size` bytes of UTF-8 with multi-byte characters (a cut character becomes dots)."""
    unit = "Zwei Zentralen, ein Text ✓ 東京 🚀 ".encode()
    data = (unit * (size // len(unit) + 1))[:size]
    whole = data.decode("utf-8", "ignore").encode()
    return whole + b"." * (size - len(whole))


def gateway_config(lab, mode: str) -> str:
    return lab.peripheral_gateway_config(f"  local_name: lab-gw\n  several_centrals: {mode}\n")


def cpu_now(gateway) -> dict:
    s = {"t": time.monotonic(), "gateway": cpu_seconds(gateway.pid, missing=0.0)}
    for name in ("bluetoothd", "dbus-daemon"):
        s[name] = sum(cpu_seconds(p, missing=0.0) for p in pids(name))
    return s


async def two_centrals(lab, mqtt, text: bytes, mtu: int, mode: str) -> dict:
    mqtt.publish(TEXT_SET, WARM_UP, retain=True)
    mark = mqtt.mark()
    gateway = await lab.gateway(gateway_config(lab, mode), config_name=f"gatt2mqtt-{mode}-mtu{mtu}.yaml")
    centrals = []
    try:
        await mqtt.expect("gatt2mqtt/bridge/lab/peripheral/state", after=mark,
                          where=lambda m: m.json().get("state") == "advertising", timeout=120)
        for name in ("a", "b"):
            central = await lab.peer("central", name=f"central-{name}-{mode}-mtu{mtu}", mtu=mtu,
                                     service=SERVICE, read_first=mtu > 23)
            centrals.append(central)
            await central.wait("text", timeout=120, where=lambda e: bytes.fromhex(e["hex"]) == WARM_UP)
        marks = [c.mark() for c in centrals]
        mark = mqtt.mark()
        before = cpu_now(gateway)
        await lab.publish_file(TEXT_SET, text, f"text-64k-{mode}-{mtu}")
        sent = await mqtt.expect(EVENT, after=mark, timeout=TEXT_TIMEOUT,
                                 where=lambda m: m.json().get("type") in ("sent", "aborted")
                                 and m.json().get("bytes") == len(text))
        texts = []
        for central, m in zip(centrals, marks):
            texts.append(await central.wait("text", after=m, timeout=TEXT_TIMEOUT,
                                            where=lambda e: e["bytes"] >= len(text) // 2))
        after = cpu_now(gateway)
        wall = max(after["t"] - before["t"], 1e-6)
        elapsed = max(max(float(e["elapsed_s"] or 0) for e in texts), 1e-6)
        got = [bytes.fromhex(e["hex"]) for e in texts]
        return {
            "path": sent.json().get("path"), "event": sent.json().get("type"),
            "chunk_size": max(max(e["chunk_sizes"] or [0]) for e in texts),
            "chunks": [len(e["chunk_sizes"]) for e in texts],
            "elapsed_s": [round(float(e["elapsed_s"] or 0), 3) for e in texts],
            "intact": [g == text for g in got],
            "bytes_per_s": round(len(text) / elapsed, 1),
            "cpu_ms_per_kib": {k: round((after[k] - before[k]) * 1000 / (len(text) / 1024), 2)
                               for k in ("gateway", "bluetoothd", "dbus-daemon")},
            "wall_s": round(wall, 2),
        }
    finally:
        for central in centrals:
            await central.stop()
        await gateway.stop()


def table(results: dict) -> str:
    lines = [
        f"peripheral-two-centrals: one {SIZE // 1024} KiB text to two Bumble centrals at once,",
        "  each timed from its first chunk to EOM (bytes/s: the slower of the two); one lab run",
        "  under QEMU emulation; CPU (ms) per KiB of text, from the publish to both texts",
        "",
        f"  {'MTU':>4}  {'several_centrals':<17}{'path':<9}{'chunk':>6}{'time a/b':>16}{'bytes/s':>10}"
        f"  {'texts':<14}{'gateway':>9}{'bluetoothd':>11}{'dbus':>9}",
    ]
    for mtu in MTUS:
        for mode in MODES:
            r = results.get(f"{mtu}-{mode}")
            if r is None:
                continue
            if "error" in r:
                lines.append(f"  {mtu:>4}  {mode:<17}error: {r['error']}")
                continue
            times = "/".join(f"{t:.2f}s" for t in r["elapsed_s"])
            texts = "intact" if all(r["intact"]) else "DIFFERS " + "/".join(
                "ok" if ok else "bad" for ok in r["intact"])
            cpu = r["cpu_ms_per_kib"]
            lines.append(
                f"  {mtu:>4}  {mode:<17}{r['path'] or '-':<9}{r['chunk_size']:>6}{times:>16}"
                f"{r['bytes_per_s']:>10.0f}  {texts:<14}{cpu['gateway']:>7.2f}ms{cpu['bluetoothd']:>9.2f}ms"
                f"{cpu['dbus-daemon']:>7.2f}ms")
    lines.append("")
    for mtu in MTUS:
        a, b = results.get(f"{mtu}-signals", {}), results.get(f"{mtu}-socket", {})
        if all(r.get("intact") and all(r["intact"]) for r in (a, b)):
            lines.append(f"two centrals mtu{mtu}: socket/signals {b['bytes_per_s'] / a['bytes_per_s']:.2f}")
        else:
            lines.append(f"two centrals mtu{mtu}: not measured (a run failed or a text differs)")
    return "\n".join(lines) + "\n"


async def run(lab):
    lab.check(lab.gateway_path, "no gateway given (lab/run --gateway PATH)")
    text = text_of(SIZE)
    results: dict = {"config": {"bytes": SIZE, "gateway": lab.gateway_path}}
    mqtt = await lab.mqtt(subscribe="gatt2mqtt/bridge/lab/peripheral/#")
    for mtu in MTUS:
        for mode in MODES:
            key = f"{mtu}-{mode}"
            try:
                results[key] = await two_centrals(lab, mqtt, text, mtu, mode)
            except LabError as e:
                results[key] = {"error": str(e)}
            lab.log(f"MTU {mtu}, {mode}:", results[key])
            (lab.dir / "benchmark.json").write_text(json.dumps(results, indent=1))
            (lab.dir / "benchmark.txt").write_text(table(results))
    mqtt.publish(TEXT_SET, b"", retain=True)
    lab.log("\n" + table(results))
    failed = [f"{k}: {r['error']}" for k, r in results.items() if isinstance(r, dict) and "error" in r]
    lab.check(not failed, "; ".join(failed))
