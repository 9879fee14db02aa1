"""bluetoothd dies and comes back: the gateway reports the adapter unavailable, then rebuilds its view, scans again and sees the sensor again, without restarting."""

import asyncio
import os
import signal
import subprocess

ROWS = "C1"
TIMEOUT = 300
DISRUPTS_AIR = True  # the runner restarts its own bluetoothd afterwards

BLUETOOTHD = "/usr/libexec/bluetooth/bluetoothd"


async def run(lab):
    sensor = await lab.peer("sensor")
    dev = sensor.address.replace(":", "").upper()
    mqtt = await lab.mqtt(subscribe="gatt2mqtt/#")
    gateway = await lab.gateway(lab.bluez_gateway_config())
    await mqtt.expect(f"gatt2mqtt/{dev}/advertisement", timeout=120)

    # bluetoothd goes away.
    pids = [int(p) for p in subprocess.run(["pidof", "bluetoothd"], capture_output=True, text=True).stdout.split()]
    lab.check(pids, "bluetoothd is not running")
    mark = mqtt.mark()
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    await mqtt.expect("gatt2mqtt/bridge/lab/adapters", after=mark,
                      where=lambda m: all(a.get("state") != "poweredOn" for a in m.json()), timeout=60)
    await mqtt.expect("gatt2mqtt/bridge/lab/event", after=mark,
                      where=lambda m: m.json().get("type") == "bluetooth_unavailable", timeout=60)

    # It comes back: the gateway finds the adapter again and scans, on its own.
    await asyncio.sleep(2)
    mark = mqtt.mark()
    await lab.process("bluetoothd-again", [BLUETOOTHD, "-n"])
    await mqtt.expect("gatt2mqtt/bridge/lab/adapters", after=mark,
                      where=lambda m: any(a.get("id") == lab.adapter and a.get("state") == "poweredOn"
                                          and a.get("discovering") for a in m.json()), timeout=120)
    sensor.send("advertise")
    await mqtt.expect(f"gatt2mqtt/{dev}/advertisement", after=mark, timeout=120)
    lab.check(gateway.proc.returncode is None, "the gateway kept running")
