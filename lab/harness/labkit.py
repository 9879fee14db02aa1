"""What a scenario gets: `async def run(lab)` receives a `Lab`.

    lab.dir            this scenario's results folder (kept when the run fails)
    lab.log(...)       a line in <scenario>/scenario.log
    lab.adapter        "hci0": bluetoothd's controller (the gateway's); a scenario that sets
                       `CONTROLLERS = 2` also has "hci1" (the runner brings the air up again)
    lab.broker         ("127.0.0.1", 1883): the mosquitto broker in the VM (fresh per scenario)
    lab.gateway_path   the gatt2mqtt binary given with `lab/run --gateway PATH`, or None
    lab.address()      a fresh random static address
    await lab.peer(kind, ...)      start a zoo peer (lab/zoo/<kind>.py) on its own controller
    await lab.process(name, argv)  start any other process, logged, stopped at the end
    await lab.gateway(config, ...) start the gateway with a config file
    await lab.mqtt()               an MQTT client on the lab broker (harness/mqtt.py)
    await lab.find(address)        bleak: the BLEDevice for an address, via bluetoothd
    async with lab.connect(device) as client:   a connected BleakClient
    lab.check(cond, msg)           fail the scenario with msg unless cond
Everything started through `lab` is stopped when the scenario ends, pass or fail.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

from procs import LabError, Proc, scaled

LAB_DIR = Path(__file__).resolve().parent.parent
ZOO = LAB_DIR / "zoo"
sys.path.insert(0, str(ZOO))

import uuids  # noqa: E402,F401  (re-exported for scenarios: from labkit import uuids)


class Lab:
    def __init__(self, name: str, directory: Path, gateway: str | None) -> None:
        self.name = name
        self.dir = directory
        self.gateway_path = gateway
        self.adapter = os.environ.get("LAB_ADAPTER", "hci0")
        self.broker = ("127.0.0.1", int(os.environ.get("LAB_BROKER_PORT", "1883")))
        self.python = sys.executable
        self._procs: list[Proc] = []
        self._mqtt: list[Any] = []
        self._log = open(self.dir / "scenario.log", "a")
        self._addresses: set[str] = set()
        self._t0 = time.monotonic()

    # -- helpers -------------------------------------------------------------------------------
    def log(self, *parts: Any) -> None:
        self._log.write(f"{time.strftime('%H:%M:%S')} +{time.monotonic() - self._t0:7.2f}s "
                        + " ".join(str(p) for p in parts) + "\n")
        self._log.flush()

    @staticmethod
    def timeout(seconds: float) -> float:
        """A timeout in seconds, scaled by LAB_TIME_SCALE."""
        return scaled(seconds)

    @staticmethod
    def check(cond: Any, message: str) -> None:
        if not cond:
            raise LabError(message)

    def address(self) -> str:
        """A random static address (two top bits set), never handed out twice in a run."""
        while True:
            b = [random.randrange(256) for _ in range(6)]
            b[0] |= 0xC0
            a = ":".join(f"{x:02X}" for x in b)
            if a not in self._addresses:
                self._addresses.add(a)
                return a

    # -- processes -----------------------------------------------------------------------------
    async def process(self, name: str, argv: list[str], env: dict | None = None,
                      stdin: bool = False, events: bool = False) -> Proc:
        p = Proc(name, argv, self.dir / f"{name}.log", env=env, stdin=stdin, events=events,
                 cwd=self.dir)
        self._procs.append(p)
        await p.start()
        self.log("started", name, "pid", p.pid, " ".join(argv))
        return p

    async def peer(self, kind: str, *args: str, name: str | None = None, address: str | None = None,
                   ready_timeout: float = 90, **options: Any) -> Proc:
        """Start lab/zoo/<kind>.py. Keyword options become flags (hr_rate=5 -> --hr-rate 5).
        Returns once the peer reports `ready`; `.address` holds its address."""
        argv = [self.python, "-u", str(ZOO / f"{kind}.py")]
        if kind != "bluez_transfer_server":
            address = address or self.address()
            argv += ["--address", address]
        for k, v in options.items():
            flag = "--" + k.replace("_", "-")
            if v is True:
                argv.append(flag)
            elif v is not False and v is not None:
                argv += [flag, str(v)]
        argv += list(args)
        n = sum(1 for p in self._procs if p.name.startswith(f"peer-{kind}"))
        p = await self.process(name or f"peer-{kind}{n or ''}", argv, stdin=True, events=True)
        p.address = address  # type: ignore[attr-defined]
        await p.wait("ready" if kind != "bluez_transfer_server" else "registered", ready_timeout)
        self.log(p.name, "ready", address or "")
        return p

    def bluez_gateway_config(self, connect: list[str] | None = None, extra: str = "") -> str:
        """The gateway configuration most scenarios start from: the lab's broker, gateway id
        `lab`, the BlueZ radio on the lab's adapter, connecting to `connect` (addresses) when
        given; `extra` is appended below `bluetooth:` (its keys indented two spaces; a key at
        the margin after them starts another section, `log:` for example)."""
        text = f"""
mqtt:
  host: 127.0.0.1
  port: 1883
gateway:
  id: lab
bluetooth:
  radio: bluez
  adapter: {self.adapter}
"""
        if connect:
            text += "  connect:\n    addresses: [" + ", ".join(f'"{a}"' for a in connect) + "]\n"
        return text + extra

    def peripheral_gateway_config(self, extra: str = "") -> str:
        """``bluez_gateway_config`` for the peripheral role: no scan at start, `peripheral:`
        enabled; `extra` is appended below `peripheral:` (its keys indented two spaces)."""
        return self.bluez_gateway_config(extra="  scan_on_start: false\nperipheral:\n  enabled: true\n" + extra)

    async def gateway(self, config: str, *args: str, env: dict | None = None,
                      config_name: str = "gatt2mqtt.yaml", user: str | None = None,
                      name: str = "gateway") -> Proc:
        """Start the gateway binary (lab/run --gateway PATH) with `config` written to a file in
        this scenario's folder: `gatt2mqtt --config <file> <args>`, as `user` (with that user's
        groups, through setpriv) when given. Its output goes to `<name>.log` (gateway.log)."""
        if not self.gateway_path:
            raise LabError("this scenario needs the gateway: run lab/run --gateway PATH")
        path = self.dir / config_name
        path.write_text(config)
        argv = [self.gateway_path, "--config", str(path), *args]
        if user:
            argv = ["setpriv", f"--reuid={user}", f"--regid={user}", "--init-groups", "--", *argv]
        return await self.process(name, argv, env=env)

    async def publish_file(self, topic: str, payload: bytes, name: str, retain: bool = True) -> None:
        """Publish a (possibly large) payload with mosquitto_pub, a short-lived client of its own
        (QoS 1), so a big payload never waits on a scenario's MQTT client."""
        path = self.dir / f"{name}.payload"
        path.write_bytes(payload)
        argv = ["mosquitto_pub", "-h", "127.0.0.1", "-p", "1883", "-q", "1", "-t", topic, "-f", str(path)]
        pub = await self.process(f"pub-{name}", argv + (["-r"] if retain else []))
        status = await pub.proc.wait()
        self.check(status == 0, f"mosquitto_pub exited with {status}")

    async def mqtt(self, client_id: str | None = None, subscribe: str | list[str] | None = None):
        from mqtt import Mqtt

        cid = client_id or f"lab-{self.name}-{len(self._mqtt)}"
        client = await Mqtt(*self.broker, cid, self.dir / f"mqtt-{cid}.log").connect()
        self._mqtt.append(client)
        for topic in [subscribe] if isinstance(subscribe, str) else (subscribe or []):
            client.subscribe(topic)
        return client

    async def find(self, address: str, timeout: float = 60):
        """bleak (through bluetoothd): scan until `address` shows up; its BLEDevice."""
        return (await self.find_adv(address, timeout))[0]

    async def find_adv(self, address: str, timeout: float = 60):
        """bleak (through bluetoothd): scan until `address` shows up; (BLEDevice,
        AdvertisementData)."""
        from bleak import BleakScanner

        seen = {}

        def match(device, adv):
            if device.address.upper() == address.upper():
                seen["adv"] = adv
                return True
            return False

        device = await BleakScanner.find_device_by_filter(match, timeout=scaled(timeout))
        if device is None:
            raise LabError(f"bleak did not find {address} within {scaled(timeout):.0f} s")
        self.log("found", address, seen["adv"])
        return device, seen["adv"]

    @contextlib.asynccontextmanager
    async def connect(self, device, attempts: int = 3, timeout: float = 60, **kwargs):
        """`async with lab.connect(device) as client:` a connected BleakClient.

        bleak (3.1) reads the Connect reply on one D-Bus connection and the device's
        `Connected` property on another; when the property signal lags (it does under
        emulation), it reports "failed to discover services, device disconnected" although
        bluetoothd is connected and resolved. That is the test client's race, not the lab's or
        the gateway's: retried (and logged) up to `attempts` times."""
        from bleak import BleakClient
        from bleak.exc import BleakError

        for attempt in range(1, attempts + 1):
            client = BleakClient(device, timeout=scaled(timeout), **kwargs)
            try:
                await client.connect()
                break
            except (BleakError, asyncio.TimeoutError) as e:
                self.log(f"bleak connect to {device.address}, attempt {attempt}: {e!r}")
                try:
                    await client.disconnect()
                except Exception:  # noqa: BLE001
                    pass
                if attempt == attempts:
                    raise LabError(f"bleak could not connect to {device.address} "
                                   f"in {attempts} attempts: {e}") from e
                await asyncio.sleep(2)
        try:
            yield client
        finally:
            await client.disconnect()

    # -- end -------------------------------------------------------------------------------------
    async def close(self) -> None:
        for client in self._mqtt:
            try:
                client.close()
            except Exception as e:  # noqa: BLE001
                self.log("mqtt close:", e)
        results = await asyncio.gather(*(p.stop() for p in reversed(self._procs)),
                                       return_exceptions=True)
        for p, r in zip(reversed(self._procs), results):
            self.log("stopped", p.name, "status", r)
        self._log.close()
