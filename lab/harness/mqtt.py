"""An MQTT client for scenarios: paho-mqtt in its own thread, awaited from asyncio."""

from __future__ import annotations

import asyncio
import bisect
import functools
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import paho.mqtt.client as paho

from procs import LabError, scaled


@dataclass
class Msg:
    topic: str
    payload: bytes
    retain: bool
    qos: int
    t: float = field(default_factory=time.monotonic)

    @property
    def text(self) -> str:
        return self.payload.decode("utf-8", "replace")

    def json(self):
        import json
        return json.loads(self.payload)


@functools.lru_cache(maxsize=65536)
def matches(topic_filter: str, topic: str) -> bool:
    """Whether `topic` matches `topic_filter`; remembered, since scenarios ask the same pairs
    again for every message (paho's matcher is pure Python: asked ~n^2/2 times by a predicate
    that counts a topic's messages, it held the harness's loop for minutes under emulation)."""
    if "+" not in topic_filter and "#" not in topic_filter:
        return topic_filter == topic
    return paho.topic_matches_sub(topic_filter, topic)


class Mqtt:
    def __init__(self, host: str, port: int, client_id: str, log: Path) -> None:
        self.host, self.port = host, port
        self.log = open(log, "a")
        # The log is in the results folder, a 9p share of the host: a flush per message is a
        # round trip to QEMU on the client's network thread. Flushed at most once a second,
        # and at close.
        self._flushed = 0.0
        self.messages: list[Msg] = []
        # Per topic: the positions of its messages in `messages`, and the messages.
        self._by_topic: dict[str, tuple[list[int], list[Msg]]] = {}
        self.loop = asyncio.get_running_loop()
        self._changed = asyncio.Event()
        self._connected = asyncio.Event()
        self.client = paho.Client(paho.CallbackAPIVersion.VERSION2, client_id=client_id,
                                  protocol=paho.MQTTv311)
        self.client.on_message = self._on_message
        self.client.on_connect = lambda c, u, f, rc, p: self.loop.call_soon_threadsafe(self._connected.set)

    def _on_message(self, client, userdata, m) -> None:
        msg = Msg(m.topic, bytes(m.payload), bool(m.retain), m.qos)
        self.log.write(f"{time.strftime('%H:%M:%S')} {msg.topic} retain={int(msg.retain)} {msg.payload!r}\n")
        if time.monotonic() - self._flushed >= 1:
            self.log.flush()
            self._flushed = time.monotonic()

        def add() -> None:
            positions, messages = self._by_topic.setdefault(msg.topic, ([], []))
            positions.append(len(self.messages))
            messages.append(msg)
            self.messages.append(msg)
            self._changed.set()

        self.loop.call_soon_threadsafe(add)

    async def connect(self, timeout: float = 30) -> "Mqtt":
        self.client.connect_async(self.host, self.port, keepalive=60)
        self.client.loop_start()
        try:
            await asyncio.wait_for(self._connected.wait(), scaled(timeout))
        except asyncio.TimeoutError:
            raise LabError(f"MQTT client could not connect to {self.host}:{self.port}") from None
        return self

    def subscribe(self, topic: str, qos: int = 1) -> None:
        self.client.subscribe(topic, qos)

    def publish(self, topic: str, payload: bytes | str, qos: int = 1, retain: bool = False) -> None:
        info = self.client.publish(topic, payload, qos=qos, retain=retain)
        info.wait_for_publish(scaled(30))

    def mark(self) -> int:
        return len(self.messages)

    def received(self, topic_filter: str = "#", after: int = 0) -> list[Msg]:
        """The messages on `topic_filter` from position `after` on, in order of arrival."""
        if "+" not in topic_filter and "#" not in topic_filter:
            positions, messages = self._by_topic.get(topic_filter, ([], []))
            return messages[bisect.bisect_left(positions, after):]
        return [m for m in self.messages[after:] if matches(topic_filter, m.topic)]

    async def expect(self, topic_filter: str, where: Callable[[Msg], bool] | None = None,
                     timeout: float = 30, after: int = 0) -> Msg:
        """The first message on `topic_filter` (matching `where`) at or after `after`."""
        deadline = time.monotonic() + scaled(timeout)
        i = after
        while True:
            while i < len(self.messages):
                m = self.messages[i]
                i += 1
                if matches(topic_filter, m.topic) and (where is None or where(m)):
                    return m
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                seen = sorted({m.topic for m in self.messages[after:]})[:8]
                raise LabError(f"no MQTT message on {topic_filter} within {scaled(timeout):.0f} s "
                               f"(topics seen: {seen})")
            self._changed.clear()
            try:
                await asyncio.wait_for(self._changed.wait(), remaining)
            except asyncio.TimeoutError:
                pass

    def close(self) -> None:
        try:
            self.client.disconnect()
        finally:
            self.client.loop_stop()
            self.log.close()
