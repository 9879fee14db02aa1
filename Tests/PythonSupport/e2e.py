"""Helpers shared by the Python end-to-end tests (Tests/Web, Tests/HomeAssistant): checks
counted into the closing "N passed, N failed" line, free ports, polling, child processes with
their logs in a work folder, and a private mosquitto."""

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time


def free_port():
    """A TCP port free on the loopback interface now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(probe, timeout, interval=0.5):
    """Calls probe() until it returns something truthy and returns it; None after timeout.
    An exception counts as "not yet" (the service is still starting)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            value = probe()
            if value:
                return value
        except Exception:
            pass
        time.sleep(interval)
    return None


class Run:
    """One test run: its checks, its work folder and the processes it started."""

    def __init__(self, name):
        self.name = name
        self.passed = 0
        self.failed = 0
        self.work = tempfile.mkdtemp(prefix=f"gatt2mqtt-{name}-")
        self.processes = []

    def check(self, what, ok, detail=""):
        """Counts and prints one check; returns ok."""
        if ok:
            self.passed += 1
            print(f"{self.name}: {what}: ok")
        else:
            self.failed += 1
            print(f"{self.name}: {what}: FAILED {detail}"[:2000])
        sys.stdout.flush()
        return ok

    def start(self, name, args):
        """Starts a process with its output in <work>/<name>.log."""
        log = open(os.path.join(self.work, name + ".log"), "w")
        process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
        self.processes.append(process)
        return process

    def tail(self, name, lines=30):
        """The last lines of a file in the work folder ("" when there is none)."""
        try:
            with open(os.path.join(self.work, name)) as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return ""

    def broker(self):
        """Starts a private mosquitto on a free loopback port (no persistence); its port."""
        port = free_port()
        config = os.path.join(self.work, "mosquitto.conf")
        with open(config, "w") as f:
            f.write(f"listener {port} 127.0.0.1\nallow_anonymous true\npersistence false\n")
        self.start("mosquitto", ["mosquitto", "-c", config])
        up = wait_for(lambda: socket.create_connection(("127.0.0.1", port), timeout=1).close() or True, 10)
        self.check("mosquitto starts", up)
        return port

    def finish(self, artifacts=None, keep=(".log", ".png"), failure_logs=()):
        """Stops every process (SIGTERM, then SIGKILL after 10 s), prints the named logs when a
        check failed, copies the work folder's logs and screenshots to artifacts, removes the
        work folder, prints the summary line and exits (1 when a check failed)."""
        for process in self.processes:
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for process in self.processes:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
        if self.failed:
            for name in failure_logs:
                text = self.tail(name, 40)
                if text:
                    print(f"--- last lines of {name}")
                    print(text)
        if artifacts:
            os.makedirs(artifacts, exist_ok=True)
            for folder, _, files in os.walk(self.work):
                for name in files:
                    if name.endswith(keep):
                        shutil.copy(os.path.join(folder, name), os.path.join(artifacts, name))
        shutil.rmtree(self.work, ignore_errors=True)
        print(f"{self.passed} passed, {self.failed} failed")
        sys.exit(1 if self.failed else 0)
