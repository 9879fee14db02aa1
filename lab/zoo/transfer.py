#!/usr/bin/env python3
"""Transfer peripheral: Apple's "BTLE Transfer" service (MISSION.md P2, lab/zoo/uuids.py
TRANSFER_*). When a central subscribes to the transfer characteristic, the peripheral sends the
configured text as notifications of at most MTU-3 bytes each (the link's ATT MTU at that
moment; --chunk-size caps it further), in order, followed by one notification holding exactly
`EOM`. Chunks split bytes, not characters: a multi-byte UTF-8 character may straddle two
chunks, so a receiver must join bytes before decoding. The characteristic is also readable
(the whole text, by long read).

Commands (stdin JSON): {"cmd":"text","text":T,"send":true} replaces the text and, with
"send", pushes it at once to every subscribed central.
Events: subscribed/unsubscribed, sent {peer, mtu, chunk_size, chunks, bytes}.
"""

from __future__ import annotations

import asyncio
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bumble.gatt import Characteristic, CharacteristicValue, Service  # noqa: E402

import common  # noqa: E402
import uuids  # noqa: E402
from common import AD_COMPLETE_128, AD_COMPLETE_NAME, AD_FLAGS, FLAGS_LE_GENERAL_NO_BREDR, ad, emit  # noqa: E402

DEFAULT_TEXT = (
    "Here's to the crazy ones. The misfits. The rebels. The troublemakers. "
    "Grüße aus dem Labor: ünïcödé ✓ straddles chunk boundaries. "
    "They push the human race forward."
)


class Transfer(common.Peripheral):
    def __init__(self, args, **kw):
        super().__init__(args, name=args.name)
        self.text = args.text.encode()
        self.subscribers: dict[int, object] = {}
        self.sending: dict[int, set[asyncio.Task]] = {}
        self.locks: dict[int, asyncio.Lock] = {}
        self.commands["text"] = self.cmd_text

    def advertising(self):
        adv = (ad(AD_FLAGS, bytes([FLAGS_LE_GENERAL_NO_BREDR]))
               + ad(AD_COMPLETE_128, common.uuid128_le(uuids.TRANSFER_SERVICE)))
        scan = ad(AD_COMPLETE_NAME, self.args.name.encode())
        return adv, scan

    def build(self, device):
        self.char = Characteristic(
            uuids.TRANSFER_CHARACTERISTIC,
            Characteristic.Properties.NOTIFY | Characteristic.Properties.READ,
            Characteristic.READABLE,
            CharacteristicValue(read=lambda connection: self.text),
        )
        self.char.on("subscription", self.on_subscription)
        device.add_service(Service(uuids.TRANSFER_SERVICE, [self.char]))

    def on_subscription(self, connection, notify: bool, indicate: bool) -> None:
        emit("subscribed" if notify else "unsubscribed", char="transfer",
             peer=str(connection.peer_address))
        if notify:
            self.subscribers[connection.handle] = connection
            self.start_send(connection)
        else:
            self.subscribers.pop(connection.handle, None)
            self.cancel_sends(connection)

    def on_disconnection(self, connection, reason):
        self.subscribers.pop(connection.handle, None)
        self.locks.pop(connection.handle, None)
        self.cancel_sends(connection)

    def cancel_sends(self, connection) -> None:
        for task in self.sending.pop(connection.handle, set()):
            task.cancel()

    def start_send(self, connection) -> None:
        # A text that changes while one is being sent follows it (never interleaves).
        lock = self.locks.setdefault(connection.handle, asyncio.Lock())
        task = asyncio.get_running_loop().create_task(self.send(connection, self.text, lock))
        tasks = self.sending.setdefault(connection.handle, set())
        tasks.add(task)
        task.add_done_callback(tasks.discard)

    async def send(self, connection, text: bytes, lock: asyncio.Lock) -> None:
        async with lock:
            await self._send(connection, text)

    async def _send(self, connection, text: bytes) -> None:
        mtu = connection.att_mtu
        size = mtu - 3
        if self.args.chunk_size:
            size = min(size, self.args.chunk_size)
        chunks = [text[i:i + size] for i in range(0, len(text), size)]
        for chunk in chunks:
            await self.device.notify_subscriber(connection, self.char, chunk)
        await self.device.notify_subscriber(connection, self.char, b"EOM")
        emit("sent", peer=str(connection.peer_address), mtu=mtu, chunk_size=size,
             chunks=len(chunks), bytes=len(text))

    def cmd_text(self, cmd):
        self.text = cmd["text"].encode()
        emit("text", bytes=len(self.text))
        if cmd.get("send"):
            for connection in list(self.subscribers.values()):
                self.start_send(connection)


if __name__ == "__main__":
    p = common.base_parser(__doc__.splitlines()[0])
    p.add_argument("--name", default="lab-transfer")
    p.add_argument("--text", default=DEFAULT_TEXT)
    p.add_argument("--chunk-size", type=int, default=0, help="cap on the chunk size (0 = MTU-3)")
    common.main(Transfer, p.parse_args())
