"""The gateway as the unprivileged user gatt2mqtt (as the Debian package makes it: its own group and `bluetooth`) on the system bus, with a BlueZ policy that grants other users nothing (Debian's bluetooth.conf without its `bluetooth` group and default-context holes, as distributions with a strict policy ship it): without gatt2mqtt's D-Bus policy, a clear AccessDenied in the log, a `bluetooth_refused` event and an unhealthy health_check naming it, no crash; with deploy/dbus/gatt2mqtt.conf installed and the bus reloaded, it recovers by itself: central read and notify on a sensor, the peripheral role's text served to a central, healthy; without CAP_NET_ADMIN the connected sensor's RSSI cannot be read from the link: said once (a connection_rssi_unavailable event, device/rssi answering not_permitted), the sensor stays present."""

import json
import re
import shutil
import subprocess
import time
from pathlib import Path

from labkit import uuids

ROWS = "C1 C4 C6 C7 C11 P1 P4"
TIMEOUT = 600

REPO = Path(__file__).resolve().parents[2]
POLICY = REPO / "deploy" / "dbus" / "gatt2mqtt.conf"
SYSTEM_D = Path("/etc/dbus-1/system.d")
USER = "gatt2mqtt"
TEXT = "served to a central by a gateway that is not root ✓"


def strict(conf: str) -> str:
    """Debian's bluetooth.conf without the holes it punches for other users: only root (and so
    bluetoothd) is let through."""
    for hole in (r'<policy group="bluetooth">.*?</policy>', r'<policy context="default">.*?</policy>'):
        conf = re.sub(hole, "", conf, flags=re.S)
    return conf


def sh(lab, *argv: str, check: bool = True) -> subprocess.CompletedProcess:
    r = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    lab.log("$", " ".join(argv), "->", r.returncode, (r.stdout + r.stderr).strip()[-300:])
    if check:
        lab.check(r.returncode == 0, f"{' '.join(argv)} failed: {r.stderr.strip()[-300:]}")
    return r


def reload_bus(lab) -> None:
    sh(lab, "dbus-send", "--system", "--print-reply", "--dest=org.freedesktop.DBus",
       "/org/freedesktop/DBus", "org.freedesktop.DBus.ReloadConfig")


def add_user(lab, mounts: list[str]) -> None:
    """The user the package's postinst creates, in the VM only: /etc/passwd and /etc/group are
    the host's (read-only), so copies with the user are mounted over them."""
    passwd = Path("/etc/passwd").read_text()
    group = Path("/etc/group").read_text()
    used = {int(line.split(":")[2]) for text in (passwd, group) for line in text.splitlines()
            if line.count(":") >= 3}
    uid = next(n for n in range(990, 100, -1) if n not in used)
    lines = [line + ("," if not line.endswith(":") else "") + USER
             if line.startswith("bluetooth:") else line for line in group.splitlines()]
    lab.check(any(line.startswith("bluetooth:") for line in lines), "no bluetooth group on this system")
    (lab.dir / "passwd").write_text(passwd + f"{USER}:x:{uid}:{uid}::/nonexistent:/usr/sbin/nologin\n")
    (lab.dir / "group").write_text("\n".join(lines) + f"\n{USER}:x:{uid}:\n")
    for name in ("passwd", "group"):
        sh(lab, "mount", "--bind", str(lab.dir / name), f"/etc/{name}")
        mounts.append(f"/etc/{name}")  # at once: unmounted whatever fails later
    lab.log(sh(lab, "id", USER).stdout.strip())


async def run(lab):
    policy_dir = lab.dir / "system.d"
    mounts: list[str] = []
    try:
        add_user(lab, mounts)
        # The strict bus: system.d as the host has it, bluetooth.conf without its holes, and
        # (for now) no gatt2mqtt.conf.
        shutil.copytree(SYSTEM_D, policy_dir)
        conf = (SYSTEM_D / "bluetooth.conf").read_text()
        (policy_dir / "bluetooth.conf").write_text(strict(conf))
        mounts.append(str(SYSTEM_D))  # (umount of a path not mounted is harmless)
        sh(lab, "mount", "--bind", str(policy_dir), str(SYSTEM_D))
        reload_bus(lab)
        denied = sh(lab, "setpriv", f"--reuid={USER}", f"--regid={USER}", "--init-groups", "--",
                    "dbus-send", "--system", "--print-reply", "--dest=org.bluez", "/",
                    "org.freedesktop.DBus.ObjectManager.GetManagedObjects", check=False)
        lab.check(denied.returncode != 0 and "AccessDenied" in denied.stderr,
                  f"the strict bus let {USER} reach bluetoothd: {denied.stderr.strip()[-200:]}")
        await scenario(lab, policy_dir)
    finally:
        for path in reversed(mounts):
            subprocess.run(["umount", path], capture_output=True)
        if str(SYSTEM_D) in mounts:
            subprocess.run(["dbus-send", "--system", "--print-reply", "--dest=org.freedesktop.DBus",
                            "/org/freedesktop/DBus", "org.freedesktop.DBus.ReloadConfig"],
                           capture_output=True)


async def health_check(mqtt, transaction: str) -> dict:
    mark = mqtt.mark()
    mqtt.publish("gatt2mqtt/bridge/lab/request/health_check", json.dumps({"transaction": transaction}))
    m = await mqtt.expect("gatt2mqtt/bridge/lab/response/health_check", after=mark,
                          where=lambda m: m.json().get("transaction") == transaction, timeout=30)
    return m.json().get("data", {})


async def scenario(lab, policy_dir: Path):
    sensor = await lab.peer("sensor", battery=61, hr_rate=5)
    dev = sensor.address.replace(":", "").upper()
    mqtt = await lab.mqtt(subscribe="gatt2mqtt/#")
    mqtt.publish("gatt2mqtt/bridge/lab/peripheral/text/set", TEXT, retain=True)
    gateway = await lab.gateway(lab.bluez_gateway_config([sensor.address], """\
    retry_min_delay: 1
    rssi_interval: 2
  gatt:
    formats: ["*/180f/2a19=decoded"]
peripheral:
  enabled: true
  local_name: lab-gw
"""), user=USER)

    # Without our policy: refused, clearly, everywhere a person looks; nothing crashes.
    event = await mqtt.expect("gatt2mqtt/bridge/lab/event",
                              where=lambda m: m.json().get("type") == "bluetooth_refused", timeout=120)
    data = event.json()["data"]
    lab.check(data.get("error") == "access_denied"
              and data.get("detail") == "org.freedesktop.DBus.Error.AccessDenied"
              and f"denies user {USER}" in data.get("message", "")
              and "gatt2mqtt.conf" in data.get("message", ""), f"refusal event: {event.text}")
    health = await health_check(mqtt, "denied")
    lab.check(health.get("healthy") is False
              and any("denies user" in r for r in health.get("reasons", [])), f"health: {health}")
    log = await gateway.wait_log(f"denies user {USER} access to bluetoothd")
    lab.check(re.search(rf"error.*denies user {USER} access to bluetoothd", log) is not None,
              "no AccessDenied error in the gateway's log")
    lab.check(gateway.running, "the gateway stopped")

    # The package's policy installed, the bus reloaded: the gateway recovers by itself.
    mark = mqtt.mark()
    shutil.copy(POLICY, policy_dir / "gatt2mqtt.conf")
    reload_bus(lab)
    reloaded = time.monotonic()
    back = await mqtt.expect("gatt2mqtt/bridge/lab/adapters", after=mark,
                             where=lambda m: any(a.get("state") == "poweredOn" for a in m.json()), timeout=60)
    lab.log(f"recovered: adapters back {back.t - reloaded:.1f} s after the bus reloaded with the policy "
            f"({reloaded - event.t:.1f} s after the refusal event)")
    await mqtt.expect(f"gatt2mqtt/{dev}/connection", where=lambda m: m.json().get("state") == "ready",
                      timeout=180)

    # C11 without CAP_NET_ADMIN: the link's RSSI cannot be read; said once, and why.
    refusal = await mqtt.expect("gatt2mqtt/bridge/lab/event",
                                where=lambda m: m.json().get("type") == "connection_rssi_unavailable",
                                timeout=60)
    lab.check(refusal.json()["data"].get("error") == "not_permitted"
              and "CAP_NET_ADMIN" in refusal.json()["data"].get("message", ""),
              f"link RSSI refusal: {refusal.text}")
    mark = mqtt.mark()
    mqtt.publish("gatt2mqtt/bridge/lab/request/device/rssi", json.dumps({"device": dev}))
    answer = await mqtt.expect("gatt2mqtt/bridge/lab/response/device/rssi", after=mark, timeout=30)
    lab.check(answer.json().get("error") == "not_permitted", f"device/rssi: {answer.text}")

    # C6: a read.
    battery = f"gatt2mqtt/{dev}/gatt/{uuids.BATTERY_SERVICE.lower()}/{uuids.BATTERY_LEVEL.lower()}"
    mark = mqtt.mark()
    mqtt.publish(f"{battery}/get", json.dumps({"transaction": "r1"}))
    result = await mqtt.expect(f"{battery}/result", after=mark, timeout=60)
    lab.check(result.json().get("status") == "ok", f"read: {result.text}")
    value = await mqtt.expect(battery, after=mark, timeout=30)
    lab.check(value.json().get("battery_level") == 61, f"decoded battery value: {value.text}")

    # C7: notifications.
    hr = f"gatt2mqtt/{dev}/gatt/{uuids.HEART_RATE_SERVICE.lower()}/{uuids.HEART_RATE_MEASUREMENT.lower()}"
    mark = mqtt.mark()
    mqtt.publish(f"{hr}/notify", "on", retain=True)
    result = await mqtt.expect(f"{hr}/result", after=mark, timeout=60)
    lab.check(result.json().get("status") == "ok", f"notify on: {result.text}")
    await mqtt.expect(hr, after=mark, where=lambda m: len(mqtt.received(hr, after=mark)) >= 5, timeout=60)

    # P1/P4: the peripheral role registered and serves the text to a central.
    await mqtt.expect("gatt2mqtt/bridge/lab/peripheral/state",
                      where=lambda m: m.json().get("state") == "advertising", timeout=120)
    central = await lab.peer("central", mtu=23, name="central-non-root")
    ev = await central.wait("text", timeout=180)
    lab.check(bytes.fromhex(ev["hex"]) == TEXT.encode(), f"text differs: {ev['text'][:60]!r}")

    refusals = [m for m in mqtt.received("gatt2mqtt/bridge/lab/event")
                if m.json().get("type") == "connection_rssi_unavailable"]
    lab.check(len(refusals) == 1, f"{len(refusals)} connection_rssi_unavailable events, not one")
    presence = mqtt.received(f"gatt2mqtt/{dev}/presence")
    lab.check(presence and presence[-1].json().get("state") == "present",
              f"the connected sensor is not present: {presence[-1].text if presence else None}")

    # Healthy now, as that user (the reasons cleared with the refusal).
    health = await health_check(mqtt, "allowed")
    lab.check(health.get("healthy") is True, f"health: {health}")
    lab.check(gateway.running, "the gateway stopped")
    mqtt.publish(f"{hr}/notify", "", retain=True)
    mqtt.publish("gatt2mqtt/bridge/lab/peripheral/text/set", "", retain=True)
