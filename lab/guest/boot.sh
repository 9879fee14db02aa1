#!/bin/bash
# Runs inside the VM (vng --exec): the host's files are visible read-only, RESULTS is the
# writable --rwdir. Hands over to the Python runner; its stdout (the scenario lines) reaches
# lab/run, everything else goes to RESULTS.
results=$1
lab=$(cd "$(dirname "$0")/.." && pwd)
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/usr/libexec/bluetooth
export PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 HOME=/root
cd "$results" || exit 1
# LAB_TIME_SCALE and friends, from lab/run (the VM does not inherit the host's environment).
[ -f "$results/lab-env.sh" ] && . "$results/lab-env.sh"
exec "$lab/.cache/venv/bin/python" -u "$lab/harness/runner.py" --results "$results" 2> "$results/guest.err"
