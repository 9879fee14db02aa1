"""A fork server for the lab's Python processes (peers, scenarios).

Under emulation, starting Python and importing Bumble or bleak takes 5-15 s: most of a
scenario's time. The launcher imports them once; each start is then a fork that runs the
script (runpy) in the child. Started by the runner after bring-up; used by procs.Proc for any
`python -u script.py ...` when LAB_LAUNCHER names its socket (else processes start normally).

Protocol (one Unix stream connection per process): the client sends one JSON line
{"argv": [script, args...], "env": {...}, "cwd": "..."} together with three file descriptors
(SCM_RIGHTS: stdin, stdout, stderr); the launcher answers {"pid": N}, and {"exit": STATUS}
when that child ends (STATUS as in subprocess: negative = killed by that signal). The child
runs in its own session (setsid), so its process group can be signalled. {"kill_token": T}
(no descriptors) kills every live child started with LAB_RUN_TOKEN=T in its environment.
"""

import json
import os
import random
import runpy
import selectors
import signal
import socket
import sys
from pathlib import Path

HARNESS = Path(__file__).resolve().parent
sys.path[:0] = [str(HARNESS), str(HARNESS.parent / "zoo")]

# The expensive imports, done once. Nothing here may start a thread, an event loop or a
# connection: every child inherits this process as it is.
import asyncio  # noqa: E402,F401
import bleak  # noqa: E402,F401
import bleak.backends.bluezdbus.client  # noqa: E402,F401
import bleak.backends.bluezdbus.scanner  # noqa: E402,F401
import bumble.device  # noqa: E402,F401
import bumble.gatt  # noqa: E402,F401
import bumble.profiles.gap  # noqa: E402,F401
import bumble.transport  # noqa: E402,F401
import bumble.transport.unix  # noqa: E402,F401
import dbus_fast.aio  # noqa: E402,F401
import paho.mqtt.client  # noqa: E402,F401

import common  # noqa: E402,F401  (zoo)
import labkit  # noqa: E402,F401
import mqtt  # noqa: E402,F401
import procs  # noqa: E402,F401


def child(request: dict, fds: list[int], close: list) -> None:
    """In the forked child: become the requested process, never return."""
    code = 1
    try:
        signal.set_wakeup_fd(-1)
        for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, signal.SIG_DFL)
        for c in close:
            try:
                c.close() if hasattr(c, "close") else os.close(c)
            except OSError:
                pass
        os.setsid()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(request.get("cwd") or "/")
        random.seed()
        sys.argv = list(request["argv"])
        sys.stdin = open(0, "r", closefd=False)
        sys.stdout = open(1, "w", buffering=1, closefd=False)
        sys.stderr = open(2, "w", buffering=1, closefd=False)
        try:
            runpy.run_path(sys.argv[0], run_name="__main__")
            code = 0
        except SystemExit as e:
            if e.code is None or isinstance(e.code, int):
                code = e.code or 0
            else:
                print(e.code, file=sys.stderr)
                code = 1
    except BaseException:  # noqa: BLE001 - report, exit 1
        import traceback

        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def main(path: str) -> None:
    if os.path.exists(path):
        os.unlink(path)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(16)
    sel = selectors.DefaultSelector()
    sel.register(listener, selectors.EVENT_READ)
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, lambda *_: None)
    sel.register(wake_r, selectors.EVENT_READ)
    children: dict[int, tuple[socket.socket, str | None]] = {}
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    print(f"launcher ready on {path}", flush=True)

    while not stop:
        for key, _ in sel.select(timeout=1):
            if key.fileobj is listener:
                conn, _ = listener.accept()
                try:
                    msg, fds, _, _ = socket.recv_fds(conn, 65536, 3)
                    request = json.loads(msg.decode())
                    if "kill_token" in request:  # end what a killed scenario left behind
                        killed = [pid for pid, (_, token) in children.items()
                                  if token == request["kill_token"]]
                        for pid in killed:
                            try:
                                os.killpg(pid, signal.SIGKILL)
                            except ProcessLookupError:
                                pass
                        conn.sendall((json.dumps({"killed": killed}) + "\n").encode())
                        conn.close()
                        continue
                    if len(fds) != 3:
                        raise ValueError(f"expected 3 descriptors, got {len(fds)}")
                except (OSError, ValueError) as e:
                    print(f"bad request: {e}", flush=True)
                    conn.close()
                    continue
                sys.stdout.flush()
                sys.stderr.flush()
                pid = os.fork()
                if pid == 0:
                    child(request, fds, [listener, conn, sel, wake_r, wake_w,
                                         *(c for c, _ in children.values())])
                for fd in fds:
                    os.close(fd)
                children[pid] = (conn, request["env"].get("LAB_RUN_TOKEN"))
                conn.sendall((json.dumps({"pid": pid}) + "\n").encode())
                print(f"started {pid}: {' '.join(request['argv'])[:200]}", flush=True)
            elif key.fileobj == wake_r:
                os.read(wake_r, 512)
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
            conn, _ = children.pop(pid, (None, None))
            print(f"exited {pid}: {code}", flush=True)
            if conn:
                try:
                    conn.sendall((json.dumps({"exit": code}) + "\n").encode())
                except OSError:
                    pass
                conn.close()


if __name__ == "__main__":
    main(sys.argv[1])
