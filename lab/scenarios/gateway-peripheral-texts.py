"""The gateway's peripheral role serves MQTT texts to a Bumble central: advertised transfer service, texts of 0, 1, 19, 20, 21 bytes, 4 KiB and 64 KiB (multi-byte UTF-8) reassembled byte for byte at ATT MTU 23 and 247 through the notification socket (AcquireNotify: chunks of exactly MTU-3 without a read telling the MTU), each new text while subscribed a new complete message, chunks never above MTU-3, `sent` events, retained state."""

ROWS = "P1 P2 P3 P4 P6"
TIMEOUT = 900

TEXT_SET = "gatt2mqtt/bridge/lab/peripheral/text/set"



def text_of(size: int) -> bytes:
    """`size` bytes of UTF-8 with multi-byte characters (a cut character becomes dots)."""
    unit = "Grüße aus dem Labor ✓ 東京 🚀 ".encode()
    data = (unit * (size // len(unit) + 1))[:size]
    whole = data.decode("utf-8", "ignore").encode()
    return whole + b"." * (size - len(whole))


async def run(lab):
    mqtt = await lab.mqtt(subscribe="gatt2mqtt/bridge/lab/peripheral/#")
    current = text_of(200)
    mqtt.publish(TEXT_SET, current, retain=True)
    gateway = await lab.gateway(lab.peripheral_gateway_config("  local_name: lab-gw\n"))

    # P1/P2/P3: registered and advertising; the state is retained.
    state = await mqtt.expect("gatt2mqtt/bridge/lab/peripheral/state",
                              where=lambda m: m.json().get("state") == "advertising", timeout=120)
    body = state.json()
    lab.check(body.get("service") == "e20a39f4-73f5-4bc4-a12f-17d1ad07a961", f"state: {state.text}")
    lab.check(body.get("characteristic") == "08590f7e-db05-467e-8757-72f6faeb13d4", f"state: {state.text}")
    late = await lab.mqtt("late", subscribe="gatt2mqtt/bridge/lab/peripheral/state")
    m = await late.expect("gatt2mqtt/bridge/lab/peripheral/state", timeout=30)
    lab.check(m.retain, "the peripheral state is retained")

    sizes = [0, 1, 19, 20, 21, 4096, 65536]
    for mtu in (23, 247):
        # P4: a central finds the service by its advertised UUID, subscribes, gets the current
        # text (the last one published).
        before = mqtt.mark()
        central = await lab.peer("central", mtu=mtu, name=f"central-mtu{mtu}")
        ev = await central.wait("text", timeout=180)
        lab.check(ev["mtu"] == mtu, f"central MTU {ev['mtu']}, wanted {mtu}")
        lab.check(bytes.fromhex(ev["hex"]) == current, f"MTU {mtu}: current text differs: {ev['text'][:60]!r}")
        # Its `sent` event can reach MQTT after the central has the text: taken before the
        # first mark below, so that each later `sent` is the new text's.
        await mqtt.expect("gatt2mqtt/bridge/lab/peripheral/event", after=before, timeout=60,
                          where=lambda m: m.json().get("type") == "sent"
                          and m.json().get("bytes") == len(current))
        # P6: every new text while subscribed is a new, complete message.
        for size in sizes:
            text = text_of(size)
            mark = central.mark()
            mark_mqtt = mqtt.mark()
            await lab.publish_file(TEXT_SET, text, f"mtu{mtu}-{size}")
            current = text
            ev = await central.wait("text", after=mark, timeout=240 if size > 10000 else 90)
            got = bytes.fromhex(ev["hex"])
            lab.check(got == text, f"MTU {mtu}, {size} bytes: got {len(got)} bytes, differs")
            chunk_sizes = ev["chunk_sizes"]
            lab.check(all(0 < s <= mtu - 3 for s in chunk_sizes),
                      f"MTU {mtu}, {size} bytes: chunk sizes above MTU-3: {sorted(set(chunk_sizes))}")
            sent = await mqtt.expect("gatt2mqtt/bridge/lab/peripheral/event", after=mark_mqtt,
                                     where=lambda m: m.json().get("type") == "sent", timeout=60)
            lab.check(sent.json().get("bytes") == size, f"sent event: {sent.text}")
            # One central: the notification socket, with the MTU bluetoothd told in AcquireNotify.
            lab.check(sent.json().get("path") == "socket", f"not through the socket: {sent.text}")
            if size > mtu:
                lab.check(max(chunk_sizes) == mtu - 3,
                          f"MTU {mtu}, {size} bytes: chunks of {max(chunk_sizes)}, not MTU-3")
            lab.log(f"MTU {mtu}: {size} bytes in {len(chunk_sizes)} chunks")
        await central.stop()
    lab.check(gateway.proc.returncode is None, "the gateway kept running")
