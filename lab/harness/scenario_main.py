"""Run one scenario file in its own process (so a hung scenario can be killed cleanly).

    scenario_main.py --file lab/scenarios/NAME.py --dir RESULTS/NAME [--gateway PATH]

Writes RESULTS/NAME/result.json ({"status": "passed"|"failed", "message": ...}); exit status 0
when passed.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import logging
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from labkit import Lab  # noqa: E402
from procs import LabError, scaled  # noqa: E402


def load(path: Path):
    spec = importlib.util.spec_from_file_location(f"scenario_{path.stem.replace('-', '_')}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


async def main(args) -> dict:
    directory = Path(args.dir)
    directory.mkdir(parents=True, exist_ok=True)
    logging.basicConfig(filename=directory / "python.log", level=logging.INFO,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    t0 = time.monotonic()
    lab = Lab(Path(args.file).stem, directory, args.gateway)
    result = {"status": "failed", "message": ""}
    timeout = scaled(180)
    try:
        module = load(Path(args.file))
        timeout = scaled(getattr(module, "TIMEOUT", 180))
        lab.log("scenario", args.file, "timeout", timeout)
        await asyncio.wait_for(module.run(lab), timeout)
        result = {"status": "passed", "message": ""}
    except asyncio.TimeoutError as e:
        if time.monotonic() - t0 >= timeout * 0.99:
            result["message"] = f"timed out after {timeout:.0f} s (TIMEOUT in the scenario file)"
        else:
            tb = traceback.extract_tb(e.__traceback__)
            where = next((f for f in reversed(tb) if "/scenarios/" in f.filename or "/fixtures/" in f.filename), tb[-1])
            result["message"] = f"a wait timed out at {Path(where.filename).name}:{where.lineno}: {where.line}"
        lab.log("TIMEOUT\n" + traceback.format_exc())
    except LabError as e:
        result["message"] = str(e) or "check failed"
        lab.log("FAILED\n" + traceback.format_exc())
    except AssertionError as e:
        tb = traceback.extract_tb(e.__traceback__)[-1]
        result["message"] = f"assertion failed at {Path(tb.filename).name}:{tb.lineno}: {e or tb.line}"
        lab.log("FAILED\n" + traceback.format_exc())
    except BaseException as e:  # noqa: BLE001 - any crash is a failed scenario
        result["message"] = f"{type(e).__name__}: {e}"
        lab.log("ERROR\n" + traceback.format_exc())
    finally:
        try:
            await asyncio.wait_for(lab.close(), scaled(60))
        except Exception as e:  # noqa: BLE001
            lab.log("teardown error:", repr(e))
    result["seconds"] = round(time.monotonic() - t0, 1)
    return result


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--file", required=True)
    p.add_argument("--dir", required=True)
    p.add_argument("--gateway")
    a = p.parse_args()
    r = asyncio.run(main(a))
    (Path(a.dir) / "result.json").write_text(json.dumps(r))
    sys.exit(0 if r["status"] == "passed" else 1)
