"""bluetoothd dies and comes back under the gateway's peripheral role: the state goes `unavailable`, then the service and advertisement are registered again by themselves and a new central receives the text; no gateway restart."""

import asyncio
import os
import signal
import subprocess

ROWS = "P1"
TIMEOUT = 400
DISRUPTS_AIR = True  # the runner restarts its own bluetoothd afterwards

BLUETOOTHD = "/usr/libexec/bluetooth/bluetoothd"
TEXT_SET = "gatt2mqtt/bridge/lab/peripheral/text/set"
STATE = "gatt2mqtt/bridge/lab/peripheral/state"


async def run(lab):
    mqtt = await lab.mqtt(subscribe="gatt2mqtt/bridge/lab/peripheral/#")
    text = ("Nach dem Neustart ✓ " * 30).encode()
    mqtt.publish(TEXT_SET, text, retain=True)
    gateway = await lab.gateway(lab.peripheral_gateway_config())
    await mqtt.expect(STATE, where=lambda m: m.json().get("state") == "advertising", timeout=120)
    before = await lab.peer("central", mtu=23, name="central-before")
    ev = await before.wait("text", timeout=120)
    lab.check(bytes.fromhex(ev["hex"]) == text, "text before the restart differs")
    await before.stop()

    pids = [int(p) for p in subprocess.run(["pidof", "bluetoothd"], capture_output=True, text=True).stdout.split()]
    lab.check(pids, "bluetoothd is not running")
    mark = mqtt.mark()
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    await mqtt.expect(STATE, after=mark, where=lambda m: m.json().get("state") == "unavailable", timeout=60)

    await asyncio.sleep(2)
    mark = mqtt.mark()
    await lab.process("bluetoothd-again", [BLUETOOTHD, "-n"])
    await mqtt.expect(STATE, after=mark, where=lambda m: m.json().get("state") == "advertising", timeout=120)
    after = await lab.peer("central", mtu=23, name="central-after")
    ev = await after.wait("text", timeout=120)
    lab.check(bytes.fromhex(ev["hex"]) == text, "text after the restart differs")
    lab.check(gateway.proc.returncode is None, "the gateway kept running")
