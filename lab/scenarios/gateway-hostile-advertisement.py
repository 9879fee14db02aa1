"""The gateway publishes a hostile peer's advertisement safely: wildcards and invalid UTF-8 in the name, full manufacturer data; it keeps running."""

ROWS = "C2 C3"
TIMEOUT = 240


async def run(lab):
    hostile = await lab.peer("hostile")
    dev = hostile.address.replace(":", "").upper()
    mqtt = await lab.mqtt(subscribe="gatt2mqtt/#")
    await lab.gateway(f"""
mqtt:
  host: 127.0.0.1
  port: 1883
gateway:
  id: lab
  health_interval: 5
bluetooth:
  radio: bluez
  adapter: {lab.adapter}
""")
    adv = await mqtt.expect(f"gatt2mqtt/{dev}/advertisement",
                            where=lambda m: "name" in m.json() and m.json().get("manufacturerdata"), timeout=120)
    body = adv.json()
    lab.log(f"hostile advertisement: {adv.text}")
    lab.check("+#" in body["name"], f"the raw name stays in the JSON: {body['name']!r}")
    lab.check(len(next(iter(body["manufacturerdata"].values()))) >= 40,
              f"manufacturer data kept whole: {body['manufacturerdata']}")
    adv.payload.decode("utf-8")  # the payload is valid UTF-8 whatever the name held
    # No topic the gateway produced has a wildcard, NUL or invalid UTF-8.
    for m in mqtt.messages:
        lab.check("+" not in m.topic and "#" not in m.topic and "\x00" not in m.topic, f"bad topic {m.topic!r}")
    await mqtt.expect(f"gatt2mqtt/{dev}/availability", where=lambda m: m.json()["state"] == "online", timeout=60)
    mark = mqtt.mark()
    await mqtt.expect("gatt2mqtt/bridge/lab/health", after=mark, timeout=60)
