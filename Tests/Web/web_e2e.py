"""The gateway's web page, JSON API, event stream and metrics (issue 19), against the real
binary on the simulated radio with a private mosquitto: every JSON endpoint and the event
stream, bad input over HTTP, the token, /metrics parsed by prometheus_client's parser with
values that move, and a real browser (headless Chromium driven by Selenium) that sees the
devices, reads the battery, writes the actuator, turns notifications on and sees values
arrive, and sets the peripheral text and sees the simulated central's echo, with a screenshot
of each step.

Run by Tests/Web/test; prints "N passed, N failed".
"""

import json
import os
import sys
import time

import requests
from prometheus_client.parser import text_string_to_metric_families

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "PythonSupport"))
from e2e import Run, free_port, wait_for  # noqa: E402

GATEWAY = sys.argv[1]
ARTIFACTS = sys.argv[2] if len(sys.argv) > 2 else None
GW = "webtest"
WRITE_CHR = "08590f7e-db05-467e-8757-72f6faeb13d5"
ACTUATOR_SVC = "5a1d0000-6a63-4b3c-9c5e-3b5c7d2a0001"
ACTUATOR_CMD = "5a1d0001-6a63-4b3c-9c5e-3b5c7d2a0001"

run = Run("web")
check, start, work = run.check, run.start, run.work
driver = None


def finish():
    if driver is not None:
        driver.quit()
    run.finish(ARTIFACTS, failure_logs=("gateway.log", "gateway-token.log"))


broker_port = run.broker()

world = os.path.join(work, "world.yaml")
with open(world, "w") as f:
    f.write("""seed: 3
advertising_interval: 0.5
devices:
  - kind: battery
    name: sim-battery
  - kind: heart_rate
    name: sim-heart-rate
    notify_rate: 4
  - kind: actuator
    name: sim-actuator
  - kind: thermometer
    name: sim-thermometer
centrals:
  - mtu: 100
    subscribe_after: 1
    stay: 0
    echo: true
""")
port = free_port()
common = ["run", "--radio", "simulated", "--world", world, "--mqtt.host", "127.0.0.1",
          "--mqtt.port", str(broker_port), "--gateway.health_interval", "1",
          "--peripheral.enabled", "true", "--peripheral.write_characteristic", WRITE_CHR,
          "--bluetooth.connect.names", "sim-battery,sim-heart-rate,sim-actuator",
          "--web.enabled", "true"]
start("gateway", [GATEWAY, *common, "--gateway.id", GW, "--web.listen", f"127.0.0.1:{port}"])
base = f"http://127.0.0.1:{port}"
if not check("the web server answers", wait_for(lambda: requests.get(base + "/healthz", timeout=2).status_code in (200, 503), 20)):
    finish()

# --- the JSON API ----------------------------------------------------------------------------
def state():
    return requests.get(base + "/api/state", timeout=5).json()


def devices_ready():
    s = state()
    listed = s["retained"].get(f"gatt2mqtt/bridge/{GW}/devices") or []
    names = {d.get("name") for d in listed}
    ready = all(d.get("connection") == "ready" for d in listed if d.get("name") in ("sim-battery", "sim-heart-rate", "sim-actuator"))
    return s if {"sim-battery", "sim-heart-rate", "sim-actuator", "sim-thermometer"} <= names and ready else None


snapshot = wait_for(devices_ready, 30)
check("/api/state: base, gateway, the retained devices list with the simulated devices, connected ones ready",
      snapshot and snapshot["base"] == "gatt2mqtt" and snapshot["gateway"] == GW, json.dumps(state())[:1500])
# (the peripheral's centrals are in the list too, without a name)
devices = {d["name"]: d for d in snapshot["retained"][f"gatt2mqtt/bridge/{GW}/devices"] if "name" in d} if snapshot else {}
check("/api/state: retained GATT trees and bridge state are in the snapshot",
      snapshot and f"gatt2mqtt/{devices['sim-battery']['id']}/gatt" in snapshot["retained"]
      and snapshot["retained"].get(f"gatt2mqtt/bridge/{GW}/state", {}).get("state") == "online")
check("/api/state: recent bridge events", snapshot and any(e.get("type") == "device_discovered" for e in snapshot["events"]),
      json.dumps(snapshot["events"][:3]) if snapshot else "")

# The event stream: server-sent events of every publication.
events = []
with requests.get(base + "/api/events", stream=True, timeout=10) as response:
    check("/api/events is an event stream", response.headers.get("content-type", "").startswith("text/event-stream"))
    deadline = time.monotonic() + 10
    for line in response.iter_lines(decode_unicode=True):
        if line and line.startswith("data: "):
            events.append(json.loads(line[6:]))
        if len(events) >= 30 or time.monotonic() > deadline:
            break
topics = {e["topic"] for e in events}
check("/api/events carries advertisements and bridge messages as they are published",
      any(t.endswith("/advertisement") for t in topics) and f"gatt2mqtt/bridge/{GW}/health" in topics,
      str(sorted(topics))[:800])
advert = next((e for e in events if e["topic"].endswith("/advertisement") and "decoded" in e["payload"]), None)
check("an event's payload is the published JSON (a decoded BTHome advertisement)",
      advert is not None and advert["payload"]["decoded"]["formats"] == ["bthome"] and advert["retain"] is False,
      json.dumps(events[:2])[:800])


def post(body, raw=None, headers=None):
    response = requests.post(base + "/api/request", data=raw if raw is not None else json.dumps(body), timeout=30,
                             headers=headers or {"Content-Type": "application/json"})
    return response.status_code, response.json()


status, answer = post({"topic": f"gatt2mqtt/bridge/{GW}/request/health_check", "payload": {}})
check("/api/request: a bridge request is answered with the gateway's response",
      status == 200 and answer["topic"] == f"gatt2mqtt/bridge/{GW}/response/health_check"
      and answer["payload"]["status"] == "ok" and answer["payload"]["data"]["healthy"] is True, json.dumps(answer)[:500])
battery = devices["sim-battery"]["id"]
status, answer = post({"topic": f"gatt2mqtt/{battery}/gatt/180f/2a19/get", "payload": {}})
check("/api/request: a read's result comes back", status == 200 and answer["payload"].get("op") == "read"
      and answer["payload"].get("status") == "ok", json.dumps(answer))
status, answer = post({"topic": f"gatt2mqtt/{battery}/gatt/180f/2a19/set", "payload": {"hex": "01"}})
check("/api/request: the same errors as MQTT (a write to a read-only characteristic)",
      status == 200 and answer["payload"].get("status") == "error" and answer["payload"].get("error") == "not_permitted",
      json.dumps(answer))
status, answer = post({"topic": f"gatt2mqtt/bridge/{GW}/request/device/connect", "payload": {"device": "nonsense"}})
check("/api/request: an unknown device is the gateway's error", answer.get("payload", {}).get("status") == "error",
      json.dumps(answer))
status, answer = post(None, raw="{not json")
check("/api/request: malformed JSON is refused with invalid_payload (400)", status == 400 and answer["error"] == "invalid_payload", json.dumps(answer))
status, answer = post({"topic": "elsewhere/+/#", "payload": {}})
check("/api/request: a topic that is no request topic is refused (400 unknown_request)", status == 400 and answer["error"] == "unknown_request", json.dumps(answer))
status, answer = post(None, raw=json.dumps({"topic": f"gatt2mqtt/bridge/{GW}/request/health_check", "payload": "x" * 70000}))
check("/api/request: an oversized body is refused (413)", status == 413 and answer["error"] == "payload_too_large", json.dumps(answer))
status, answer = post(None, raw=b'{"topic":"gatt2mqtt/bridge/' + GW.encode() + b'/request/health_check","payload":{"x":"\xff"}}')
check("/api/request: invalid UTF-8 is refused, never a crash", status == 400, json.dumps(answer))
health_request = json.dumps({"topic": f"gatt2mqtt/bridge/{GW}/request/health_check", "payload": {}})
status, answer = post(None, raw=health_request, headers={"Content-Type": "text/plain"})
check("/api/request: not application/json is refused (415), so other sites cannot post plain forms",
      status == 415, json.dumps(answer))
status, answer = post(None, raw=health_request,
                      headers={"Content-Type": "application/json", "Origin": "http://evil.example"})
check("/api/request: a POST from another origin is refused (403)", status == 403, json.dumps(answer))
rebound = requests.get(base + "/api/state", headers={"Host": f"evil.example:{port}"}, timeout=5)
check("a request under a foreign Host name is refused (403, DNS rebinding)", rebound.status_code == 403, rebound.text[:200])
status, answer = post(None, raw=health_request,
                      headers={"Content-Type": "application/json", "Origin": f"http://127.0.0.1:{port}"})
check("/api/request: a POST from the page's own origin is served", status == 200, json.dumps(answer)[:200])
check("the gateway still answers after the bad input", requests.get(base + "/healthz", timeout=5).status_code == 200)

health = requests.get(base + "/healthz", timeout=5)
check("/healthz mirrors health_check (200, healthy)", health.status_code == 200 and health.json()["healthy"] is True, health.text[:300])


# --- /metrics --------------------------------------------------------------------------------
def metrics():
    text = requests.get(base + "/metrics", timeout=5).text
    values = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            key = sample.name + (json.dumps(sample.labels, sort_keys=True) if sample.labels else "")
            values[key] = sample.value
    return values


first = metrics()
time.sleep(2)
second = metrics()
check("/metrics parses as Prometheus text", len(first) > 20, str(list(first)[:10]))
check("/metrics: advertisements received grow as traffic flows",
      second.get("gatt2mqtt_advertisements_received_total", 0) > first.get("gatt2mqtt_advertisements_received_total", 0),
      f"{first.get('gatt2mqtt_advertisements_received_total')} -> {second.get('gatt2mqtt_advertisements_received_total')}")
check("/metrics: MQTT messages published grow",
      second.get("gatt2mqtt_mqtt_messages_published_total", 0) > first.get("gatt2mqtt_mqtt_messages_published_total", 0))
check("/metrics: connections by state (3 ready)", second.get('gatt2mqtt_devices_by_connection_state{"state": "ready"}') == 3,
      str({k: v for k, v in second.items() if "connection_state" in k}))
check("/metrics: the GATT operation latency histogram has the read",
      any(k.startswith("gatt2mqtt_gatt_operation_duration_seconds_count") and '"op": "read"' in k and v >= 1 for k, v in second.items()),
      str([k for k in second if "duration" in k][:6]))
check("/metrics: healthy is 1", second.get("gatt2mqtt_healthy") == 1.0)

# --- the token ---------------------------------------------------------------------------------
token_port = free_port()
start("gateway-token", [GATEWAY, *common, "--gateway.id", GW + "2", "--web.listen", f"127.0.0.1:{token_port}",
                        "--web.token", "s3cret", "--peripheral.enabled", "false"])
token_base = f"http://127.0.0.1:{token_port}"
wait_for(lambda: requests.get(token_base + "/healthz", timeout=2).status_code in (200, 503), 20)
check("with web.token: no token, 401", requests.get(token_base + "/api/state", timeout=5).status_code == 401)
check("with web.token: a wrong token, 401", requests.get(token_base + "/api/state", headers={"Authorization": "Bearer nope"}, timeout=5).status_code == 401)
check("with web.token: the bearer token or ?token= opens it",
      requests.get(token_base + "/api/state", headers={"Authorization": "Bearer s3cret"}, timeout=5).status_code == 200
      and requests.get(token_base + "/metrics?token=s3cret", timeout=5).status_code == 200)
check("with web.token: /healthz stays open for probes", requests.get(token_base + "/healthz", timeout=5).status_code in (200, 503))

# --- a real browser ----------------------------------------------------------------------------
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

options = webdriver.ChromeOptions()
for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,900"):
    options.add_argument(argument)
options.binary_location = "/usr/bin/chromium"
try:
    driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
except Exception as error:
    check("headless Chromium starts", False, str(error))
    finish()
wait = WebDriverWait(driver, 20)
shots = 0


def shot(name):
    global shots
    shots += 1
    driver.save_screenshot(os.path.join(work, f"{shots:02d}-{name}.png"))


def until(what, probe, timeout=20):
    try:
        return WebDriverWait(driver, timeout).until(lambda d: probe())
    except Exception:
        return check(what, False, driver.find_element(By.TAG_NAME, "body").text[:1500])


def browse():
    driver.get(base + "/")
    rows = until("the page lists devices", lambda: len(driver.find_elements(By.CSS_SELECTOR, "#devices tr.device")) >= 4 and driver.find_elements(By.CSS_SELECTOR, "#devices tr.device"))
    if rows:
        names = [r.find_element(By.TAG_NAME, "td").text for r in rows]
        check("the page lists the simulated devices, live", {"sim-battery", "sim-heart-rate", "sim-actuator", "sim-thermometer"} <= set(names)
              and driver.find_element(By.ID, "stream").text == "live", str(names))
        shot("devices")
        driver.find_element(By.ID, "filter").send_keys("heart")
        check("the list filters", until("filter", lambda: len(driver.find_elements(By.CSS_SELECTOR, "#devices tr.device")) == 1))
        driver.find_element(By.ID, "filter").clear()
        driver.execute_script("document.getElementById('filter').dispatchEvent(new Event('input'))")


    def open_device(name):
        driver.find_element(By.CSS_SELECTOR, f'#devices tr.device[data-id="{devices[name]["id"]}"]').click()
        return until(f"{name}'s GATT tree shows", lambda: driver.find_elements(By.CSS_SELECTOR, "#gatt tr[data-chr]"))


    def row(key):
        return driver.find_element(By.CSS_SELECTOR, f'#gatt tr[data-chr="{key}"]')


    if open_device("sim-battery"):
        check("the battery's level row: read allowed, write not (flags respected)",
              row("180f/2a19").find_element(By.CSS_SELECTOR, "button.read").is_enabled()
              and not row("180f/2a19").find_element(By.CSS_SELECTOR, "button.write").is_enabled())
        row("180f/2a19").find_element(By.CSS_SELECTOR, "button.read").click()
        value = until("reading the battery shows its value", lambda: row("180f/2a19").find_element(By.CSS_SELECTOR, ".value").text)
        check("reading the battery shows its value", bool(value) and row("180f/2a19").find_element(By.CSS_SELECTOR, ".result").text.endswith("ok"),
              row("180f/2a19").text)
        shot("battery-read")
    driver.find_element(By.ID, "back").click()
    if open_device("sim-actuator"):
        key = f"{ACTUATOR_SVC}/{ACTUATOR_CMD}"
        row(key).find_element(By.CSS_SELECTOR, "input.write-value").send_keys("0102")
        row(key).find_element(By.CSS_SELECTOR, "button.write").click()
        result = until("writing the actuator succeeds", lambda: "ok" in row(key).find_element(By.CSS_SELECTOR, ".result").text and row(key).find_element(By.CSS_SELECTOR, ".result").text)
        check("writing the actuator succeeds", bool(result), row(key).text)
        shot("actuator-write")
    driver.find_element(By.ID, "back").click()
    if open_device("sim-heart-rate"):
        row("180d/2a37").find_element(By.CSS_SELECTOR, "button.notify").click()
        row("180d/2a37").find_element(By.CSS_SELECTOR, "button.chart").click()
        first_value = until("notifications arrive", lambda: row("180d/2a37").find_element(By.CSS_SELECTOR, ".value").text)
        later = until("notifications keep arriving", lambda: (v := row("180d/2a37").find_element(By.CSS_SELECTOR, ".value").text) and v != first_value and v)
        check("turning notifications on makes values arrive", bool(first_value) and bool(later), row("180d/2a37").text)
        time.sleep(1.5)
        shot("heart-rate-notifications")
    driver.find_element(By.CSS_SELECTOR, 'nav a[data-view="peripheral"]').click()
    served = "Hello from the browser ✓"
    box = driver.find_element(By.ID, "peripheral-text")
    box.clear()
    box.send_keys(served)
    driver.find_element(By.ID, "peripheral-send").click()
    echo = until("the simulated central's echo appears", lambda: any(served in li.text and "written" in li.text for li in driver.find_elements(By.CSS_SELECTOR, "#peripheral-events li")))
    check("setting the peripheral text reaches the simulated central (its echo event)", bool(echo),
          driver.find_element(By.ID, "peripheral-events").text[:800])
    check("the peripheral state shows the served text", until("text", lambda: served in driver.find_element(By.ID, "p-text").text))
    shot("peripheral-text")
    driver.find_element(By.CSS_SELECTOR, 'nav a[data-view="bridge"]').click()
    check("the bridge view shows the state and health", until("bridge", lambda: driver.find_element(By.ID, "b-state").text == "online" and driver.find_element(By.ID, "b-healthy").text == "yes"))
    driver.find_element(By.ID, "scan-filter").send_keys("sim-*")
    driver.find_element(By.ID, "scan-start").click()
    check("the scan button with a filter is answered", until("scan", lambda: driver.find_element(By.ID, "scan-result").text == "ok"),
          driver.find_element(By.ID, "scan-result").text)
    shot("bridge")
    check("six screenshots taken", shots == 6, str(shots))


try:
    browse()
except Exception as error:  # a Selenium error is a failed check, not a lost summary
    check("the browser walk-through", False, f"{type(error).__name__}: {str(error)[:600]}")
finish()
