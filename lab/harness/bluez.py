"""Small BlueZ D-Bus helpers (dbus-fast, raw messages: no introspection round trips)."""

from __future__ import annotations

import asyncio
from typing import Any

from dbus_fast import BusType, Message, MessageType, Variant
from dbus_fast.aio import MessageBus


def unwrap(v: Any) -> Any:
    if isinstance(v, Variant):
        return unwrap(v.value)
    if isinstance(v, dict):
        return {k: unwrap(x) for k, x in v.items()}
    if isinstance(v, list):
        return [unwrap(x) for x in v]
    return v


class BlueZ:
    def __init__(self) -> None:
        self.bus: MessageBus | None = None

    async def connect(self) -> "BlueZ":
        self.bus = await MessageBus(bus_type=BusType.SYSTEM).connect()
        return self

    def close(self) -> None:
        if self.bus:
            self.bus.disconnect()
            self.bus = None

    async def call(self, path: str, interface: str, member: str, signature: str = "",
                   body: list | None = None, timeout: float = 25) -> list:
        assert self.bus
        reply = await asyncio.wait_for(self.bus.call(Message(
            destination="org.bluez", path=path, interface=interface, member=member,
            signature=signature, body=body or [])), timeout)
        if reply.message_type == MessageType.ERROR:
            raise RuntimeError(f"{member} {path}: {reply.error_name}: {reply.body}")
        return reply.body

    async def objects(self) -> dict[str, dict[str, dict[str, Any]]]:
        body = await self.call("/", "org.freedesktop.DBus.ObjectManager", "GetManagedObjects")
        return unwrap(body[0])

    async def adapters(self) -> dict[str, dict[str, Any]]:
        return {p: i["org.bluez.Adapter1"] for p, i in (await self.objects()).items()
                if "org.bluez.Adapter1" in i}

    async def devices(self) -> dict[str, dict[str, Any]]:
        return {p: i["org.bluez.Device1"] for p, i in (await self.objects()).items()
                if "org.bluez.Device1" in i}

    async def remove_all_devices(self) -> int:
        n = 0
        for path, dev in (await self.devices()).items():
            try:
                await self.call(dev["Adapter"], "org.bluez.Adapter1", "RemoveDevice", "o", [path])
                n += 1
            except Exception:  # noqa: BLE001 - already gone
                pass
        return n

    async def set_powered(self, adapter: str, on: bool) -> None:
        await self.call(f"/org/bluez/{adapter}", "org.freedesktop.DBus.Properties", "Set", "ssv",
                        ["org.bluez.Adapter1", "Powered", Variant("b", on)])
