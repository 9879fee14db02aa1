"""bleak through bluetoothd <-> the transfer peripheral: subscribe, reassemble MTU-3 chunks up to EOM (ATT MTU 23 and 517), a new text pushed while subscribed, long read."""

import asyncio

from labkit import uuids

ROWS = "LAB"
TIMEOUT = 300

TEXT = ("A text longer than one chunk, with multi-byte UTF-8 — Grüße, ünïcödé ✓ — so that "
        "characters straddle chunk boundaries. " * 4)
SECOND = "Second text, pushed while subscribed: ✓✓✓ " * 3


class Receiver:
    def __init__(self):
        self.buffer = bytearray()
        self.sizes: list[int] = []
        self.texts: list[tuple[bytes, list[int]]] = []
        self.changed = asyncio.Event()

    def __call__(self, _, data):
        data = bytes(data)
        if data == b"EOM":
            self.texts.append((bytes(self.buffer), self.sizes))
            self.buffer, self.sizes = bytearray(), []
            self.changed.set()
        else:
            self.buffer += data
            self.sizes.append(len(data))

    async def next(self, lab, n):
        while len(self.texts) < n:
            self.changed.clear()
            await asyncio.wait_for(self.changed.wait(), lab.timeout(60))
        return self.texts[n - 1]


async def one(lab, max_mtu):
    peer = await lab.peer("transfer", text=TEXT, max_mtu=max_mtu or None)
    device = await lab.find(peer.address)
    char = uuids.long_form(uuids.TRANSFER_CHARACTERISTIC)
    async with lab.connect(device) as client:
        rx = Receiver()
        await client.start_notify(char, rx)
        sent = await peer.wait("sent")
        text, sizes = await rx.next(lab, 1)
        expected_chunk = (max_mtu or 517) - 3
        lab.log(f"max_mtu {max_mtu}: link mtu {sent['mtu']}, {len(sizes)} chunks {sizes}")
        lab.check(sent["mtu"] == (max_mtu or 517), f"link ATT MTU {sent['mtu']}")
        lab.check(text == TEXT.encode(), f"reassembled text differs: {text[:60]!r}...")
        lab.check(all(s == expected_chunk for s in sizes[:-1]) and 0 < sizes[-1] <= expected_chunk,
                  f"chunk sizes {sizes}, expected {expected_chunk} (MTU-3) but the last")
        lab.check(len(sizes) == sent["chunks"], f"peer sent {sent['chunks']} chunks, got {len(sizes)}")

        # A new text while subscribed is pushed at once and arrives whole.
        peer.send("text", text=SECOND, send=True)
        text2, _ = await rx.next(lab, 2)
        lab.check(text2 == SECOND.encode(), f"second text differs: {text2[:60]!r}")

        await client.stop_notify(char)
        await peer.wait("unsubscribed")
        value = await client.read_gatt_char(char)
        lab.check(bytes(value) == SECOND.encode(), f"long read returned {len(value)} bytes")


async def run(lab):
    await one(lab, 23)    # the default ATT MTU: 20-byte chunks
    await one(lab, None)  # bluetoothd's 517: one chunk for this text
