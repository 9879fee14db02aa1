"""Benchmark, not a test: bytes/s of a 64 KiB text through the gateway's peripheral role against a Bumble-to-Bumble baseline on the same lab link, with a pacing sweep (Benchmarks/peripheral-throughput)."""

# Run by Benchmarks/peripheral-throughput (lab/run --scenario-dir lab/benchmarks --scenario
# peripheral-throughput): lab/run runs lab/scenarios/ only, so `lab/run` and scripts/test never
# run this.
#
# One Bumble central (lab/zoo/central.py) scans for the transfer service, connects, sets the ATT
# MTU, subscribes and reassembles the `EOM`-terminated text; it times each text from its first
# chunk to `EOM` (`elapsed_s`). The sender is, in turn:
#   baseline   a Bumble peripheral (lab/zoo/transfer.py) sending the same text as fast as its
#              host lets it (each notification awaited, no pacing): the raw notification rate
#              the lab link sustains, with MTU-3 chunks.
#   gatt2mqtt  the gateway's peripheral role (real bluetoothd), fed the text by a retained MQTT
#              publish: first through the notification socket (`peripheral.notify_socket`,
#              bluetoothd's AcquireNotify: no pacing, back-pressure, the MTU from AcquireNotify;
#              the central does not read first), then as D-Bus signals
#              (`notify_socket: false`) once per `peripheral.chunk_interval` of the sweep
#              (deadline pacing: one chunk per interval). On the signal path at MTU 247 the
#              central first reads the characteristic once (short read): BlueZ 5.66 tells a
#              GATT application a central's MTU only in read and write requests, never on
#              StartNotify, so without it the gateway stays at 20-byte chunks.
# Where the time goes: CPU (utime+stime, /proc/<pid>/stat) of the sender, the central,
# bluetoothd, btvirt and dbus-daemon, and the guest's busy time (/proc/stat, both vCPUs; what
# no process listed took — the kernel's Bluetooth work queues, interrupts — is the rest), from
# the central's start to its `text`, as shares of one vCPU over that time.
# Each run checks the reassembled text byte for byte (loss, reordering or duplication all show
# as a difference). Results: <scenario dir>/benchmark.json and benchmark.txt (the table the
# launcher prints); ratios are gatt2mqtt bytes/s over the baseline's at the same MTU.

import asyncio
import json
import os
import time
from pathlib import Path

from procs import CLK_TCK, LabError, cpu_seconds, pids

ROWS = "BENCH"
TIMEOUT = 1800

SIZE = 65536
MTUS = (23, 247)
# Per MTU: "socket" (the notification socket), then the signal path at these intervals (s).
SWEEP = {23: ("socket", 0.002, 0.005, 0.01), 247: ("socket", 0.002, 0.005)}
GRACE = 20  # s after the gateway reported the text sent
TEXT_TIMEOUT = 240  # s (scaled by LAB_TIME_SCALE): 64 KiB at 10 ms pacing takes about a minute
SERVICE = "e20a39f4-73f5-4bc4-a12f-17d1ad07a961"
TEXT_SET = "gatt2mqtt/bridge/lab/peripheral/text/set"


def text_of(size: int) -> bytes:
    """`size` bytes of UTF-8 with multi-byte characters (a cut character becomes dots)."""
    unit = "Grüße aus dem Labor ✓ 東京 🚀 ".encode()
    data = (unit * (size // len(unit) + 1))[:size]
    whole = data.decode("utf-8", "ignore").encode()
    return whole + b"." * (size - len(whole))


def gateway_config(lab, mode) -> str:
    socket = mode == "socket"
    interval = 0.005 if socket else mode
    return lab.peripheral_gateway_config(
        f"  local_name: lab-gw\n  chunk_interval: {interval}\n"
        f"  notify_socket: {'true' if socket else 'false'}\n")


def outcome(text: bytes, ev: dict) -> dict:
    got = bytes.fromhex(ev["hex"])
    sizes = ev["chunk_sizes"]
    elapsed = max(float(ev.get("elapsed_s") or 0), 1e-6)
    return {
        "bytes": len(got), "intact": got == text, "chunks": len(sizes),
        "chunk_size": max(sizes) if sizes else 0, "mtu": ev.get("mtu"),
        "elapsed_s": round(elapsed, 3), "bytes_per_s": round(len(got) / elapsed, 1),
        "chunks_per_s": round(len(sizes) / elapsed, 1),
    }


DAEMONS = ("bluetoothd", "btvirt", "dbus-daemon")


def snapshot(procs: dict) -> dict:
    """CPU seconds so far of `procs` (label -> Proc), the daemons and the whole guest."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    ticks = [int(f) for f in fields]
    s = {"t": time.monotonic(), "guest": (sum(ticks[:8]) - ticks[3] - ticks[4]) / CLK_TCK}
    for name in DAEMONS:
        s[name] = sum(cpu_seconds(p, missing=0.0) for p in pids(name))
    for label, proc in procs.items():
        s[label] = cpu_seconds(proc.pid, missing=0.0)
    return s


def shares(a: dict, b: dict) -> dict:
    """Per entry, its CPU between two snapshots as a share of one vCPU; `wall_s` the time."""
    wall = max(b["t"] - a["t"], 1e-6)
    out = {k: round((b[k] - a[k]) / wall, 3) for k in a if k != "t"}
    out["rest"] = round(out["guest"] - sum(v for k, v in out.items() if k != "guest"), 3)
    out["wall_s"] = round(wall, 2)
    return out


class Incomplete(Exception):
    """The link dropped before `EOM`: what had arrived."""

    def __init__(self, event: dict):
        super().__init__(f"{event['bytes']} bytes in {event['chunks']} chunks arrived, no EOM")
        self.event = event


async def central_run(lab, mtu: int, name: str, sender, read_first: bool = False,
                      done=None) -> tuple[dict, dict]:
    """The central's `text` event, and the CPU shares while it ran (`sender`: the sending
    process). `done`, when given, is awaited first: the sender's own report that it sent
    everything; a text that does not follow within a grace period lost chunks (or its `EOM`):
    `Incomplete` with what had arrived."""
    central = await lab.peer("central", name=name, mtu=mtu, service=SERVICE, read_first=read_first,
                             exit_on_disconnect=True)
    procs = {"sender": sender, "central": central}
    before = snapshot(procs)
    try:
        if done is not None:
            await done(central)
            timeout = GRACE
        else:
            timeout = TEXT_TIMEOUT
        ev = await central.wait("text", timeout=timeout)
        return ev, shares(before, snapshot(procs))
    except LabError:
        cut = central.events("incomplete")
        if cut:
            raise Incomplete(cut[-1]) from None
        if central.running:
            mark = central.mark()
            central.send("status")
            status = await central.wait("status", after=mark, timeout=10)
            raise Incomplete({"bytes": status["bytes"], "chunks": status["chunks"],
                              "elapsed_s": 0}) from None
        raise
    finally:
        await central.stop()


async def baseline_run(lab, text: bytes, mtu: int) -> dict:
    sender = await lab.peer("transfer", name=f"peer-transfer-mtu{mtu}", text="-")
    try:
        mark = sender.mark()
        sender.send("text", text=text.decode(), send=False)
        ev = await sender.wait("text", after=mark, timeout=60)
        lab.check(ev["bytes"] == len(text), f"transfer peer took {ev['bytes']} bytes")
        ev, cpu = await central_run(lab, mtu, f"central-baseline-mtu{mtu}", sender)
        return outcome(text, ev) | {"cpu": cpu}
    finally:
        await sender.stop()


def label_of(mode) -> str:
    return "gatt2mqtt, socket" if mode == "socket" else f"gatt2mqtt, signals {float(mode) * 1000:g} ms"


async def gateway_run(lab, mqtt, text: bytes, mtu: int, mode) -> dict:
    tag = f"mtu{mtu}-socket" if mode == "socket" else f"mtu{mtu}-{int(mode * 1000)}ms"
    mark = mqtt.mark()
    gateway = await lab.gateway(gateway_config(lab, mode), config_name=f"gatt2mqtt-{tag}.yaml")
    try:
        await mqtt.expect("gatt2mqtt/bridge/lab/peripheral/state", after=mark,
                          where=lambda m: m.json().get("state") == "advertising", timeout=120)
        sent_mark = mqtt.mark()

        async def sent(central):
            """Until the gateway reports the text sent (or the central gave up)."""
            deadline = time.monotonic() + lab.timeout(TEXT_TIMEOUT)
            while not any(m.json().get("type") == "sent" for m in
                          mqtt.received("gatt2mqtt/bridge/lab/peripheral/event", after=sent_mark)):
                if not central.running or central.events("text"):
                    return
                if time.monotonic() > deadline:
                    raise LabError(f"the gateway reported no `sent` within {TEXT_TIMEOUT} s")
                await asyncio.sleep(0.2)

        try:
            ev, cpu = await central_run(lab, mtu, f"central-{tag}", gateway,
                                        read_first=mtu > 23 and mode != "socket", done=sent)
        except Incomplete as cut:
            # Chunks were dropped (the link gave up): a result, not an error of the benchmark.
            e = cut.event
            return {"bytes": e["bytes"], "intact": False, "chunks": e["chunks"], "chunk_size": 0,
                    "mtu": mtu, "elapsed_s": round(float(e["elapsed_s"]), 3), "bytes_per_s": 0.0,
                    "chunks_per_s": 0.0, "lost": str(cut)}
        result = outcome(text, ev) | {"cpu": cpu}
        lab.check(gateway.running, "the gateway exited during the transfer")
        return result
    finally:
        await gateway.stop()


def table(results: dict) -> str:
    lines = [
        f"peripheral-throughput: one {SIZE // 1024} KiB text (multi-byte UTF-8) to one Bumble central,",
        "  timed at the central from the first chunk to EOM; one lab run under QEMU emulation",
        "  baseline = Bumble peripheral notifying back to back (the raw rate of the lab link)",
        "  ratio = gatt2mqtt bytes/s / baseline bytes/s at the same MTU",
        "",
        f"  {'MTU':>4}  {'sender':<27}{'chunk':>6}{'chunks':>8}{'time':>10}{'bytes/s':>11}"
        f"{'chunks/s':>10}  {'text':<8}{'ratio':>7}",
    ]
    for mtu in MTUS:
        runs = results.get(str(mtu), {})
        base = runs.get("baseline", {})
        for key in ["baseline"] + [f"{mode}" for mode in SWEEP[mtu]]:
            label = "baseline (Bumble)" if key == "baseline" else label_of(
                key if key == "socket" else float(key))
            r = runs.get(key)
            if r is None:
                continue
            if "error" in r:
                lines.append(f"  {mtu:>4}  {label:<27}error: {r['error']}")
                continue
            ratio = "-"
            if key != "baseline" and base.get("bytes_per_s"):
                ratio = f"{r['bytes_per_s'] / base['bytes_per_s']:.2f}x"
            if r.get("lost"):
                lines.append(f"  {mtu:>4}  {label:<27}LOST: {r['lost']} (no complete text)")
                continue
            state = "intact" if r["intact"] else f"DIFFERS ({r['bytes']} B)"
            lines.append(
                f"  {mtu:>4}  {label:<27}{r['chunk_size']:>6}{r['chunks']:>8}{r['elapsed_s']:>9.2f}s"
                f"{r['bytes_per_s']:>11.0f}{r['chunks_per_s']:>10.1f}  {state:<8}{ratio:>7}")
    lines += ["", "  CPU while the central ran, in vCPUs (1.00 = one of the guest's 2 busy all the time);",
              "  rest = guest busy time no listed process took (kernel work queues, interrupts)", "",
              f"  {'MTU':>4}  {'sender':<27}{'wall':>7}{'guest':>7}{'sender':>8}{'central':>8}"
              f"{'bluetoothd':>11}{'btvirt':>8}{'dbus':>7}{'rest':>7}"]
    for mtu in MTUS:
        for key, r in results.get(str(mtu), {}).items():
            cpu = r.get("cpu") if isinstance(r, dict) else None
            if not cpu:
                continue
            label = "baseline (Bumble)" if key == "baseline" else label_of(
                key if key == "socket" else float(key))
            lines.append(
                f"  {mtu:>4}  {label:<27}{cpu['wall_s']:>6.2f}s{cpu['guest']:>7.2f}{cpu['sender']:>8.2f}"
                f"{cpu['central']:>8.2f}{cpu['bluetoothd']:>11.2f}{cpu['btvirt']:>8.2f}"
                f"{cpu['dbus-daemon']:>7.2f}{cpu['rest']:>7.2f}")
    lines.append("")
    lines += ratio_lines(results)
    return "\n".join(lines) + "\n"


def ratio_lines(results: dict) -> list[str]:
    """The result lines (issue 14): per MTU, the bytes/s of gatt2mqtt's default path with one
    central (the notification socket) over the baseline's, from this run only; a run that lost
    chunks or changed the text is not a result ("not measured"). The paced signal rows are
    for comparison only: a faster one never stands in for the default."""
    lines = []
    for mtu in MTUS:
        runs = results.get(str(mtu), {})
        base = runs.get("baseline", {})
        socket = runs.get("socket", {})
        if (base.get("bytes_per_s") and base.get("intact", True) and socket.get("bytes_per_s")
                and "error" not in socket and not socket.get("lost") and socket.get("intact")):
            lines.append(f"transfer ratio mtu{mtu}: {socket['bytes_per_s'] / base['bytes_per_s']:.2f}")
        else:
            lines.append(f"transfer ratio mtu{mtu}: not measured")
    return lines


async def run(lab):
    text = text_of(SIZE)
    results: dict = {"config": {"bytes": SIZE, "sweep": {str(k): v for k, v in SWEEP.items()},
                                "gateway": lab.gateway_path}}

    def save() -> None:
        (lab.dir / "benchmark.json").write_text(json.dumps(results, indent=1))
        (lab.dir / "benchmark.txt").write_text(table(results))

    # The baseline first: the Bumble sender advertises the same service UUID as the gateway, so
    # the two never run at the same time.
    for mtu in MTUS:
        runs = results.setdefault(str(mtu), {})
        try:
            runs["baseline"] = await baseline_run(lab, text, mtu)
        except LabError as e:
            runs["baseline"] = {"error": str(e)}
        lab.log(f"baseline MTU {mtu}:", runs["baseline"])
        save()

    if lab.gateway_path:
        mqtt = await lab.mqtt(subscribe="gatt2mqtt/bridge/lab/peripheral/#")
        await lab.publish_file(TEXT_SET, text, "text-64k")
        for mtu in MTUS:
            for mode in SWEEP[mtu]:
                runs = results[str(mtu)]
                try:
                    runs[f"{mode}"] = await gateway_run(lab, mqtt, text, mtu, mode)
                except LabError as e:
                    runs[f"{mode}"] = {"error": str(e)}
                lab.log(f"gatt2mqtt MTU {mtu}, {mode}:", runs[f"{mode}"])
                save()
        mqtt.publish(TEXT_SET, b"", retain=True)

    lab.log("\n" + table(results))
    failed = [f"MTU {mtu} {k}: {r['error']}" for mtu in MTUS for k, r in results[str(mtu)].items()
              if "error" in r]
    lab.check(not failed, "; ".join(failed))
    lab.check(lab.gateway_path, "no gateway given (lab/run --gateway PATH): baseline only")
