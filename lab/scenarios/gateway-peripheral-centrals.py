"""Two Bumble centrals subscribed to the gateway's transfer service at once both receive every text complete (the first alone through the notification socket; once the second connects, the socket is let go of and texts go as signals to both); a central disconnecting mid-transfer is reported (`aborted`, or `sent` when the socket had already handed every chunk to bluetoothd) and the gateway goes on serving the next central; with `peripheral.several_centrals: socket` the socket stays with two centrals and both get the text intact in 20-byte chunks."""

ROWS = "P4 P5"
TIMEOUT = 600

TEXT_SET = "gatt2mqtt/bridge/lab/peripheral/text/set"

EVENT = "gatt2mqtt/bridge/lab/peripheral/event"


async def run(lab):
    mqtt = await lab.mqtt(subscribe="gatt2mqtt/bridge/lab/peripheral/#")
    first = ("Zwei Zentralen, ein Text ✓ " * 40).encode()
    mqtt.publish(TEXT_SET, first, retain=True)
    gateway = await lab.gateway(lab.peripheral_gateway_config())
    await mqtt.expect("gatt2mqtt/bridge/lab/peripheral/state",
                      where=lambda m: m.json().get("state") == "advertising", timeout=120)

    # Two centrals at once: each gets the text when it subscribes (the second subscription
    # sends it again to both, which is a complete text too).
    mark = mqtt.mark()
    a = await lab.peer("central", mtu=23, name="central-a")
    ev = await a.wait("text", timeout=120)
    lab.check(bytes.fromhex(ev["hex"]) == first, "central a: first text differs")
    sent = await mqtt.expect(EVENT, after=mark, where=lambda m: m.json().get("type") == "sent", timeout=60)
    lab.check(sent.json().get("path") == "socket", f"one central, not through the socket: {sent.text}")
    b = await lab.peer("central", mtu=23, name="central-b")
    ev = await b.wait("text", timeout=120)
    lab.check(bytes.fromhex(ev["hex"]) == first, "central b: first text differs")
    for round_ in range(3):
        text = (f"round {round_}: pushed to both ✓ " * (20 + 30 * round_)).encode()
        marks = (a.mark(), b.mark())
        mark = mqtt.mark()
        mqtt.publish(TEXT_SET, text, retain=True)
        sent = await mqtt.expect(EVENT, after=mark, timeout=120,
                                 where=lambda m, n=len(text): m.json().get("type") == "sent" and m.json().get("bytes") == n)
        # Two centrals connected: BlueZ would not tell the socket's owner about the second.
        lab.check(sent.json().get("path") == "signals", f"round {round_} with two centrals: {sent.text}")
        for central, mark in zip((a, b), marks):
            # (a's copy of the first text, sent again for b's subscription, may still be arriving)
            await central.wait("text", after=mark, timeout=120,
                               where=lambda e, text=text: bytes.fromhex(e["hex"]) == text)
    for central in (a, b):
        for ev in central.events("text"):
            got = bytes.fromhex(ev["hex"])
            lab.check(got == first or got.startswith(b"round "), f"{central.name} got a mixed text: {got[:40]!r}")
    await a.stop()
    await b.stop()

    # P5: the only central goes away in the middle of a 64 KiB transfer: aborted, not sent.
    big = ("Abgebrochen? ✓ " * 5000).encode()[:65536]
    c = await lab.peer("central", mtu=23, name="central-c", report_chunks=True)
    await c.wait("text", timeout=120)
    mark = mqtt.mark()
    await lab.publish_file(TEXT_SET, big, "big")
    await c.wait("chunk", where=lambda e: e["n"] >= 200, timeout=120)
    await c.stop()
    # Through the socket, bluetoothd may have taken every chunk already (it queues them for the
    # link): then the transfer was `sent` from the gateway's side. Otherwise it is `aborted`.
    ended = await mqtt.expect(EVENT, after=mark, timeout=120,
                              where=lambda m: m.json().get("type") == "aborted"
                              or (m.json().get("type") == "sent" and m.json().get("bytes") == len(big)))
    lab.log(f"the cut transfer: {ended.text}")
    if ended.json().get("type") == "sent":
        lab.check(ended.json().get("path") == "socket",
                  f"a transfer the central did not get was reported sent on the signal path: {ended.text}")

    # The gateway is fine: still advertising, and a new central gets the whole text.
    # (d may subscribe while bluetoothd still streams c's transfer into the dead link through
    # the socket, and then get that transfer's tail first; the whole text follows.)
    d = await lab.peer("central", mtu=23, name="central-d")
    ev = await d.wait("text", timeout=240, where=lambda e: bytes.fromhex(e["hex"]) == big)
    for early in d.events("text"):
        if bytes.fromhex(early["hex"]) != big:
            lab.log(f"central d first got a {early['bytes']}-byte tail")
    lab.check(gateway.proc.returncode is None, "the gateway kept running")
    await d.stop()
    await gateway.stop()

    # `peripheral.several_centrals: socket`: the socket stays with two centrals; the second
    # one (MTU 23, never reads: BlueZ 5.66 reports neither its subscription nor its MTU)
    # counts as a subscriber once connected for 5 s, chunks fall from the first one's 244
    # bytes to 20, and both get every text intact.
    mqtt.publish(TEXT_SET, first, retain=True)
    mark = mqtt.mark()
    gateway = await lab.gateway(lab.peripheral_gateway_config("  several_centrals: socket\n"),
                                config_name="gatt2mqtt-socket.yaml")
    await mqtt.expect("gatt2mqtt/bridge/lab/peripheral/state", after=mark,
                      where=lambda m: m.json().get("state") == "advertising", timeout=120)
    a = await lab.peer("central", mtu=247, name="central-e")
    ev = await a.wait("text", timeout=120, where=lambda e: bytes.fromhex(e["hex"]) == first)
    lab.check(max(ev["chunk_sizes"]) == 244, f"central e alone, MTU 247: chunks of {max(ev['chunk_sizes'])}")
    b = await lab.peer("central", mtu=23, name="central-f")
    await b.wait("text", timeout=120, where=lambda e: bytes.fromhex(e["hex"]) == first)
    text = ("shared socket ✓ " * 300).encode()
    marks = (a.mark(), b.mark())
    mark = mqtt.mark()
    mqtt.publish(TEXT_SET, text, retain=True)
    sent = await mqtt.expect(EVENT, after=mark, timeout=120,
                             where=lambda m: m.json().get("type") == "sent" and m.json().get("bytes") == len(text))
    lab.check(sent.json().get("path") == "socket", f"two centrals, several_centrals socket: {sent.text}")
    lab.check(sent.json().get("chunk_size") == 20, f"chunks for an unknown MTU are 20 bytes: {sent.text}")
    for central, m in zip((a, b), marks):
        ev = await central.wait("text", after=m, timeout=120, where=lambda e: e["bytes"] >= len(text) // 2)
        lab.check(bytes.fromhex(ev["hex"]) == text, f"{central.name}: the text through the shared socket differs")
        lab.check(max(ev["chunk_sizes"]) == 20, f"{central.name} got chunks over 20 bytes")
    await a.stop()
    await b.stop()
    lab.check(gateway.proc.returncode is None, "the gateway kept running")
