"""`gatt2mqtt scan --json` prints the advertisements bluetoothd reports, then stops after --duration."""

import asyncio
import json

ROWS = "C2"
TIMEOUT = 180


async def run(lab):
    if not lab.gateway_path:
        raise AssertionError("this scenario needs the gateway: run lab/run --gateway PATH")
    sensor = await lab.peer("sensor")
    scan = await lab.process("scan", [lab.gateway_path, "scan", "--json", "--adapter", lab.adapter,
                                      "--duration", "25"])
    log = lab.dir / "scan.log"
    found = None
    deadline = asyncio.get_running_loop().time() + lab.timeout(90)
    while found is None and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.5)
        for line in log.read_text(errors="replace").splitlines():
            if line.startswith("{"):
                body = json.loads(line)
                if body.get("id") == sensor.address.upper() and body.get("name") == "lab-sensor":
                    found = body
                    break
    lab.check(found is not None, f"the sensor never showed up in `gatt2mqtt scan`:\n{log.read_text()[-2000:]}")
    lab.check("180f" in found.get("uuids", []), f"uuids {found.get('uuids')}")
    code = await asyncio.wait_for(scan.proc.wait(), lab.timeout(90))
    lab.check(code == 0, f"gatt2mqtt scan exited with {code}")
