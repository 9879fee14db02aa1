"""Bumble centrals <-> a GATT server registered with bluetoothd (GattManager1 + LE advertisement): scan for the transfer service, connect, ATT MTU 23 and 100, subscribe, reassemble MTU-3 chunks up to EOM; two centrals on the controller at once."""

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

    # A central with ATT MTU 100 alone.
    mark = server.mark()
    solo = await lab.peer("central", mtu=100)
    acquired = await server.wait("acquired", after=mark, timeout=90)
    lab.check(acquired["mtu"] == 100, f"bluetoothd reported MTU {acquired['mtu']} to the server")
    check_text(lab, await solo.wait("text", timeout=90), TEXT, 100)
    await solo.stop()
    await server.wait("released", after=mark, timeout=60)

    # A central with the default ATT MTU 23 (20-byte chunks) ...
    mark = server.mark()
    a = await lab.peer("central", mtu=23)
    acquired = await server.wait("acquired", after=mark, timeout=90)
    lab.check(acquired["mtu"] == 23, f"bluetoothd reported MTU {acquired['mtu']} to the server")
    check_text(lab, await a.wait("text", timeout=90), TEXT, 23)

    # ... and a second one subscribed at the same time: the controller holds both links as
    # peripheral, and a text written once to the notify socket reaches both.
    b = await lab.peer("central", mtu=23)
    await b.wait("subscribed", timeout=90)
    lab.log(f"AcquireNotify calls: {len(server.events('acquired'))} "
            "(BlueZ 5.66 acquires only for the first subscriber)")
    mark_a, mark_b = a.mark(), b.mark()
    server.send("text", text=PUSHED, send=True)
    for c, m in ((a, mark_a), (b, mark_b)):
        check_text(lab, await c.wait("text", after=m, timeout=90), PUSHED, 23)
