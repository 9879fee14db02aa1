#!/usr/bin/env python3
"""Beacon: an advertiser whose every advertisement is new. Flags, manufacturer data (company
0xFFFF, then a 32-bit little-endian counter) and the name --name (legacy, 23 bytes). Every
--interval seconds (a deadline: the restart's own time is not added; the first comes at a random
point of the first interval, so that beacons told at once do not advertise in step) the counter
goes up and advertising is restarted with the new data: btvirt reports an advertiser only when
its advertising is (re)enabled, and bluetoothd signals a device's ManufacturerData only when it
changed, so each tick is exactly one new advertisement for a scanner (the load of
Benchmarks/lab-cpu's advertisement phases).

Commands (stdin JSON): {"cmd":"beacon","interval":S} sets the interval (0 = stop changing and
stop advertising); {"cmd":"stats"} reports.
Events: stats {sent, counter, interval}; `sent` counts the advertisements started.
"""

from __future__ import annotations

import asyncio
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import common  # noqa: E402
from common import AD_COMPLETE_NAME, AD_FLAGS, AD_MANUFACTURER, FLAGS_LE_GENERAL_NO_BREDR, ad, emit  # noqa: E402


class Beacon(common.Peripheral):
    def __init__(self, args, **kw):
        super().__init__(args, name=args.name)
        self.counter = 0
        self.sent = 0
        self.interval = args.interval
        self.changed = asyncio.Event()
        self.commands["beacon"] = self.cmd_beacon
        self.commands["stats"] = lambda c: self.report()

    def advertising(self):
        data = (0xFFFF).to_bytes(2, "little") + self.counter.to_bytes(4, "little")
        adv = (ad(AD_FLAGS, bytes([FLAGS_LE_GENERAL_NO_BREDR]))
               + ad(AD_MANUFACTURER, data)
               + ad(AD_COMPLETE_NAME, self.args.name.encode()))
        return adv, b""

    async def started(self) -> None:
        if self.interval > 0:
            await super().started()
            self.sent += 1
        else:
            self.adv_data = common.check_legacy(self.advertising()[0], "advertising data")
            emit("advertising", on=False)
        self._ticker = asyncio.get_running_loop().create_task(self.tick())

    async def tick(self) -> None:
        loop = asyncio.get_running_loop()
        deadline: float | None = None
        while True:
            if self.interval <= 0:
                deadline = None
                self.changed.clear()
                await self.changed.wait()
                continue
            if deadline is None:
                # Beacons told at once would otherwise advertise in step for the whole run.
                deadline = loop.time() + self.interval * random.random()
            try:
                await asyncio.wait_for(self.changed.wait(), max(0.0, deadline - loop.time()))
                self.changed.clear()
                deadline = None
                continue  # the interval changed: start a fresh one
            except asyncio.TimeoutError:
                # With the deadline already past, wait_for gives up before a command set in the
                # meantime is seen: look again, so that a stop is never followed by a restart.
                if self.changed.is_set() or self.interval <= 0:
                    continue
            # Paced by deadline: the restart's own time (tens of ms under emulation) is not added
            # to the interval; a beacon that fell behind starts the next at once, without a burst.
            deadline = max(deadline + self.interval, loop.time())
            if self.connections:
                continue
            self.counter = (self.counter + 1) & 0xFFFFFFFF
            self.adv_data = common.check_legacy(self.advertising()[0], "advertising data")
            self.advertise_wanted = True
            try:
                await self.restart_advertising()
                self.sent += 1
            except Exception as e:  # noqa: BLE001
                emit("error", where="beacon", message=str(e))

    async def cmd_beacon(self, cmd) -> None:
        self.interval = float(cmd.get("interval", self.interval))
        if self.interval <= 0:
            self.advertise_wanted = False
            async with self._adv_lock:
                await self._stop_adv()
        self.changed.set()
        self.report()

    def report(self) -> None:
        emit("stats", sent=self.sent, counter=self.counter, interval=self.interval)


if __name__ == "__main__":
    p = common.base_parser(__doc__.splitlines()[0])
    p.add_argument("--name", default="lab-beacon")
    p.add_argument("--interval", type=float, default=1.0,
                   help="seconds between two (new) advertisements; 0 = not advertising")
    # The beacon re-advertises by itself (with new data); the plain 3 s restart would add
    # repeats of unchanged data.
    p.set_defaults(readvertise=0)
    common.main(Beacon, p.parse_args())
