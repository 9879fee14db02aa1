"""The gateway reassembles the transfer peripheral's texts: 4 KiB of multi-byte UTF-8 in 20-byte chunks up to EOM arrives as one message on <dev>/transfer, byte for byte; a second text pushed later is a second message."""

import asyncio

from labkit import uuids

ROWS = "C9"
TIMEOUT = 360

# Characters of 1, 2, 3 and 4 bytes: 20-byte chunks split many of them.
WORDS = "Grüße aus dem Labor — ünïcödé ✓ 日本語のテキスト 🚀 Ελληνικά ½ ∑ "


def text_of(size: int, words: str) -> str:
    """A text of exactly `size` UTF-8 bytes (ASCII padding at the end)."""
    out, n, i = [], 0, 0
    while True:
        ch = words[i % len(words)]
        if n + len(ch.encode()) > size:
            break
        out.append(ch)
        n += len(ch.encode())
        i += 1
    return "".join(out) + "." * (size - n)


FIRST = text_of(4096, WORDS)
SECOND = text_of(1500, "Second text, pushed later: ✓✓✓ ünïcödé 🚀 ")


async def run(lab):
    assert len(FIRST.encode()) == 4096 and len(SECOND.encode()) == 1500
    # ATT MTU 23: the peer sends 20-byte chunks (205 of them for the first text).
    transfer = await lab.peer("transfer", text=FIRST, max_mtu=23)
    dev = transfer.address.replace(":", "").upper()
    mqtt = await lab.mqtt(subscribe="gatt2mqtt/#")
    await lab.gateway(lab.bluez_gateway_config(
        extra=f'  connect:\n    uuids: ["{uuids.TRANSFER_SERVICE.lower()}"]\n'))
    topic = f"gatt2mqtt/{dev}/transfer"
    # Connected because it advertises the transfer service; subscribed by the gateway itself.
    await mqtt.expect(f"gatt2mqtt/{dev}/connection", where=lambda m: m.json().get("state") == "ready",
                      timeout=180)
    await transfer.wait("subscribed", timeout=60)
    sent = await transfer.wait("sent", timeout=120)
    lab.log(f"peer sent {sent}")
    lab.check(sent["mtu"] == 23 and sent["chunks"] == 205 and sent["bytes"] == 4096, f"peer sent {sent}")
    first = await mqtt.expect(topic, timeout=60)
    lab.check(first.payload == FIRST.encode(),
              f"first text differs: {len(first.payload)} bytes, first difference at "
              f"{next((i for i, (a, b) in enumerate(zip(first.payload, FIRST.encode())) if a != b), '-')}")
    lab.check(not first.retain, "transfer texts are not retained")

    # A second text pushed while subscribed: a second message, equal byte for byte.
    mark = mqtt.mark()
    mark_peer = transfer.mark()
    transfer.send("text", text=SECOND, send=True)
    await transfer.wait("sent", after=mark_peer, timeout=120)
    second = await mqtt.expect(topic, after=mark, timeout=60)
    lab.check(second.payload == SECOND.encode(), f"second text differs: {second.payload[:60]!r}")
    await asyncio.sleep(2)
    texts = mqtt.received(topic)
    lab.check(len(texts) == 2, f"{len(texts)} messages on {topic}, expected 2")
    subscriptions = transfer.events("subscribed")
    lab.check(len(subscriptions) == 1, f"{len(subscriptions)} subscriptions to the transfer characteristic")
