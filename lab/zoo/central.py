#!/usr/bin/env python3
"""Bumble central: scans for a service UUID, connects, negotiates a chosen ATT MTU, subscribes
to a characteristic and reassembles `EOM`-terminated text (the transfer protocol, central side).

The MTU is capped on both directions (our own Exchange MTU request and our GATT server's answer
to the peer's request: bluetoothd starts its own exchange with 517), so --mtu 23 really gives a
23-byte ATT MTU. The link's actual MTU is reported.

Events: scanning, found {address, rssi}, connected {address, handle}, mtu {mtu}, subscribed,
chunk {n, size} (only with --report-chunks), text {text, hex, bytes, chunks, chunk_sizes, mtu,
elapsed_s (first chunk to `EOM`, monotonic)}, read {bytes} (--read-first), incomplete {bytes, chunks, elapsed_s} (disconnected
mid-text), disconnected {reason}, status {bytes, chunks, texts}. Commands: unsubscribe, subscribe, status,
disconnect, quit.
"""

from __future__ import annotations

import asyncio
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bumble import hci  # noqa: E402
from bumble.core import UUID  # noqa: E402
from bumble.device import Peer as GattPeer  # noqa: E402

import common  # noqa: E402
import uuids  # noqa: E402
from common import emit  # noqa: E402


def ad_service_uuids(data: bytes) -> set[str]:
    """Service UUIDs (upper-case, 4-hex or 128-bit with dashes) in raw AD structures."""
    found: set[str] = set()
    i = 0
    while i < len(data):
        length = data[i]
        if length == 0 or i + 1 + length > len(data):
            break
        ad_type, payload = data[i + 1], data[i + 2:i + 1 + length]
        if ad_type in (0x02, 0x03):
            for j in range(0, len(payload) - 1, 2):
                found.add(f"{int.from_bytes(payload[j:j + 2], 'little'):04X}")
        elif ad_type in (0x06, 0x07):
            for j in range(0, len(payload) - 15, 16):
                h = payload[j:j + 16][::-1].hex().upper()
                found.add(f"{h[0:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}")
        i += 1 + length
    return found


class Central(common.Peer):
    def __init__(self, args, **kw):
        super().__init__(args, name="lab-central")
        self.want = args.service.upper()
        self.target = None
        self.found = asyncio.Event()
        self.connection = None
        self.gatt = None
        self.char = None
        self.buffer = bytearray()
        self.sizes: list[int] = []
        self.first_at: float | None = None
        self.texts = 0
        self.commands["unsubscribe"] = self.cmd_unsubscribe
        self.commands["subscribe"] = self.cmd_subscribe
        self.commands["status"] = self.cmd_status

    def build(self, device):
        # Answer the peer's MTU request with our cap too.
        device.gatt_server.max_mtu = self.args.mtu

        def on_advertisement(adv):
            if self.target is not None:
                return
            if self.want in ad_service_uuids(bytes(adv.data)):
                self.target = adv.address
                emit("found", address=str(adv.address), rssi=adv.rssi)
                self.found.set()

        device.on("advertisement", on_advertisement)

    def on_value(self, value: bytes) -> None:
        value = bytes(value)
        now = time.monotonic()
        if value == b"EOM":
            data = bytes(self.buffer)
            self.texts += 1
            elapsed = now - self.first_at if self.first_at is not None else 0.0
            emit("text", text=data.decode("utf-8", "replace"), hex=data.hex(), bytes=len(data),
                 chunks=len(self.sizes), chunk_sizes=self.sizes,
                 mtu=self.connection.att_mtu if self.connection else None, n=self.texts,
                 elapsed_s=round(elapsed, 6))
            self.buffer = bytearray()
            self.sizes = []
            self.first_at = None
            if self.args.count and self.texts >= self.args.count:
                self._stop.set()
            return
        if self.first_at is None:
            self.first_at = now
        self.buffer += value
        self.sizes.append(len(value))
        if self.args.report_chunks:
            emit("chunk", n=len(self.sizes), size=len(value))

    def cmd_status(self, cmd):
        """What has arrived of the current text (a benchmark asks when EOM is overdue)."""
        emit("status", bytes=len(self.buffer), chunks=len(self.sizes), texts=self.texts)

    async def cmd_subscribe(self, cmd):
        await self.gatt.subscribe(self.char, self.on_value)
        emit("subscribed")

    async def cmd_unsubscribe(self, cmd):
        await self.gatt.unsubscribe(self.char, self.on_value)
        emit("unsubscribed")

    def on_disconnection(self, connection, reason):
        self.connection = None
        if self.buffer or self.sizes:
            # A text cut short: what had arrived (a benchmark reports it as lost).
            elapsed = time.monotonic() - self.first_at if self.first_at is not None else 0.0
            emit("incomplete", bytes=len(self.buffer), chunks=len(self.sizes),
                 elapsed_s=round(elapsed, 6))
        if self.args.exit_on_disconnect:
            self._stop.set()

    async def started(self) -> None:
        asyncio.get_running_loop().create_task(self.session())

    async def session(self) -> None:
        try:
            await self._session()
        except Exception as e:  # noqa: BLE001 - report, then end
            emit("error", where="session", message=f"{type(e).__name__}: {e}")
            self._stop.set()

    async def _session(self) -> None:
        device = self.device
        await device.start_scanning(active=True, filter_duplicates=False)
        emit("scanning", service=self.want)
        await asyncio.wait_for(self.found.wait(), self.args.scan_timeout)
        await device.stop_scanning()
        connection = await device.connect(
            self.target, own_address_type=hci.OwnAddressType.RANDOM,
            timeout=self.args.connect_timeout)
        self.connection = connection
        gatt = GattPeer(connection)
        self.gatt = gatt
        if self.args.mtu != 23:
            await gatt.request_mtu(self.args.mtu)
        emit("mtu", mtu=connection.att_mtu, requested=self.args.mtu)
        await gatt.discover_services([UUID(self.args.service)])
        services = gatt.get_services_by_uuid(UUID(self.args.service))
        if not services:
            raise RuntimeError(f"service {self.args.service} not found")
        await services[0].discover_characteristics()
        chars = services[0].get_characteristics_by_uuid(UUID(self.args.char))
        if not chars:
            raise RuntimeError(f"characteristic {self.args.char} not found")
        self.char = chars[0]
        if self.args.read_first:
            # One short read (no long read) before subscribing: a peripheral learns the MTU.
            value = await self.char.read_value(no_long_read=True)
            emit("read", bytes=len(value))
        await gatt.subscribe(self.char, self.on_value)
        emit("subscribed", mtu=connection.att_mtu)


if __name__ == "__main__":
    p = common.base_parser(__doc__.splitlines()[0])
    p.set_defaults(readvertise=0)
    p.add_argument("--service", default=uuids.TRANSFER_SERVICE)
    p.add_argument("--char", default=uuids.TRANSFER_CHARACTERISTIC)
    p.add_argument("--mtu", type=int, default=23)
    p.add_argument("--count", type=int, default=0, help="exit after N texts (0 = run until quit)")
    p.add_argument("--scan-timeout", type=float, default=60)
    p.add_argument("--connect-timeout", type=float, default=30)
    p.add_argument("--report-chunks", action="store_true")
    p.add_argument("--exit-on-disconnect", action="store_true")
    p.add_argument("--read-first", action="store_true",
                   help="read the characteristic once (short read) before subscribing")
    common.main(Central, p.parse_args())
