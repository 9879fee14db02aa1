"""Shared plumbing of the Bumble peer zoo.

Every peer is its own process with its own virtual controller: by default it connects to
btvirt's LE server socket (`unix:/tmp/bt-server-le`), and btvirt creates a fresh LE controller
for each connection, on the same virtual air as the kernel's controllers (hci0, used by
bluetoothd). bluetoothd never sees these controllers, so nothing else drives them.

Protocol with the harness (or a person):
  stdout: one JSON object per line, {"event": NAME, ...} (flushed at once);
  stdin:  one JSON object per line, {"cmd": NAME, ...}; EOF or {"cmd":"quit"} ends the peer;
  stderr: Bumble's log.
On exit (EOF, quit, SIGTERM) a peer disconnects its links first, so that the other side sees
a normal disconnection.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import signal
import sys
import time
from typing import Any, Awaitable, Callable

from bumble import hci
from bumble.device import Connection, Device
from bumble.transport import open_transport

LEGACY_ADV_MAX = 31
DEFAULT_TRANSPORT = os.environ.get("LAB_PEER_TRANSPORT", "unix:/tmp/bt-server-le")

# AD types (Core Supplement, part A)
AD_FLAGS = 0x01
AD_INCOMPLETE_16 = 0x02
AD_COMPLETE_16 = 0x03
AD_COMPLETE_128 = 0x07
AD_SHORT_NAME = 0x08
AD_COMPLETE_NAME = 0x09
AD_TX_POWER = 0x0A
AD_SERVICE_DATA_16 = 0x16
AD_MANUFACTURER = 0xFF
FLAGS_LE_GENERAL_NO_BREDR = 0x06

log = logging.getLogger("zoo")


def emit(event: str, **fields: Any) -> None:
    """Report an event to the harness: one JSON line on stdout."""
    record = {"event": event, "t": round(time.monotonic(), 3), **fields}
    sys.stdout.write(json.dumps(record) + "\n")
    sys.stdout.flush()


def ad(ad_type: int, data: bytes) -> bytes:
    return bytes([len(data) + 1, ad_type]) + data


def uuid128_le(uuid: str) -> bytes:
    """128-bit UUID in advertising (little-endian) byte order."""
    return bytes.fromhex(uuid.replace("-", ""))[::-1]


def uuid16_le(uuid: str) -> bytes:
    return int(uuid, 16).to_bytes(2, "little")


def check_legacy(data: bytes, what: str) -> bytes:
    # btvirt 5.66 copies advertising data into a 31-byte buffer without checking: longer data
    # corrupts it and every controller vanishes. Refuse here, loudly.
    if len(data) > LEGACY_ADV_MAX:
        raise SystemExit(f"{what} is {len(data)} bytes; legacy advertising allows {LEGACY_ADV_MAX}")
    return data


def base_parser(description: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--transport", default=DEFAULT_TRANSPORT, help="Bumble HCI transport")
    p.add_argument("--address", required=True, help="random static address (top bits 11)")
    p.add_argument("--readvertise", type=float, default=3.0,
                   help="while unconnected, restart advertising every N s (btvirt only reports "
                        "an advertiser when its advertising is (re)enabled); 0 = never")
    p.add_argument("--advertise-connected", action="store_true",
                   help="keep advertising (every --readvertise s) while connected, so that a "
                        "second central can connect too (a peripheral that takes several links)")
    p.add_argument("--max-mtu", type=int, default=0,
                   help="largest ATT MTU this peer's GATT server accepts (0 = Bumble's default, 517)")
    p.add_argument("--log-level", default=os.environ.get("LAB_PEER_LOG", "INFO"))
    return p


def setup_logging(level: str) -> None:
    logging.basicConfig(
        stream=sys.stderr,
        level=getattr(logging, level.upper(), logging.INFO),
        format="%(asctime)s.%(msecs)03d %(name)s %(levelname)s %(message)s",
        datefmt="%H:%M:%S",
    )


def hexs(b: bytes) -> str:
    return bytes(b).hex()


class Peer:
    """A Bumble device on its own controller, driven over stdin/stdout."""

    def __init__(self, args: argparse.Namespace, name: str = "zoo") -> None:
        self.args = args
        self.name = name
        self.device: Device | None = None
        self.connections: dict[int, Connection] = {}
        self.commands: dict[str, Callable[[dict], Awaitable[Any] | Any]] = {
            "quit": self._cmd_quit,
            "disconnect": self._cmd_disconnect,
            "advertise": self._cmd_advertise,
            "ping": lambda c: emit("pong", id=c.get("id")),
        }
        self.adv_data: bytes | None = None
        self.scan_data: bytes = b""
        self.advertise_wanted = False
        self._stop = asyncio.Event()
        self._adv_lock = asyncio.Lock()

    # -- hooks for subclasses -------------------------------------------------------------
    def build(self, device: Device) -> None:
        """Add services to the device before power-on."""

    async def started(self) -> None:
        """Called once the device is powered on (and advertising, for a peripheral)."""

    def on_connection(self, connection: Connection) -> None:
        pass

    def on_disconnection(self, connection: Connection, reason: int) -> None:
        pass

    # -- plumbing ------------------------------------------------------------------------------
    async def _cmd_quit(self, cmd: dict) -> None:
        self._stop.set()

    async def _cmd_disconnect(self, cmd: dict) -> None:
        for conn in list(self.connections.values()):
            try:
                await conn.disconnect()
            except Exception as e:  # noqa: BLE001 - report, go on
                emit("error", where="disconnect", message=str(e))

    async def _cmd_advertise(self, cmd: dict) -> None:
        if cmd.get("on", True):
            if "advertising_data" in cmd:
                self.adv_data = check_legacy(bytes.fromhex(cmd["advertising_data"]), "advertising data")
            if "scan_response_data" in cmd:
                self.scan_data = check_legacy(bytes.fromhex(cmd["scan_response_data"]), "scan response")
            self.advertise_wanted = True
            await self.restart_advertising()
        else:
            self.advertise_wanted = False
            async with self._adv_lock:
                await self._stop_adv()
        emit("advertising", on=self.advertise_wanted)

    async def _stop_adv(self) -> None:
        assert self.device is not None
        try:
            if self.device.is_advertising:
                await self.device.stop_advertising()
        except Exception as e:  # noqa: BLE001
            log.info("stop_advertising: %s", e)

    async def restart_advertising(self) -> None:
        assert self.device is not None and self.adv_data is not None
        async with self._adv_lock:
            await self._stop_adv()
            if not self.advertise_wanted:
                return
            await self.device.start_advertising(
                advertising_data=self.adv_data,
                scan_response_data=self.scan_data,
                auto_restart=False,
                advertising_interval_min=100,
                advertising_interval_max=100,
            )

    async def _readvertise_loop(self) -> None:
        period = self.args.readvertise
        while not self._stop.is_set():
            await asyncio.sleep(period)
            if self.advertise_wanted and (not self.connections or self.args.advertise_connected):
                try:
                    await self.restart_advertising()
                except Exception as e:  # noqa: BLE001
                    log.warning("re-advertising failed: %s", e)

    def _on_connection(self, connection: Connection) -> None:
        self.connections[connection.handle] = connection
        emit("connected", peer=str(connection.peer_address), handle=connection.handle,
             role="central" if connection.role == hci.Role.CENTRAL else "peripheral")

        def on_disconnection(reason: int) -> None:
            self.connections.pop(connection.handle, None)
            emit("disconnected", peer=str(connection.peer_address), reason=reason)
            self.on_disconnection(connection, reason)
            if self.advertise_wanted and not self._stop.is_set():
                asyncio.get_running_loop().create_task(self._safe_restart())

        def on_mtu() -> None:
            emit("mtu", peer=str(connection.peer_address), mtu=connection.att_mtu)

        connection.on("disconnection", on_disconnection)
        connection.on("connection_att_mtu_update", on_mtu)
        self.on_connection(connection)

    async def _safe_restart(self) -> None:
        try:
            await self.restart_advertising()
        except Exception as e:  # noqa: BLE001
            log.warning("re-advertising after disconnection failed: %s", e)

    async def _stdin_loop(self) -> None:
        loop = asyncio.get_running_loop()
        # Commands may carry large texts (a 64 KiB transfer text is ~400 KiB of JSON).
        reader = asyncio.StreamReader(limit=1 << 24)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        while True:
            line = await reader.readline()
            if not line:
                break
            line = line.strip()
            if not line:
                continue
            try:
                cmd = json.loads(line)
                handler = self.commands[cmd["cmd"]]
            except Exception as e:  # noqa: BLE001
                emit("error", where="command", message=f"bad command {line!r}: {e}")
                continue
            try:
                r = handler(cmd)
                if asyncio.iscoroutine(r):
                    await r
            except Exception as e:  # noqa: BLE001
                log.exception("command %s failed", cmd)
                emit("error", where=cmd["cmd"], message=str(e))
        self._stop.set()

    async def run(self) -> None:
        setup_logging(self.args.log_level)
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, self._stop.set)
        async with await open_transport(self.args.transport) as transport:
            self.device = Device.with_hci(
                self.name, hci.Address(self.args.address), transport.source, transport.sink
            )
            self.device.on("connection", self._on_connection)
            if self.args.max_mtu:
                self.device.gatt_server.max_mtu = self.args.max_mtu
            self.build(self.device)
            await self.device.power_on()
            await self.started()
            emit("ready", address=str(self.device.random_address))
            tasks = [loop.create_task(self._stdin_loop())]
            if self.args.readvertise > 0:
                tasks.append(loop.create_task(self._readvertise_loop()))
            await self._stop.wait()
            self.advertise_wanted = False
            for t in tasks:
                t.cancel()
            # Leave the air cleanly: the other side must see a disconnection.
            for conn in list(self.connections.values()):
                try:
                    await asyncio.wait_for(conn.disconnect(), 5)
                except Exception as e:  # noqa: BLE001
                    log.info("disconnect at exit: %s", e)
            emit("bye")


class Peripheral(Peer):
    """A peer that advertises legacy (≤ 31 bytes) connectable advertising."""

    def advertising(self) -> tuple[bytes, bytes]:
        """Return (advertising data, scan response data)."""
        raise NotImplementedError

    async def started(self) -> None:
        adv, scan = self.advertising()
        self.adv_data = check_legacy(adv, "advertising data")
        self.scan_data = check_legacy(scan, "scan response")
        self.advertise_wanted = True
        await self.restart_advertising()
        emit("advertising", on=True, adv=hexs(adv), scan=hexs(scan))


def main(peer_class: type[Peer], args: argparse.Namespace, **kw: Any) -> None:
    try:
        asyncio.run(peer_class(args, **kw).run())
    except KeyboardInterrupt:
        pass
