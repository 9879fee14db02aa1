#!/usr/bin/env python3
"""The baseline of Benchmarks/lab-cpu: a plain BLE -> MQTT bridge in Python, bleak + paho-mqtt,
doing the forwarding gatt2mqtt does in the benchmark, the way one would write it by hand.

- scans (active, through bluetoothd) all the time and publishes every advertisement bleak
  reports as JSON on `<base>/<DEV>/advertisement` (id, addr_type, name, rssi, txpower,
  manufacturerdata, servicedata, uuids, gw, ts: the fields of TOPICS.md);
- connects to each --connect address when it is seen, turns on notifications of each --notify
  characteristic (`<svc>/<chr>`, short or 128-bit UUIDs) and publishes every value, hex, on
  `<base>/<DEV>/gatt/<svc>/<chr>`.
Every publish is QoS 1, like gatt2mqtt's default. Runs until SIGTERM/SIGINT.

    lab-cpu-baseline.py [--broker 127.0.0.1:1883] [--base gatt2mqtt] [--adapter hci0]
                        [--connect AA:BB:CC:DD:EE:FF]... [--notify 180d/2a37]...
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
import time

import paho.mqtt.client as paho
from bleak import BleakClient, BleakScanner

SIG_BASE = "-0000-1000-8000-00805f9b34fb"


def long_uuid(u: str) -> str:
    u = u.lower()
    return f"0000{u}{SIG_BASE}" if len(u) == 4 else u


def short_uuid(u: str) -> str:
    u = u.lower()
    return u[4:8] if u.startswith("0000") and u.endswith(SIG_BASE) else u


def log(*parts) -> None:
    print(time.strftime("%H:%M:%S"), *parts, file=sys.stderr, flush=True)


class Bridge:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.base = args.base
        self.wanted = {a.upper() for a in args.connect}
        self.connecting: set[str] = set()
        self.clients: dict[str, BleakClient] = {}
        self.adverts = 0
        self.notifications = 0
        host, _, port = args.broker.partition(":")
        self.mqtt = paho.Client(paho.CallbackAPIVersion.VERSION2, client_id="lab-cpu-baseline",
                                protocol=paho.MQTTv311)
        self.mqtt.max_queued_messages_set(0)  # no limit, as gatt2mqtt's queue is large
        self.mqtt.connect(host, int(port or 1883), keepalive=60)
        self.mqtt.loop_start()

    def on_advertisement(self, device, adv) -> None:
        self.adverts += 1
        address = device.address.upper()
        props = device.details.get("props", {}) if isinstance(device.details, dict) else {}
        body = {
            "id": address,
            "addr_type": props.get("AddressType", "public"),
            "name": adv.local_name,
            "rssi": adv.rssi,
            "txpower": adv.tx_power,
            "manufacturerdata": {f"{k:04x}": bytes(v).hex() for k, v in adv.manufacturer_data.items()},
            "servicedata": {short_uuid(k): bytes(v).hex() for k, v in adv.service_data.items()},
            "uuids": [short_uuid(u) for u in adv.service_uuids],
            "gw": "baseline",
            "ts": int(time.time() * 1000),
        }
        body = {k: v for k, v in body.items() if v not in (None, {}, [])}
        dev = address.replace(":", "")
        self.mqtt.publish(f"{self.base}/{dev}/advertisement", json.dumps(body), qos=1)
        if address in self.wanted and address not in self.connecting and address not in self.clients:
            self.connecting.add(address)
            asyncio.get_running_loop().create_task(self.connect(device))

    async def connect(self, device) -> None:
        address = device.address.upper()
        dev = address.replace(":", "")
        # bleak on BlueZ connects reliably only while it is not scanning (with discovery on,
        # its connect keeps failing with "failed to discover services, device disconnected"):
        # scanning pauses while connecting, as bleak's documentation advises.
        await self.scanner.stop()
        try:
            for attempt in range(1, 6):
                client = BleakClient(device, timeout=60)
                try:
                    await client.connect()
                    break
                except Exception as e:  # noqa: BLE001 - bleak's first connect can race; retry
                    log(f"connect {address} attempt {attempt}: {e!r}")
                    try:
                        await client.disconnect()
                    except Exception:  # noqa: BLE001
                        pass
                    await asyncio.sleep(2)
            else:
                return
            self.clients[address] = client
            log("connected", address)
            for spec in self.args.notify:
                svc, chr_ = spec.lower().split("/")
                service = client.services.get_service(long_uuid(svc))
                characteristic = service.get_characteristic(long_uuid(chr_)) if service else None
                if characteristic is None:
                    log(f"{address} has no {spec}")
                    continue
                topic = f"{self.base}/{dev}/gatt/{short_uuid(svc)}/{short_uuid(chr_)}"

                def forward(_, data: bytearray, topic: str = topic) -> None:
                    self.notifications += 1
                    self.mqtt.publish(topic, bytes(data).hex(), qos=1)

                await client.start_notify(characteristic, forward)
                log("notifying", address, spec)
        finally:
            self.connecting.discard(address)
            await self.scanner.start()

    async def run(self) -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        self.scanner = scanner = BleakScanner(self.on_advertisement, scanning_mode="active",
                                              bluez={"adapter": self.args.adapter})
        await scanner.start()
        log("scanning on", self.args.adapter)
        await stop.wait()
        log(f"stopping: {self.adverts} advertisements, {self.notifications} notifications forwarded")
        await scanner.stop()
        for client in self.clients.values():
            try:
                await client.disconnect()
            except Exception as e:  # noqa: BLE001
                log("disconnect:", e)
        self.mqtt.disconnect()
        self.mqtt.loop_stop()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--broker", default="127.0.0.1:1883")
    p.add_argument("--base", default="gatt2mqtt")
    p.add_argument("--adapter", default="hci0")
    p.add_argument("--connect", action="append", default=[], help="address to connect to")
    p.add_argument("--notify", action="append", default=[], help="<svc>/<chr> to forward")
    asyncio.run(Bridge(p.parse_args()).run())


if __name__ == "__main__":
    main()
