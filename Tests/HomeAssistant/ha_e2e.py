"""gatt2mqtt in a real Home Assistant (issue 18): Home Assistant 2024.3.3 headless with an MQTT
config entry pointing at a private mosquitto, the gateway on the simulated radio. Through Home
Assistant's own REST and WebSocket APIs it checks that the simulated devices' entities appear
with the right device classes, units and values, that a value changes, that the peripheral's
text entity reaches a simulated central, that a button writes a characteristic, that the
configs come again on Home Assistant's birth message, and that entities turn unavailable when
the gateway is killed (its will).

Run by Tests/HomeAssistant/test (which installs Home Assistant); prints "N passed, N failed".
"""

import asyncio
import json
import os
import signal
import sys
import time

import aiohttp
import paho.mqtt.client as mqtt
import requests

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "PythonSupport"))
from e2e import Run, free_port, wait_for  # noqa: E402

GATEWAY = sys.argv[1]
HASS = sys.argv[2]
ARTIFACTS = sys.argv[3] if len(sys.argv) > 3 else None
GW = "hatest"
WRITE_CHR = "08590f7e-db05-467e-8757-72f6faeb13d5"
ACTUATOR_SVC = "5a1d0000-6a63-4b3c-9c5e-3b5c7d2a0001"
ACTUATOR_CMD = "5a1d0001-6a63-4b3c-9c5e-3b5c7d2a0001"

run = Run("homeassistant")
check, start, work, tail = run.check, run.start, run.work, run.tail


def finish():
    if run.failed:
        log = os.path.join(work, "config", "home-assistant.log")
        if os.path.exists(log):
            print("--- Home Assistant's errors and warnings")
            with open(log) as f:
                print("".join(line for line in f if " ERROR " in line or " WARNING " in line)[-4000:])
    run.finish(ARTIFACTS, keep=(".log",), failure_logs=("gateway.log", "hass.log", "mosquitto.log"))


# --- the broker -----------------------------------------------------------------------------
broker_port = run.broker()

def scenario():
    global observer, seen, token, headers, base, gateway
    # An observer of the broker, for what Home Assistant does not show.
    seen = []


    def on_message(client, userdata, message):
        seen.append((message.topic, message.payload, message.retain, time.monotonic()))


    observer = mqtt.Client(client_id="ha-e2e-observer")
    observer.on_message = on_message
    observer.connect("127.0.0.1", broker_port)
    observer.subscribe([("gatt2mqtt/#", 0), ("homeassistant/#", 0)])
    observer.loop_start()

    # --- the gateway ------------------------------------------------------------------------------
    def start_gateway():
        world = os.path.join(work, "world.yaml")
        with open(world, "w") as f:
            f.write(
                "seed: 7\n"
                "advertising_interval: 0.5\n"
                "devices:\n"
                "  - {kind: thermometer, name: sim-thermometer}\n"
                "  - {kind: battery, name: sim-battery}\n"
                "  - {kind: heart_rate, name: sim-heart-rate, notify_rate: 2}\n"
                "  - {kind: actuator, name: sim-actuator}\n"
                "centrals:\n"
                "  - {mtu: 100, subscribe_after: 1, stay: 0, echo: true}\n"
            )
        return start(
            "gateway",
            [GATEWAY, "run", "--radio", "simulated", "--world", world,
             "--mqtt.host", "127.0.0.1", "--mqtt.port", str(broker_port), "--mqtt.keepalive", "5",
             "--gateway.id", GW, "--gateway.health_interval", "2",
             "--peripheral.enabled", "true", "--peripheral.write_characteristic", WRITE_CHR,
             "--bluetooth.connect.names", "sim-heart-rate,sim-actuator",
             "--bluetooth.gatt.notify", "*/180d/2a37",
             "--homeassistant.controls", f"*/{ACTUATOR_SVC}/{ACTUATOR_CMD}=button"],
        )


    # Started before Home Assistant when GATEWAY_FIRST=1: Home Assistant then finds every
    # config already retained, in the broker's order.
    gateway_first = os.environ.get("GATEWAY_FIRST") == "1"
    if gateway_first:
        gateway = start_gateway()
        time.sleep(5)

    # --- Home Assistant ---------------------------------------------------------------------------
    http_port = free_port()
    config = os.path.join(work, "config")
    os.makedirs(os.path.join(config, ".storage"))
    with open(os.path.join(config, "configuration.yaml"), "w") as f:
        f.write(
            "homeassistant: {name: t, latitude: 0, longitude: 0, elevation: 0, unit_system: metric,"
            " time_zone: UTC, country: US, currency: EUR}\n"
            f"http: {{server_host: 127.0.0.1, server_port: {http_port}}}\n"
            "logger: {default: warning, logs: {homeassistant.components.mqtt: info}}\n"
        )
    # MQTT has no YAML configuration since 2023.4: the config entry is written beforehand.
    with open(os.path.join(config, ".storage", "core.config_entries"), "w") as f:
        json.dump(
            {
                "version": 1, "minor_version": 1, "key": "core.config_entries",
                "data": {"entries": [{
                    "entry_id": "0123456789abcdef0123456789abcdef", "version": 1, "minor_version": 1,
                    "domain": "mqtt", "title": "test broker",
                    "data": {"broker": "127.0.0.1", "port": broker_port, "discovery": True},
                    "options": {}, "pref_disable_new_entities": False, "pref_disable_polling": False,
                    "source": "user", "unique_id": None, "disabled_by": None}]},
            },
            f,
        )
    start("hass", [HASS, "-c", config, "--skip-pip"])
    base = f"http://127.0.0.1:{http_port}"


    def http_up():
        if "recovery mode" in open(os.path.join(config, "home-assistant.log")).read():
            raise SystemExit("Home Assistant started in recovery mode (a requirement is missing)")
        return requests.get(base + "/api/onboarding", timeout=2).status_code == 200


    try:
        up = wait_for(http_up, 120)
    except SystemExit as error:
        up = check("Home Assistant starts", False, str(error))
        finish()
    if not check("Home Assistant starts and serves its API", up, tail("hass.log")):
        finish()

    # A token through onboarding (a fresh configuration directory).
    code = requests.post(
        base + "/api/onboarding/users",
        json={"client_id": base + "/", "name": "T", "username": "t", "password": "tpass12345",
              "language": "en"}, timeout=10).json()["auth_code"]
    token = requests.post(
        base + "/auth/token",
        data={"grant_type": "authorization_code", "code": code, "client_id": base + "/"},
        timeout=10).json()["access_token"]
    headers = {"Authorization": f"Bearer {token}"}


    def mqtt_loaded():
        entries = requests.get(base + "/api/config/config_entries/entry", headers=headers, timeout=5).json()
        return any(e["domain"] == "mqtt" and e["state"] == "loaded" for e in entries)


    if not check("Home Assistant's MQTT integration connects to the broker", wait_for(mqtt_loaded, 30)):
        finish()
    time.sleep(2.5)  # Home Assistant subscribes to discovery after a 2-s cooldown

    if not gateway_first:
        gateway = start_gateway()


    def rest(path):
        response = requests.get(base + path, headers=headers, timeout=5)
        return response.json() if response.status_code == 200 else None


    async def ws(*commands):
        async with aiohttp.ClientSession() as session:
            async with session.ws_connect(base + "/api/websocket") as socket_:
                await socket_.receive_json()
                await socket_.send_json({"type": "auth", "access_token": token})
                await socket_.receive_json()
                results = []
                for number, command in enumerate(commands, 1):
                    await socket_.send_json({"id": number, **command})
                    while True:
                        reply = await socket_.receive_json()
                        if reply.get("id") == number:
                            results.append(reply.get("result"))
                            break
                return results


    def registries():
        devices, entities = asyncio.run(
            ws({"type": "config/device_registry/list"}, {"type": "config/entity_registry/list"}))
        return devices, entities


    def device_named(devices, name):
        return next((d for d in devices if d["name"] == name), None)


    def entity(entities, device, suffix):
        """The entity of `device` whose unique_id ends in `_suffix`."""
        return next(
            (e for e in entities if e["device_id"] == device["id"] and e["unique_id"].endswith("_" + suffix)),
            None)


    def state(entity_id):
        return rest(f"/api/states/{entity_id}")


    def numeric(value):
        try:
            float(value)
            return True
        except (TypeError, ValueError):
            return False


    wanted = ["sim-thermometer", "sim-battery", "sim-heart-rate", "sim-actuator", f"gatt2mqtt {GW}"]


    def all_devices():
        devices, entities = registries()
        if all(device_named(devices, name) for name in wanted):
            hr = device_named(devices, "sim-heart-rate")
            act = device_named(devices, "sim-actuator")
            if entity(entities, hr, "heart_rate_180d") and entity(entities, act, "control_" + (ACTUATOR_SVC + "_" + ACTUATOR_CMD).replace("-", "")):
                return devices, entities
        return None


    found = wait_for(all_devices, 60, interval=1)
    if not check("the gateway's and the simulated devices appear in Home Assistant's device registry", found,
                 str([d["name"] for d in registries()[0]])):
        finish()
    devices, entities = found
    gateway_device = device_named(devices, f"gatt2mqtt {GW}")
    thermometer = device_named(devices, "sim-thermometer")
    check("a device is linked to the gateway's device (via_device)",
          thermometer["via_device_id"] == gateway_device["id"],
          f"via {thermometer['via_device_id']}, gateway {gateway_device['id']}")
    check("the device carries its Bluetooth address as a connection",
          any(c[0] == "bluetooth" for c in thermometer.get("connections", [])), str(thermometer.get("connections")))

    # Advertised values (BTHome v2): classes, units, values.
    expectations = [
        ("sim-thermometer", "temperature", "temperature", "°C"),
        ("sim-thermometer", "humidity", "humidity", "%"),
        ("sim-thermometer", "battery", "battery", "%"),
        ("sim-battery", "battery", "battery", "%"),          # SIG Battery service data
        ("sim-thermometer", "rssi", "signal_strength", "dBm"),
    ]
    for name, suffix, device_class, unit in expectations:
        device = device_named(devices, name)
        record = entity(entities, device, suffix)
        current = wait_for(lambda: (s := state(record["entity_id"])) and numeric(s["state"]) and s, 20) if record else None
        check(f"{name} {suffix}: {device_class} in {unit} with a number",
              current is not None and current["attributes"].get("device_class") == device_class
              and current["attributes"].get("unit_of_measurement") == unit
              and current["attributes"].get("state_class") == "measurement",
              json.dumps(current) if current else f"no entity (record {record})")

    temperature_id = entity(entities, thermometer, "temperature")["entity_id"]
    first = state(temperature_id)["state"]
    changed = wait_for(lambda: (s := state(temperature_id)["state"]) != first and numeric(s) and s, 20)
    check("the temperature changes as the thermometer advertises", changed, f"stayed {first}")

    presence = entity(entities, thermometer, "presence")
    current = wait_for(lambda: (s := state(presence["entity_id"])) and s["state"] == "on" and s, 20)
    check("presence is a binary_sensor of class presence, on", current is not None and current["attributes"].get("device_class") == "presence",
          json.dumps(state(presence["entity_id"])))

    # A connected device: its connection state and a notified GATT value.
    heart = device_named(devices, "sim-heart-rate")
    connection = entity(entities, heart, "connection")
    check("a connected device's connection sensor says ready",
          connection and wait_for(lambda: state(connection["entity_id"])["state"] == "ready", 20),
          json.dumps(state(connection["entity_id"])) if connection else "no entity")
    check("the connection sensor is diagnostic", connection and connection.get("entity_category") == "diagnostic",
          json.dumps(connection))
    rate = entity(entities, heart, "heart_rate_180d")
    current = wait_for(lambda: (s := state(rate["entity_id"])) and numeric(s["state"]) and s, 20)
    check("the notified heart rate is a number in bpm", current is not None and current["attributes"].get("unit_of_measurement") == "bpm",
          json.dumps(state(rate["entity_id"])))

    # A control: the button writes the actuator's command characteristic.
    actuator = device_named(devices, "sim-actuator")
    button = entity(entities, actuator, "control_" + (ACTUATOR_SVC + "_" + ACTUATOR_CMD).replace("-", ""))
    mark = time.monotonic()
    requests.post(base + "/api/services/button/press", headers=headers, json={"entity_id": button["entity_id"]}, timeout=10)


    def write_result():
        for topic, payload, _, at in list(seen):
            if at >= mark and topic.endswith(f"/gatt/{ACTUATOR_SVC}/{ACTUATOR_CMD}/result"):
                return json.loads(payload)
        return None


    result = wait_for(write_result, 15)
    check("pressing the button writes the characteristic (result ok)",
          result is not None and result.get("op") == "write" and result.get("status") == "ok", json.dumps(result))

    # The gateway's own device: connectivity, health, the peripheral's text.
    connectivity = entity(entities, gateway_device, "connectivity")
    check("the gateway's connectivity is on",
          connectivity and wait_for(lambda: state(connectivity["entity_id"])["state"] == "on", 10),
          json.dumps(state(connectivity["entity_id"])) if connectivity else "no entity")
    problem = entity(entities, gateway_device, "problem")
    check("the gateway's problem sensor reads health (off: healthy)",
          problem and wait_for(lambda: state(problem["entity_id"])["state"] == "off", 15),
          json.dumps(state(problem["entity_id"])) if problem else "no entity")
    text = entity(entities, gateway_device, "peripheral_text")
    served = "Hello from Home Assistant, ünïcödé ✓"
    mark = time.monotonic()
    requests.post(base + "/api/services/text/set_value", headers=headers,
                  json={"entity_id": text["entity_id"], "value": served}, timeout=10)


    def echoed():
        for topic, payload, _, at in list(seen):
            if at >= mark and topic == f"gatt2mqtt/bridge/{GW}/peripheral/event":
                event = json.loads(payload)
                if event.get("type") == "written" and served in event.get("text", ""):
                    return event
        return None


    event = wait_for(echoed, 20)
    check("the text set in Home Assistant reaches a simulated central (its echo)", event, tail("gateway.log", 10))
    check("the text entity shows the served text",
          wait_for(lambda: state(text["entity_id"])["state"] == served, 10),
          json.dumps(state(text["entity_id"])))
    subscribers = entity(entities, gateway_device, "peripheral_subscribers")
    check("the subscriber count is 1",
          subscribers and wait_for(lambda: state(subscribers["entity_id"])["state"] == "1", 10),
          json.dumps(state(subscribers["entity_id"])) if subscribers else "no entity")

    # Home Assistant's birth message: every config again.
    mark = time.monotonic()
    observer.publish("homeassistant/status", "online")


    def republished():
        configs = {t for t, p, _, at in list(seen) if at >= mark and t.startswith("homeassistant/") and t.endswith("/config") and p}
        return configs if len(configs) >= 15 else None


    configs = wait_for(republished, 10)
    check("the configs are published again when Home Assistant says online", configs,
          f"{len({t for t, _, _, at in seen if at >= mark and t.endswith('/config')})} configs")

    # A removed device has its configs cleared (empty retained), which removes it from Home Assistant.
    battery_device = device_named(devices, "sim-battery")
    battery_address = next(c[1] for c in battery_device["connections"] if c[0] == "bluetooth")
    battery_node = "gatt2mqtt_" + battery_address.replace(":", "")
    mark = time.monotonic()
    observer.publish(f"gatt2mqtt/bridge/{GW}/request/device/remove", json.dumps({"device": battery_address}))


    def cleared():
        topics = {t for t, p, _, at in list(seen) if at >= mark and f"/{battery_node}/" in t and t.endswith("/config") and not p}
        return topics if len(topics) >= 3 else None


    check("device/remove clears the device's discovery configs (empty retained)", wait_for(cleared, 10),
          str([t for t, p, _, at in seen if at >= mark and battery_node in t]))

    # The gateway dies without a word: the broker publishes its will, the entities go unavailable.
    gateway.send_signal(signal.SIGKILL)
    gateway.wait()
    check("the gateway's connectivity turns off when it is killed (its will)",
          wait_for(lambda: state(connectivity["entity_id"])["state"] == "off", 30),
          json.dumps(state(connectivity["entity_id"])))
    check("a device's temperature turns unavailable with its gateway",
          wait_for(lambda: state(temperature_id)["state"] == "unavailable", 10),
          json.dumps(state(temperature_id)))
    observer.loop_stop()


observer = None
try:
    scenario()
except SystemExit:
    raise
except Exception as error:  # a missing entity is a failed check, not a lost summary
    check("the Home Assistant walk-through", False, f"{type(error).__name__}: {error}"[:600])
finish()
