#!/usr/bin/env python3
"""Sensor peripheral: Battery Service (0x180F/0x2A19, read + notify) and Heart Rate
(0x180D/0x2A37, notify at a settable rate).

Heart-rate measurement value (3 bytes): flags 0x08 (8-bit heart rate, Energy Expended present),
heart rate = 60 + seq % 40, Energy Expended (uint16 LE) = seq % 65536, where seq counts the
notifications sent on that subscription from 0: a receiver checks order and loss with it.

Commands (stdin JSON): {"cmd":"battery","level":N} sets the level and notifies subscribers;
{"cmd":"drop_hr"} takes the heart-rate service out of the GATT database and indicates Service
Changed over its handles to subscribed centrals (BlueZ rediscovers the range, finds nothing and
removes the service, ending its notifications on its own);
{"cmd":"hr","rate":HZ,"count":N} sets the rate (0 = as fast as the link takes them) and how many
notifications a subscription gets (0 = unlimited); it applies to the next subscription.
--hr-steady paces by the clock (notification n at n/rate s after the subscription, catching up
after a delay) instead of sleeping 1/rate after each one, which under emulation gives well
under the asked rate.
--alert adds a custom service with an indicate-only characteristic (uuids.ALERT_LEVEL): each
subscription gets --alert-count indications, the sequence number as uint16 LE, 10 per second.
Events: subscribed/unsubscribed {char}, battery_read, hr_done {sent, seconds},
hr_dropped {start, end, indicated},
alert_done {sent}.
"""

from __future__ import annotations

import asyncio
import os
import struct
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bumble.gatt import Characteristic, CharacteristicValue, Service  # noqa: E402

import common  # noqa: E402
import uuids  # noqa: E402
from common import AD_COMPLETE_16, AD_COMPLETE_NAME, AD_FLAGS, FLAGS_LE_GENERAL_NO_BREDR, ad, emit  # noqa: E402


def hr_value(seq: int) -> bytes:
    return bytes([0x08, 60 + seq % 40]) + (seq % 65536).to_bytes(2, "little")


class Sensor(common.Peripheral):
    def __init__(self, args, **kw):
        super().__init__(args, name=args.name)
        self.level = args.battery
        self.hr_rate = args.hr_rate
        self.hr_count = args.hr_count
        self.streams: dict[int, asyncio.Task] = {}
        self.alert_rounds: dict[int, asyncio.Task] = {}
        self.commands["battery"] = self.cmd_battery
        self.commands["hr"] = self.cmd_hr
        self.commands["drop_hr"] = self.cmd_drop_hr

    def advertising(self):
        adv = (ad(AD_FLAGS, bytes([FLAGS_LE_GENERAL_NO_BREDR]))
               + ad(AD_COMPLETE_16, common.uuid16_le(uuids.BATTERY_SERVICE)
                    + common.uuid16_le(uuids.HEART_RATE_SERVICE))
               + ad(AD_COMPLETE_NAME, self.args.name.encode()))
        return adv, b""

    def build(self, device):
        def read_level(connection):
            emit("battery_read", peer=str(connection.peer_address), level=self.level)
            return bytes([self.level])

        self.battery = Characteristic(
            uuids.BATTERY_LEVEL,
            Characteristic.Properties.READ | Characteristic.Properties.NOTIFY,
            Characteristic.READABLE,
            CharacteristicValue(read=read_level),
        )
        self.hr = Characteristic(
            uuids.HEART_RATE_MEASUREMENT,
            Characteristic.Properties.NOTIFY,
            0,
            hr_value(0),
        )
        self.hr_service = Service(uuids.HEART_RATE_SERVICE, [self.hr])
        services = [Service(uuids.BATTERY_SERVICE, [self.battery]), self.hr_service]
        if self.args.alert:
            self.alert = Characteristic(uuids.ALERT_LEVEL, Characteristic.Properties.INDICATE, 0, bytes(2))
            services.append(Service(uuids.ALERT_SERVICE, [self.alert]))
            self.alert.on("subscription", lambda conn, n, i: self.on_subscription(conn, "alert", i))
        device.add_services(services)
        self.battery.on("subscription", lambda conn, n, i: self.on_subscription(conn, "battery", n))
        self.hr.on("subscription", lambda conn, n, i: self.on_subscription(conn, "hr", n))

    def on_subscription(self, connection, which: str, enabled: bool) -> None:
        emit("subscribed" if enabled else "unsubscribed", char=which,
             peer=str(connection.peer_address))
        if which == "alert":
            # One round at a time per link: a new subscription starts the numbers over.
            old = self.alert_rounds.pop(connection.handle, None)
            if old:
                old.cancel()
            if enabled:
                self.alert_rounds[connection.handle] = asyncio.get_running_loop().create_task(
                    self.alerts(connection))
            return
        if which != "hr":
            return
        old = self.streams.pop(connection.handle, None)
        if old:
            old.cancel()
        if enabled:
            self.streams[connection.handle] = asyncio.get_running_loop().create_task(
                self.stream(connection))

    async def stream(self, connection) -> None:
        seq = 0
        rate, count = self.hr_rate, self.hr_count
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        try:
            while count == 0 or seq < count:
                await self.device.notify_subscriber(connection, self.hr, hr_value(seq))
                seq += 1
                if rate > 0 and self.args.hr_steady:
                    await asyncio.sleep(max(0.0, t0 + seq / rate - loop.time()))
                else:
                    await asyncio.sleep(1.0 / rate if rate > 0 else 0)
            emit("hr_done", sent=seq, seconds=round(loop.time() - t0, 3), peer=str(connection.peer_address))
        except asyncio.CancelledError:
            emit("hr_stopped", sent=seq)
            raise
        except Exception as e:  # noqa: BLE001 - the link went away
            emit("hr_stopped", sent=seq, error=str(e))

    async def alerts(self, connection) -> None:
        sent = 0
        try:
            for seq in range(self.args.alert_count):
                await self.device.indicate_subscriber(connection, self.alert, seq.to_bytes(2, "little"))
                sent += 1
                await asyncio.sleep(0.1)
            emit("alert_done", sent=sent)
        except asyncio.CancelledError:
            emit("alert_stopped", sent=sent, error="subscribed again")
            raise
        except Exception as e:  # noqa: BLE001 - the link went away
            emit("alert_stopped", sent=sent, error=str(e))

    def on_disconnection(self, connection, reason):
        task = self.streams.pop(connection.handle, None)
        if task:
            task.cancel()

    async def cmd_battery(self, cmd):
        self.level = int(cmd["level"]) & 0xFF
        await self.device.notify_subscribers(self.battery, bytes([self.level]))
        emit("battery", level=self.level)

    async def cmd_drop_hr(self, cmd):
        server = self.device.gatt_server
        start, end = self.hr_service.handle, self.hr_service.end_group_handle
        for task in self.streams.values():
            task.cancel()
        self.streams.clear()
        server.attributes = [a for a in server.attributes if not start <= a.handle <= end]
        server.attributes_by_handle.clear()
        server.services.remove(self.hr_service)
        changed = self.device.gatt_service.service_changed_characteristic
        # The centrals that asked for Service Changed indications (BlueZ does at connection).
        indicated = sum(1 for cccds in server.subscribers.values()
                        if cccds.get(changed.handle, b"\0")[0] & 0x02)
        await self.device.indicate_subscribers(changed, struct.pack("<HH", start, end))
        emit("hr_dropped", start=start, end=end, indicated=indicated)

    def cmd_hr(self, cmd):
        self.hr_rate = float(cmd.get("rate", self.hr_rate))
        self.hr_count = int(cmd.get("count", self.hr_count))
        emit("hr_config", rate=self.hr_rate, count=self.hr_count)


if __name__ == "__main__":
    p = common.base_parser(__doc__.splitlines()[0])
    p.add_argument("--name", default="lab-sensor")
    p.add_argument("--battery", type=int, default=87)
    p.add_argument("--hr-rate", type=float, default=1.0, help="notifications per second (0 = flat out)")
    p.add_argument("--hr-count", type=int, default=0, help="notifications per subscription (0 = unlimited)")
    p.add_argument("--hr-steady", action="store_true",
                   help="pace notifications by the clock (n/rate after the subscription)")
    p.add_argument("--alert", action="store_true", help="add the indicate-only alert characteristic")
    p.add_argument("--alert-count", type=int, default=20, help="indications per subscription")
    common.main(Sensor, p.parse_args())
