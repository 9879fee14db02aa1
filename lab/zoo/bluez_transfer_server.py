#!/usr/bin/env python3
"""A transfer-service peripheral served by bluetoothd itself: a small GATT application and LE
advertisement registered over D-Bus (GattManager1.RegisterApplication,
LEAdvertisingManager1.RegisterAdvertisement), written with dbus-fast. It is the third-party
reference for the gateway's peripheral role (MISSION.md P2-P4): when a central subscribes,
bluetoothd calls AcquireNotify with the link's ATT MTU, and the text goes out as notifications
of MTU-3 bytes, then `EOM`.

Same stdin/stdout protocol as the Bumble zoo (common.py): events registered, acquired {mtu,
device}, sent {chunks, chunk_size, bytes}, released; commands text {text, send}, quit.

BlueZ 5.66 calls AcquireNotify only for the first subscribed central (later subscribers share
the socket): a server learns of neither later subscribers nor their MTUs, and what it writes
goes to every subscribed central.
"""

import argparse
import asyncio
import json
import os
import signal
import socket
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from dbus_fast import BusType, DBusError, Message, MessageType, Variant  # noqa: E402
from dbus_fast.aio import MessageBus  # noqa: E402
from dbus_fast.service import PropertyAccess, ServiceInterface, dbus_method, dbus_property  # noqa: E402

import uuids  # noqa: E402

APP = "/org/gatt2mqtt/lab/app"
SERVICE = APP + "/service0"
CHAR = SERVICE + "/char0"
ADV = "/org/gatt2mqtt/lab/adv0"


def emit(event, **fields):
    sys.stdout.write(json.dumps({"event": event, "t": round(time.monotonic(), 3), **fields}) + "\n")
    sys.stdout.flush()


class Service(ServiceInterface):
    def __init__(self):
        super().__init__("org.bluez.GattService1")

    @dbus_property(PropertyAccess.READ)
    def UUID(self) -> "s":  # noqa: F821, N802
        return uuids.TRANSFER_SERVICE.lower()

    @dbus_property(PropertyAccess.READ)
    def Primary(self) -> "b":  # noqa: F821, N802
        return True


class TransferCharacteristic(ServiceInterface):
    def __init__(self, text: bytes):
        super().__init__("org.bluez.GattCharacteristic1")
        self.text = text
        self.socks: list[socket.socket] = []
        self.mtus: dict[socket.socket, int] = {}
        self.lock = asyncio.Lock()

    @dbus_property(PropertyAccess.READ)
    def UUID(self) -> "s":  # noqa: F821, N802
        return uuids.TRANSFER_CHARACTERISTIC.lower()

    @dbus_property(PropertyAccess.READ)
    def Service(self) -> "o":  # noqa: F821, N802
        return SERVICE

    @dbus_property(PropertyAccess.READ)
    def Flags(self) -> "as":  # noqa: F821, N802
        return ["read", "notify"]

    @dbus_property(PropertyAccess.READ)
    def NotifyAcquired(self) -> "b":  # noqa: F821, N802
        return bool(self.socks)

    @dbus_method()
    def ReadValue(self, options: "a{sv}") -> "ay":  # noqa: F821, N802
        offset = options["offset"].value if "offset" in options else 0
        return self.text[offset:]

    @dbus_method()
    def AcquireNotify(self, options: "a{sv}") -> "hq":  # noqa: F821, N802
        mtu = options["mtu"].value if "mtu" in options else 23
        device = options["device"].value if "device" in options else ""
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        ours.setblocking(False)
        self.socks.append(ours)
        self.mtus[ours] = mtu
        loop = asyncio.get_running_loop()
        emit("acquired", mtu=mtu, device=device)
        fd = theirs.detach()
        # dbus-fast duplicates the descriptor into the reply; close ours once it is sent.
        loop.call_later(5, os.close, fd)
        loop.create_task(self.send(ours, mtu))
        loop.add_reader(ours.fileno(), self._hangup, ours)
        return [fd, mtu]

    def _hangup(self, sock: socket.socket) -> None:
        try:
            data = sock.recv(1)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            asyncio.get_running_loop().remove_reader(sock.fileno())
            if sock in self.socks:
                self.socks.remove(sock)
            self.mtus.pop(sock, None)
            sock.close()
            emit("released")

    async def send(self, sock: socket.socket, mtu: int, text: bytes | None = None) -> None:
        text = self.text if text is None else text
        size = mtu - 3
        chunks = [text[i:i + size] for i in range(0, len(text), size)]
        loop = asyncio.get_running_loop()
        async with self.lock:
            try:
                await asyncio.sleep(0.2)  # let bluetoothd take the descriptor first
                for chunk in chunks + [b"EOM"]:
                    await loop.sock_sendall(sock, chunk)
            except OSError as e:
                emit("error", where="send", message=str(e))
                return
        emit("sent", chunks=len(chunks), chunk_size=size, bytes=len(text), mtu=mtu)

    @dbus_method()
    def StartNotify(self):  # noqa: N802
        # bluetoothd uses AcquireNotify when NotifyAcquired exists; reaching this is a failure.
        emit("error", where="StartNotify", message="StartNotify called instead of AcquireNotify")

    @dbus_method()
    def StopNotify(self):  # noqa: N802
        pass


class Advertisement(ServiceInterface):
    def __init__(self, name: str):
        super().__init__("org.bluez.LEAdvertisement1")
        self.name = name

    @dbus_property(PropertyAccess.READ)
    def Type(self) -> "s":  # noqa: F821, N802
        return "peripheral"

    @dbus_property(PropertyAccess.READ)
    def ServiceUUIDs(self) -> "as":  # noqa: F821, N802
        return [uuids.TRANSFER_SERVICE.lower()]

    @dbus_property(PropertyAccess.READ)
    def LocalName(self) -> "s":  # noqa: F821, N802
        return self.name

    @dbus_method()
    def Release(self):  # noqa: N802
        emit("advertisement_released")


async def main(args):
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    bus = await MessageBus(bus_type=BusType.SYSTEM, negotiate_unix_fd=True).connect()
    char = TransferCharacteristic(args.text.encode())
    bus.export(SERVICE, Service())
    bus.export(CHAR, char)
    bus.export(ADV, Advertisement(args.name))

    # bluetoothd reads an advertisement with ObjectManager.GetManagedObjects on the
    # advertisement's own path and expects that object in the answer; dbus-fast's built-in
    # handler lists only the objects below a path. Answer that call here.
    def adv_objects(msg):
        if (msg.message_type == MessageType.METHOD_CALL and msg.path == ADV
                and msg.interface == "org.freedesktop.DBus.ObjectManager"
                and msg.member == "GetManagedObjects"):
            props = {"Type": Variant("s", "peripheral"),
                     "ServiceUUIDs": Variant("as", [uuids.TRANSFER_SERVICE.lower()]),
                     "LocalName": Variant("s", args.name)}
            return Message.new_method_return(
                msg, "a{oa{sa{sv}}}", [{ADV: {"org.bluez.LEAdvertisement1": props}}])
        return None

    bus.add_message_handler(adv_objects)
    adapter = f"/org/bluez/{args.adapter}"
    intro = await bus.introspect("org.bluez", adapter)
    obj = bus.get_proxy_object("org.bluez", adapter, intro)
    gatt_manager = obj.get_interface("org.bluez.GattManager1")
    adv_manager = obj.get_interface("org.bluez.LEAdvertisingManager1")
    await gatt_manager.call_register_application(APP, {})
    await adv_manager.call_register_advertisement(ADV, {})
    emit("registered", adapter=args.adapter, service=uuids.TRANSFER_SERVICE)

    async def commands():
        reader = asyncio.StreamReader()
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
        while line := await reader.readline():
            try:
                cmd = json.loads(line)
            except ValueError:
                continue
            if cmd.get("cmd") == "quit":
                break
            if cmd.get("cmd") == "text":
                char.text = cmd["text"].encode()
                emit("text", bytes=len(char.text))
                if cmd.get("send"):
                    # One write per chunk to the AcquireNotify socket: bluetoothd sends each to
                    # every subscribed central.
                    for sock in list(char.socks):
                        loop.create_task(char.send(sock, char.mtus[sock]))
        stop.set()

    task = loop.create_task(commands())
    await stop.wait()
    task.cancel()
    for call in (adv_manager.call_unregister_advertisement(ADV),
                 gatt_manager.call_unregister_application(APP)):
        try:
            await asyncio.wait_for(call, 10)
        except (DBusError, asyncio.TimeoutError) as e:
            emit("error", where="unregister", message=str(e))
    emit("bye")
    bus.disconnect()


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--adapter", default="hci0")
    p.add_argument("--name", default="lab-bz")
    p.add_argument("--text", default="Served by bluetoothd through GattManager1: Grüße ✓ " * 3)
    asyncio.run(main(p.parse_args()))
