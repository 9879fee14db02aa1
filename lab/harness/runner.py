"""The lab inside the VM: bring up the virtual air, run the scenarios, write the summary.

Started by lab/guest/boot.sh, which lab/run hands to vng. Reads RESULTS/lab-args.json (written by
lab/run), prints one line per scenario as it finishes, writes RESULTS/summary.json.
"""

from __future__ import annotations

import argparse
import ast
import asyncio
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bluez import BlueZ  # noqa: E402
from procs import Proc, scaled  # noqa: E402

LAB_DIR = Path(__file__).resolve().parent.parent
HARNESS = LAB_DIR / "harness"
BLUETOOTHD = "/usr/libexec/bluetooth/bluetoothd"


def uptime() -> float:
    return float(Path("/proc/uptime").read_text().split()[0])


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


class Runner:
    def __init__(self, results: Path, cfg: dict) -> None:
        self.results = results
        self.cfg = cfg
        self.controllers = int(cfg.get("controllers", 1))
        self.btvirt_path = cfg.get("btvirt") or "/usr/bin/btvirt"
        self.logf = open(results / "lab.log", "a")
        self.btvirt: Proc | None = None
        self.bluetoothd: Proc | None = None
        self.launcher: Proc | None = None
        self.air_s = 0.0
        self.bluez = BlueZ()

    def log(self, *parts) -> None:
        self.logf.write(f"{time.strftime('%H:%M:%S')} [{uptime():8.2f}] " + " ".join(map(str, parts)) + "\n")
        self.logf.flush()

    def sh(self, *argv: str, timeout: float = 60, check: bool = True) -> str:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=scaled(timeout))
        self.log("$", " ".join(argv), "->", r.returncode, (r.stdout + r.stderr).strip()[-500:])
        if check and r.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)} failed ({r.returncode}): {r.stderr.strip()[-300:]}")
        return r.stdout

    # -- bring-up -------------------------------------------------------------------------------
    async def bring_up(self) -> None:
        t0 = time.monotonic()
        self.sh("modprobe", "bluetooth")
        self.sh("modprobe", "hci_vhci")
        # Under emulation bluetoothd reads its ATT socket 10-50x slower than on hardware, while
        # btvirt delivers a peer's notifications with no air time at all: with the default
        # socket receive buffer (~200 KB, ~400 small notifications) a burst overflows it and the
        # kernel drops notifications before bluetoothd sees them. A larger default buffer
        # (taken by every socket created after this, bluetoothd's included) removes that
        # artefact of emulation.
        for key in ("rmem_default", "rmem_max"):
            Path(f"/proc/sys/net/core/{key}").write_text("8388608\n")
        # bluetoothd's storage: writable as on a real system (the VM's root is the read-only
        # host), empty at the start of every run.
        Path("/var/lib/bluetooth").mkdir(parents=True, exist_ok=True)
        self.sh("mount", "-t", "tmpfs", "-o", "mode=0700", "lab-bluetooth", "/var/lib/bluetooth")
        Path("/run/dbus").mkdir(parents=True, exist_ok=True)
        if not Path("/run/dbus/system_bus_socket").exists():
            self.sh("dbus-daemon", "--system", "--fork")
        await self.start_air()
        self.air_s = time.monotonic() - t0
        # After the air is up: the launcher's imports would starve btvirt, and the kernel gives
        # each controller set-up command only 2 s.
        await self.start_launcher()

    def mgmt_indexes(self) -> int:
        out = self.sh("btmgmt", "info", timeout=20, check=False)
        m = re.search(r"Index list with (\d+) item", out)
        return int(m.group(1)) if m else 0

    async def start_btvirt(self) -> None:
        """btvirt -L -l<N> -s: N LE controllers for the kernel (hci0.. for bluetoothd), plus an LE
        server socket on which every client (a zoo peer) gets its own fresh controller. The
        kernel's controller set-up times out after 2 s per command; under a loaded host that can
        fail, so a controller that does not reach mgmt in time means: start btvirt again."""
        for attempt in range(1, 4):
            for p in Path("/tmp").glob("bt-server-*"):
                p.unlink()
            self.btvirt = Proc("btvirt", [self.btvirt_path, "-L", f"-l{self.controllers}", "-s"],
                               self.results / "btvirt.log")
            await self.btvirt.start()
            deadline = time.monotonic() + scaled(30)
            while time.monotonic() < deadline:
                if (self.mgmt_indexes() >= self.controllers
                        and Path("/tmp/bt-server-le").exists()):
                    self.log("btvirt ready, attempt", attempt)
                    return
                if not self.btvirt.running:
                    break
                await asyncio.sleep(0.5)
            self.log("btvirt not ready (attempt", attempt, "); dmesg:",
                     self.sh("dmesg", check=False)[-1500:])
            await self.btvirt.stop()
            await asyncio.sleep(2)
        raise RuntimeError(f"btvirt: {self.controllers} controller(s) did not come up in 3 attempts")

    async def start_bluetoothd(self) -> None:
        for attempt in range(1, 3):
            self.bluetoothd = Proc("bluetoothd", [BLUETOOTHD, "-n", "-d"],
                                   self.results / "bluetoothd.log")
            await self.bluetoothd.start()
            deadline = time.monotonic() + scaled(45)
            while time.monotonic() < deadline and self.bluetoothd.running:
                try:
                    if self.bluez.bus is None:
                        await self.bluez.connect()
                    adapters = await self.bluez.adapters()
                    powered = [p for p, a in adapters.items() if a.get("Powered")]
                    if len(powered) >= self.controllers:
                        self.log("bluetoothd ready:", sorted(adapters))
                        return
                except Exception as e:  # noqa: BLE001 - not up yet
                    self.log("waiting for bluetoothd:", repr(e)[:200])
                await asyncio.sleep(0.5)
            self.log("bluetoothd not ready, attempt", attempt)
            await self.bluetoothd.stop()
        raise RuntimeError("bluetoothd did not bring up its adapters")

    async def start_launcher(self) -> None:
        """The fork server (harness/launcher.py): Python processes start in a fraction of the
        time. Without it (LAB_NO_LAUNCHER=1, or if it fails) they start normally."""
        if os.environ.get("LAB_NO_LAUNCHER"):
            return
        path = "/run/lab-launcher.sock"
        self.launcher = Proc("launcher", [sys.executable, "-u", str(HARNESS / "launcher.py"), path],
                             self.results / "launcher.log")
        await self.launcher.start()
        deadline = time.monotonic() + scaled(90)
        while time.monotonic() < deadline and self.launcher.running:
            if Path(path).exists():
                os.environ["LAB_LAUNCHER"] = path
                self.log("launcher ready")
                return
            await asyncio.sleep(0.3)
        self.log("launcher did not start; processes start normally")
        await self.launcher.stop()

    async def start_air(self) -> None:
        await self.start_btvirt()  # before bluetoothd: started earlier, it misses hci0
        await self.start_bluetoothd()

    async def stop_air(self) -> None:
        if self.bluetoothd:
            await self.bluetoothd.stop()
        if self.btvirt:
            await self.btvirt.stop()
        self.bluez.close()

    async def healthy(self) -> str:
        """'' when btvirt, bluetoothd and the adapters are fine, else what is wrong."""
        if not (self.btvirt and self.btvirt.running):
            return "btvirt died"
        if not (self.bluetoothd and self.bluetoothd.running):
            return "bluetoothd died"
        try:
            adapters = await self.bluez.adapters()
        except Exception as e:  # noqa: BLE001
            return f"bluetoothd does not answer: {e}"
        powered = [p for p, a in adapters.items() if a.get("Powered")]
        if len(powered) < self.controllers:
            return f"adapters missing or unpowered: {sorted(adapters)}"
        return ""

    # -- per scenario ----------------------------------------------------------------------------
    # Where the broker writes its log during a scenario: the guest's own memory (/run is a
    # tmpfs in the VM). `log_type all` writes and flushes four lines per QoS 1 message; into
    # the results folder (a 9p share of the host) each flush is a round trip to QEMU, and the
    # broker, single-threaded, then read the gateway's publications at 15-20 a second (a
    # sensor at 50/s outran it: gateway-notify-backlog failed 3 runs in 4 on a slow host).
    # Copied into the scenario's folder when the broker stops.
    BROKER_LOGS = Path("/run/lab-broker")

    def broker_log(self, directory: Path) -> Path:
        return self.BROKER_LOGS / f"{directory.name}.log"

    async def start_broker(self, directory: Path) -> Proc:
        conf = directory / "mosquitto.conf"
        self.BROKER_LOGS.mkdir(parents=True, exist_ok=True)
        conf.write_text(
            "listener 1883 127.0.0.1\nallow_anonymous true\npersistence false\nuser root\n"
            f"log_dest file {self.broker_log(directory)}\nlog_type all\n"
            "connection_messages true\nlog_timestamp_format %H:%M:%S\n")
        broker = Proc("mosquitto", ["mosquitto", "-c", str(conf)], directory / "mosquitto.out")
        await broker.start()
        deadline = time.monotonic() + scaled(30)
        while time.monotonic() < deadline:
            try:
                _, w = await asyncio.open_connection("127.0.0.1", 1883)
                w.close()
                return broker
            except OSError:
                await asyncio.sleep(0.2)
        raise RuntimeError("mosquitto did not open 127.0.0.1:1883")

    def keep_broker_log(self, directory: Path) -> None:
        """Moves the broker's log from the guest's memory into the scenario's folder."""
        log = self.broker_log(directory)
        try:
            shutil.copyfile(log, directory / "mosquitto.log")
            log.unlink()
        except OSError as e:
            self.log("broker log:", e)

    def kill_leftovers(self, token: str) -> None:
        """Kill what a killed scenario left behind: processes carrying its LAB_RUN_TOKEN
        (forked by the launcher: ask it; started normally: their environment says so)."""
        launcher = os.environ.get("LAB_LAUNCHER")
        if launcher and os.path.exists(launcher):
            try:
                with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                    sock.settimeout(10)
                    sock.connect(launcher)
                    socket.send_fds(sock, [json.dumps({"kill_token": token}).encode()], [])
                    answer = sock.makefile().readline()
                if json.loads(answer or "{}").get("killed"):
                    self.log("launcher killed leftovers:", answer.strip())
            except (OSError, ValueError) as e:
                self.log("launcher kill_token:", repr(e))
        mark = f"LAB_RUN_TOKEN={token}".encode()
        for d in Path("/proc").iterdir():
            if not d.name.isdigit() or int(d.name) == os.getpid():
                continue
            try:
                if mark in (d / "environ").read_bytes().split(b"\0"):
                    os.kill(int(d.name), signal.SIGKILL)
                    self.log("killed leftover", d.name, (d / "cmdline").read_bytes()[:200])
            except (OSError, ProcessLookupError):
                pass

    @staticmethod
    def meta(path: Path) -> dict:
        """ROWS / TIMEOUT / DESCRIPTION of a scenario file, read without importing it."""
        tree = ast.parse(path.read_text())
        out = {"ROWS": "?", "TIMEOUT": 180}
        for node in tree.body:
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                try:
                    out[node.targets[0].id] = ast.literal_eval(node.value)
                except ValueError:
                    pass
        if isinstance(out["ROWS"], (list, tuple)):
            out["ROWS"] = " ".join(out["ROWS"])
        return out

    async def run_scenario(self, path: Path, directory: Path) -> dict:
        name = path.stem
        info = self.meta(path)
        directory.mkdir(parents=True, exist_ok=True)
        t0 = time.monotonic()
        offsets = {n: (self.results / f"{n}.log").stat().st_size
                   for n in ("bluetoothd", "btvirt") if (self.results / f"{n}.log").exists()}
        self.log("scenario", name, "start")
        btmon = Proc("btmon", ["btmon", "-w", str(directory / "hci.btsnoop")], directory / "btmon.out")
        await btmon.start()
        broker = None
        result = {"status": "failed", "message": ""}
        proc = None
        try:
            await self.bluez.remove_all_devices()
            broker = await self.start_broker(directory)
            argv = [sys.executable, "-u", str(HARNESS / "scenario_main.py"),
                    "--file", str(path), "--dir", str(directory)]
            if self.cfg.get("gateway"):
                argv += ["--gateway", self.cfg["gateway"]]
            token = f"{name}-{time.time_ns()}"
            proc = Proc("scenario", argv, directory / "scenario.out", env={"LAB_RUN_TOKEN": token})
            await proc.start()
            limit = scaled(float(info.get("TIMEOUT", 180))) + scaled(90)
            try:
                await asyncio.wait_for(proc.proc.wait(), limit)
            except asyncio.TimeoutError:
                result["message"] = f"scenario process hung; killed after {limit:.0f} s"
            rfile = directory / "result.json"
            if rfile.exists():
                result = json.loads(rfile.read_text())
            elif not result["message"]:
                result["message"] = f"scenario process ended ({proc.proc.returncode}) without a result; see scenario.out"
        except Exception as e:  # noqa: BLE001 - the lab itself failed
            result = {"status": "failed", "message": f"lab: {type(e).__name__}: {e}"}
        finally:
            if proc:
                await proc.stop(timeout=5, sig=signal.SIGKILL)
                self.kill_leftovers(proc.env["LAB_RUN_TOKEN"])
            if broker:
                await broker.stop()
                self.keep_broker_log(directory)
            problem = await self.healthy()
            if problem and info.get("DISRUPTS_AIR"):
                # The scenario restarts daemons on purpose (e.g. bluetoothd): bring the lab's
                # own air back for the next scenario without blaming this one.
                self.log("after", name, "(DISRUPTS_AIR):", problem, "- restarting the air")
                try:
                    await self.stop_air()
                    await self.start_air()
                except Exception as e:  # noqa: BLE001
                    self.log("air restart failed:", e)
                    result = {"status": "failed", "message": f"lab: air restart failed: {e}"}
            elif problem:
                self.log("unhealthy after", name, ":", problem, "- restarting the air")
                if result["status"] == "passed" or not result["message"]:
                    result = {"status": "failed", "message": f"lab: {problem} during the scenario"}
                else:
                    result["message"] += f" (and {problem})"
                try:
                    await self.stop_air()
                    await self.start_air()
                except Exception as e:  # noqa: BLE001
                    self.log("air restart failed:", e)
            try:
                await self.bluez.remove_all_devices()
            except Exception as e:  # noqa: BLE001
                self.log("remove devices:", e)
            await btmon.stop(timeout=5, sig=signal.SIGINT)
        result["seconds"] = round(time.monotonic() - t0, 1)
        result["rows"] = info.get("ROWS", "?")
        result["name"] = name
        if result["status"] != "passed":
            for n, off in offsets.items():  # the daemons' log lines from this scenario
                with open(self.results / f"{n}.log", "rb") as f:
                    f.seek(off)
                    (directory / f"{n}.log").write_bytes(f.read())
            if (directory / "hci.btsnoop").exists():
                subprocess.run(f"btmon -r {directory / 'hci.btsnoop'} > {directory / 'hci.txt'} 2>&1",
                               shell=True, timeout=scaled(120))
        self.log("scenario", name, result)
        return result


def controllers_of(path: Path | None, default: int) -> int:
    """The kernel controllers a scenario asks for (`CONTROLLERS = N`; hci0, hci1, …), at least
    the run's own count."""
    if path is None:
        return default
    try:
        return max(default, int(Runner.meta(path).get("CONTROLLERS", default)))
    except (SyntaxError, TypeError, ValueError):
        return default  # the scenario itself reports what is wrong with it when it runs


def resolve(cfg: dict) -> list[tuple[str, Path | None]]:
    sdir = Path(cfg.get("scenario_dir") or LAB_DIR / "scenarios")
    available = {p.stem: p for p in sorted(sdir.glob("*.py")) if not p.name.startswith("_")}
    wanted = cfg.get("scenarios") or []
    if not wanted:
        return list(available.items())
    out: list[tuple[str, Path | None]] = []
    for w in wanted:
        matches = [n for n in available if n == w] or [n for n in available if re.fullmatch(w.replace("*", ".*"), n)]
        if not matches:
            out.append((w, None))
        out += [(n, available[n]) for n in matches if (n, available[n]) not in out]
    return out


async def main(results: Path) -> int:
    cfg = json.loads((results / "lab-args.json").read_text())
    runner = Runner(results, cfg)
    summary: dict = {"scenarios": [], "boot_s": round(uptime(), 1)}
    t_boot = uptime()
    runner.log("guest up; config", cfg, "knobs",
               {k: v for k, v in os.environ.items() if k in ("LAB_TIME_SCALE", "LAB_NO_LAUNCHER", "LAB_PEER_LOG", "LAB_PERF", "LAB_STRACE", "LAB_SCAN_METHOD", "LAB_BATCH_WINDOW", "LAB_NOTIFY_METHOD")})
    try:
        t0 = time.monotonic()
        await runner.bring_up()
        bring_up = time.monotonic() - t0
        summary["bringup_s"] = round(bring_up, 1)
        summary["ready_uptime_s"] = round(uptime(), 1)
        btvirt_kind = cfg.get("btvirt_kind", "?")
        say(f"lab: VM booted in {t_boot:.1f} s; bring-up {bring_up:.1f} s: D-Bus, btvirt [{btvirt_kind}] "
            f"with {runner.controllers} kernel controller(s), bluetoothd "
            f"{' '.join(p.rsplit('/', 1)[-1] for p in sorted(await runner.bluez.adapters()))} "
            f"in {runner.air_s:.1f} s, then the launcher in {bring_up - runner.air_s:.1f} s")
    except Exception as e:  # noqa: BLE001
        runner.log("bring-up failed:", repr(e))
        say(f"lab: bring-up failed: {e}")
        summary["scenarios"].append({"name": "lab-bring-up", "rows": "LAB", "status": "failed",
                                     "seconds": 0.0, "message": f"bring-up: {e}"})
        (results / "summary.json").write_text(json.dumps(summary, indent=1))
        return 1

    base_controllers = runner.controllers
    # Scenarios that need more kernel controllers (CONTROLLERS = N) run last, so the air is
    # brought up again at most once.
    selected = sorted(resolve(cfg), key=lambda s: controllers_of(s[1], base_controllers))
    for i, (name, path) in enumerate(selected, 1):
        if path is None:
            r = {"name": name, "rows": "?", "status": "failed", "seconds": 0.0,
                 "message": "no such scenario"}
        else:
            wanted = controllers_of(path, base_controllers)
            r = None
            if wanted != runner.controllers:
                runner.log("scenario", name, "needs", wanted, "controller(s): restarting the air")
                try:
                    await runner.stop_air()
                    runner.controllers = wanted
                    await runner.start_air()
                except Exception as e:  # noqa: BLE001 - the lab itself failed
                    runner.controllers = 0  # the next scenario brings the air up again
                    r = {"name": name, "rows": "?",
                         "status": "failed", "seconds": 0.0,
                         "message": f"lab: bringing up {wanted} controllers failed: {e}"}
            if r is None:
                r = await runner.run_scenario(path, results / name)
        summary["scenarios"].append(r)
        # Progress only: lab/run prints the summary lines from summary.json once the VM is down
        # (the console may lose the last bytes written before the VM powers off).
        say(f"lab: [{i}/{len(selected)}] {r['name']} {r['status']} ({r['seconds']:.1f} s)")
        (results / "summary.json").write_text(json.dumps(summary, indent=1))
    await runner.stop_air()
    if runner.launcher:
        await runner.launcher.stop()
    summary["total_guest_s"] = round(uptime(), 1)
    (results / "summary.json").write_text(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--results", required=True)
    a = ap.parse_args()
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    sys.exit(asyncio.run(main(Path(a.results))))
