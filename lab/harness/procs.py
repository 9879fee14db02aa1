"""Child processes for the lab: daemons that log to files, and peers that talk JSON lines."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

# Emulation is 10-50x slower than native and CI machines vary: every timeout in the lab is
# multiplied by LAB_TIME_SCALE (default 1).
TIME_SCALE = float(os.environ.get("LAB_TIME_SCALE", "1"))


def scaled(seconds: float) -> float:
    return seconds * TIME_SCALE


class LabError(AssertionError):
    """A check failed; the message is the one-line reason shown in the summary."""


# CPU accounting for the benchmarks (lab/benchmarks): utime + stime from /proc, in clock ticks.
CLK_TCK = os.sysconf("SC_CLK_TCK")


def stat_cpu(stat: str) -> tuple[str, float]:
    """(name, utime + stime in seconds) from the text of a `/proc/<pid>/stat` or
    `/proc/<pid>/task/<tid>/stat` file. The name sits in brackets and may hold spaces and
    brackets itself, so the fields are counted from the last `)`."""
    head, _, rest = stat.rpartition(")")
    fields = rest.split()
    return head.split("(", 1)[1], (int(fields[11]) + int(fields[12])) / CLK_TCK


def cpu_seconds(pid: int, missing: float | None = None) -> float:
    """utime + stime of a process (all its threads), in seconds. When the process is gone:
    `missing` if given, else OSError."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        if missing is None:
            raise
        return missing
    return stat_cpu(stat)[1]


def thread_files(pid: int, name: str) -> list[tuple[int, str]]:
    """(thread id, text) of a file of each of a process's threads (`stat`, `status`); threads
    that ended meanwhile are left out, and all of them when the process is gone."""
    try:
        tasks = list(Path(f"/proc/{pid}/task").iterdir())
    except OSError:
        return []
    out = []
    for task in tasks:
        try:
            out.append((int(task.name), (task / name).read_text()))
        except OSError:
            pass  # the thread ended meanwhile
    return out


def thread_cpu_seconds(pid: int) -> dict[str, float]:
    """utime + stime of a process's threads by thread name (threads of one name summed), in
    seconds; empty when the process is gone. Names are the kernel's 15-character `comm`."""
    out: dict[str, float] = {}
    for _, stat in thread_files(pid, "stat"):
        name, seconds = stat_cpu(stat)
        out[name] = out.get(name, 0.0) + seconds
    return out


def idle_seconds() -> float:
    """The VM's idle CPU time so far, all CPUs together (/proc/stat), in seconds."""
    fields = open("/proc/stat").readline().split()
    return (int(fields[4]) + int(fields[5])) / CLK_TCK


def process_seconds() -> dict[str, float]:
    """CPU seconds so far of every process in the VM, by name (processes of one name summed)."""
    out: dict[str, float] = {}
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            name, seconds = stat_cpu((d / "stat").read_text())
        except OSError:
            continue  # ended meanwhile
        out[name] = out.get(name, 0.0) + seconds
    return out


def thread_switches(pid: int) -> dict[int, tuple[str, int]]:
    """Voluntary context switches of a process's threads, by thread id: (name, count). Each is
    a time the thread went to sleep, so a wake-up later (preemptions, the involuntary ones, are
    left out: they count how busy the machine is, not the thread's wake-ups). By id, so that a
    delta is taken per thread (a worker thread that ended between two snapshots must not take
    its namesakes' counts with it); empty when the process is gone."""
    out: dict[int, tuple[str, int]] = {}
    for tid, status in thread_files(pid, "status"):
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        out[tid] = (fields.get("Name", "?").strip(), int(fields.get("voluntary_ctxt_switches", "0")))
    return out


def pids(name: str) -> list[int]:
    """The processes of that name (`pidof`)."""
    out = subprocess.run(["pidof", name], capture_output=True, text=True).stdout
    return [int(p) for p in out.split()]


class Launched:
    """A process started by the lab's fork server (harness/launcher.py), with the parts of
    asyncio.subprocess.Process that Proc uses."""

    def __init__(self) -> None:
        self.pid = 0
        self.returncode: int | None = None
        self.stdin: asyncio.StreamWriter | None = None
        self.stdout: asyncio.StreamReader | None = None
        self._done = asyncio.Event()

    @classmethod
    async def start(cls, launcher: str, argv: list[str], env: dict, stdin: bool, events: bool,
                    log_fd: int, cwd: str) -> "Launched":
        loop = asyncio.get_running_loop()
        self = cls()
        theirs: list[int] = []
        if stdin:
            r, w = os.pipe()
            theirs.append(r)
            transport, protocol = await loop.connect_write_pipe(
                asyncio.streams.FlowControlMixin, os.fdopen(w, "wb", 0))
            self.stdin = asyncio.StreamWriter(transport, protocol, None, loop)
        else:
            theirs.append(os.open(os.devnull, os.O_RDONLY))
        if events:
            r, w = os.pipe()
            theirs.append(w)
            self.stdout = asyncio.StreamReader(limit=2 ** 20)
            await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(self.stdout),
                                         os.fdopen(r, "rb", 0))
        else:
            theirs.append(os.dup(log_fd))
        theirs.append(os.dup(log_fd))
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(launcher)
            socket.send_fds(sock, [json.dumps({"argv": argv, "env": env, "cwd": cwd}).encode()],
                            theirs)
        finally:
            for fd in theirs:
                os.close(fd)
        sock.setblocking(False)
        reader, _ = await asyncio.open_unix_connection(sock=sock)
        line = await asyncio.wait_for(reader.readline(), scaled(30))
        self.pid = json.loads(line)["pid"]
        # Keep strong references: the event loop holds tasks and stream readers only weakly,
        # and a collected watcher would never report the exit.
        self._sock_reader = reader
        self._watcher = loop.create_task(self._watch(reader))
        return self

    async def _watch(self, reader: asyncio.StreamReader) -> None:
        line = await reader.readline()
        if line:
            self.returncode = json.loads(line)["exit"]
        else:  # the launcher went away: wait for the process to disappear
            while Path(f"/proc/{self.pid}").exists():
                await asyncio.sleep(0.5)
            self.returncode = -255
        self._done.set()

    async def wait(self) -> int:
        await self._done.wait()
        assert self.returncode is not None
        return self.returncode

    def send_signal(self, sig: int) -> None:
        if self.returncode is None:
            os.kill(self.pid, sig)


class Proc:
    """A child process whose stdout/stderr go to a log file. A Python script
    ([sys.executable, "-u", script, ...]) is started by the fork server when LAB_LAUNCHER names
    its socket (harness/launcher.py), else as a normal child."""

    def __init__(self, name: str, argv: list[str], log: Path, env: dict | None = None,
                 stdin: bool = False, events: bool = False, cwd: Path | None = None) -> None:
        self.cwd = str(cwd) if cwd else os.getcwd()
        self.name = name
        self.argv = argv
        self.log_path = log
        self.env = env
        self.want_stdin = stdin
        self.want_events = events
        self.proc: asyncio.subprocess.Process | None = None
        self.history: list[dict] = []
        self._changed = asyncio.Event()
        self._reader: asyncio.Task | None = None
        self.started_at = 0.0
        self._stopped = False

    async def start(self) -> "Proc":
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "ab", buffering=0)
        self._log.write(f"# {time.strftime('%H:%M:%S')} start: {' '.join(self.argv)}\n".encode())
        env = dict(os.environ, **(self.env or {}))
        launcher = os.environ.get("LAB_LAUNCHER", "")
        if (launcher and os.path.exists(launcher) and self.argv[:2] == [sys.executable, "-u"]
                and len(self.argv) > 2):
            try:
                self.proc = await Launched.start(launcher, self.argv[2:], env, self.want_stdin,
                                                 self.want_events, self._log.fileno(), self.cwd)
            except (OSError, ValueError, asyncio.TimeoutError) as e:
                self._log.write(f"# launcher failed ({e!r}); starting normally\n".encode())
                self.proc = None
        if self.proc is None:
            self.proc = await self._spawn(env)
        self.started_at = time.monotonic()
        if self.want_events:
            self._reader = asyncio.get_running_loop().create_task(self._read_events())
        return self

    async def _spawn(self, env: dict):
        return await asyncio.create_subprocess_exec(
            *self.argv,
            stdin=asyncio.subprocess.PIPE if self.want_stdin else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE if self.want_events else self._log,
            stderr=self._log,
            env=env,
            cwd=self.cwd,
            start_new_session=True,
        )

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.returncode is None

    async def _read_events(self) -> None:
        assert self.proc and self.proc.stdout
        events_log = open(self.log_path.with_suffix(".events"), "a")
        while True:
            line = await self.proc.stdout.readline()
            if not line:
                break
            text = line.decode("utf-8", "replace").rstrip("\n")
            events_log.write(f"{time.strftime('%H:%M:%S')} {text}\n")
            events_log.flush()
            try:
                event = json.loads(text)
                if not isinstance(event, dict):
                    raise ValueError
            except ValueError:
                event = {"event": "output", "line": text}
            self.history.append(event)
            self._changed.set()
        try:
            await asyncio.wait_for(self.proc.wait(), 5)
        except asyncio.TimeoutError:
            pass
        self.history.append({"event": "exit"})
        self._changed.set()
        events_log.close()

    # -- events ---------------------------------------------------------------------------------
    def mark(self) -> int:
        """Position in the event history; pass it as `after` to wait for newer events only."""
        return len(self.history)

    def events(self, name: str | None = None, after: int = 0) -> list[dict]:
        return [e for e in self.history[after:] if name is None or e.get("event") == name]

    async def wait(self, name: str, timeout: float = 30, where: Callable[[dict], bool] | None = None,
                   after: int = 0) -> dict:
        """The first event `name` (matching `where`) at or after position `after`."""
        waited = scaled(timeout)
        deadline = time.monotonic() + waited
        i = after
        while True:
            while i < len(self.history):
                e = self.history[i]
                i += 1
                if e.get("event") == name and (where is None or where(e)):
                    return e
                if e.get("event") == "exit":
                    errors = [x.get("message") for x in self.history if x.get("event") == "error"]
                    raise LabError(f"{self.name} exited (status {self.proc.returncode if self.proc else '?'}) "
                                   f"before event {name!r}"
                                   + (f" (peer errors: {errors[:2]})" if errors else "")
                                   + f"; see {self.log_path.name}")
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                errors = [e.get("message") for e in self.history if e.get("event") == "error"]
                raise LabError(f"{self.name}: no {name!r} event within {scaled(timeout):.0f} s"
                               + (f" (peer errors: {errors[:2]})" if errors else ""))
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), remaining)
            except asyncio.TimeoutError:
                pass

    def send(self, cmd: str, **fields: Any) -> None:
        assert self.proc and self.proc.stdin, f"{self.name} takes no commands"
        self.proc.stdin.write((json.dumps({"cmd": cmd, **fields}) + "\n").encode())

    async def wait_log(self, text: str, timeout: float = 10) -> str:
        """The log once it holds `text`. A process writes its log itself, and a line can land a
        moment after what the scenario waited for (an MQTT message sent from another thread), so
        a check of the log polls instead of reading it once. Raises LabError on timeout."""
        waited = scaled(timeout)
        deadline = time.monotonic() + waited
        while True:
            log = self.log_path.read_text(errors="replace")
            if text in log:
                return log
            if time.monotonic() > deadline:
                raise LabError(f"no '{text}' in {self.log_path.name} after {waited:.0f} s")
            await asyncio.sleep(0.2)

    # -- end ------------------------------------------------------------------------------------
    async def stop(self, timeout: float = 10, sig: int = signal.SIGTERM) -> int | None:
        """Ask nicely (close stdin / signal), then kill the whole process group."""
        if self.proc is None:
            return None
        if self._stopped:
            return self.proc.returncode
        self._stopped = True
        if self.proc.returncode is None:
            try:
                if self.want_stdin and self.proc.stdin and not self.proc.stdin.is_closing():
                    self.proc.stdin.close()
                else:
                    self.proc.send_signal(sig)
                await asyncio.wait_for(self.proc.wait(), scaled(timeout))
            except (asyncio.TimeoutError, ProcessLookupError):
                pass
        if self.proc.returncode is None:
            try:
                self.proc.send_signal(sig)
                await asyncio.wait_for(self.proc.wait(), scaled(timeout))
            except (asyncio.TimeoutError, ProcessLookupError):
                pass
        if self.proc.returncode is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            try:
                await asyncio.wait_for(self.proc.wait(), scaled(15))
            except asyncio.TimeoutError:
                self._log.write(b"# did not end after SIGKILL\n")
        if self._reader:
            try:
                await asyncio.wait_for(self._reader, 5)
            except (asyncio.TimeoutError, asyncio.CancelledError):
                self._reader.cancel()
        self._log.write(f"# {time.strftime('%H:%M:%S')} exit status {self.proc.returncode}\n".encode())
        self._log.close()
        return self.proc.returncode
