"""The harness itself: a scenario with one assertion flipped (harness/fixtures/broken-flipped.py) is reported failed with its reason and logs kept; the same scenario unflipped passes."""

import asyncio
import json
import os
import sys
from pathlib import Path

ROWS = "LAB"
TIMEOUT = 300

HARNESS = Path(__file__).resolve().parent.parent / "harness"
FIXTURE = HARNESS / "fixtures" / "broken-flipped.py"


async def run_fixture(lab, name, level):
    """Run the fixture exactly as the runner runs a scenario: scenario_main.py in a process."""
    directory = lab.dir / name
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-u", str(HARNESS / "scenario_main.py"),
        "--file", str(FIXTURE), "--dir", str(directory),
        env=dict(os.environ, LAB_FIXTURE_LEVEL=str(level)),
        stdout=asyncio.subprocess.DEVNULL, stderr=open(lab.dir / f"{name}.err", "wb"))
    status = await asyncio.wait_for(proc.wait(), lab.timeout(240))
    result = json.loads((directory / "result.json").read_text())
    lab.log(name, "exit", status, result)
    return status, result, directory


async def run(lab):
    status, result, d = await run_fixture(lab, "flipped", 88)
    lab.check(status == 1, f"the flipped scenario exited {status}, not 1")
    lab.check(result["status"] == "failed", f"the flipped scenario was reported {result['status']}")
    lab.check("battery level 87, expected 88" in result["message"],
              f"the failure reason is not the flipped assertion: {result['message']!r}")
    log = (d / "scenario.log").read_text()
    lab.check("Traceback" in log and "AssertionError" in log, "scenario.log lacks the traceback")
    peer_log = (d / "peer-sensor.log").read_text()
    lab.check("exit status" in peer_log, "the peer was not stopped (no exit status in its log)")
    lab.check((d / "peer-sensor.events").read_text().count('"event": "ready"') == 1,
              "the peer's events were not kept")

    status, result, _ = await run_fixture(lab, "unflipped", 87)
    lab.check(status == 0 and result["status"] == "passed",
              f"the unflipped scenario did not pass: {status} {result}")
