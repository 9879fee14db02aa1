"""Bumble centrals <-> a GATT server registered with bluetoothd (GattManager1 + LE advertisement): scan for the transfer service, connect, ATT MTU 23 and 100, subscribe, reassemble MTU-3 chunks up to EOM; two centrals on the controller at once."""

from labkit import uuids  # noqa: F401

ROWS = "LAB"
TIMEOUT = 300

TEXT = "Served by bluetoothd through GattManager1: Grüße ✓ — " * 4
PUSHED = "Pushed to every subscribed central: ✓ " * 3


def check_text(lab, event, text, mtu):
    sizes = event["chunk_sizes"]
    lab.check(event["mtu"] == mtu, f"central's link MTU {event['mtu']}, wanted {mtu}")
    lab.check(bytes.fromhex(event["hex"]) == text.encode(), f"text differs: {event['text'][:60]!r}")
    lab.check(all(s == mtu - 3 for s in sizes[:-1]) and 0 < sizes[-1] <= mtu - 3,
              f"chunk sizes {sizes} for MTU {mtu}")


async def run(lab):
    server = await lab.peer("bluez_transfer_server", text=TEXT)

    # One central at a time, two MTUs.
    for mtu in (100, 23):
        mark = server.mark()
        central = await lab.peer("central", mtu=mtu)
        acquired = await server.wait("acquired", after=mark, timeout=90)
        lab.check(acquired["mtu"] == mtu, f"bluetoothd reported MTU {acquired['mtu']} to the server")
        text = await central.wait("text", timeout=90)
        check_text(lab, text, TEXT, mtu)
        lab.log(f"MTU {mtu}: {text['chunks']} chunks {text['chunk_sizes']}")
        await central.stop()
        await server.wait("released", after=mark, timeout=60)

    # Two centrals subscribed at once (the controller holds both links as peripheral); a text
    # written once to the notify socket reaches both.
    a = await lab.peer("central", mtu=23)
    await a.wait("text", timeout=90)
    b = await lab.peer("central", mtu=23)
    await b.wait("subscribed", timeout=90)
    acquisitions = len(server.events("acquired"))
    lab.log(f"AcquireNotify calls so far: {acquisitions} (BlueZ acquires once per characteristic)")
    mark_a, mark_b = a.mark(), b.mark()
    server.send("text", text=PUSHED, send=True)
    for c, mark in ((a, mark_a), (b, mark_b)):
        e = await c.wait("text", after=mark, timeout=90)
        check_text(lab, e, PUSHED, 23)
