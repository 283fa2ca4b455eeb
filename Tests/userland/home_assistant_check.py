"""What a Home Assistant user sees of gattway, asked of a real Home Assistant.

Run by Tests/userland/home-assistant.sh with Home Assistant's own Python (aiohttp and paho-mqtt
come with it). Phases, each its own command:

  legacy  TOKEN PORT          after the per-entity documents are retained: waits for
                              their entity and renames it (binary_sensor.front_door), as a user would
  check   TOKEN PORT PID      the device, entities, states and commands; the button's presses fire
                              its event entity and its device triggers; the entity of a sensor
                              removed during the upgrade is gone; then stops gattway (PID) and
                              waits for every entity to become unavailable
  removed TOKEN PORT          gattway runs again without the knob and with its state directory wiped:
                              the knob's entity is gone, the others stay

Exit status 0 when everything holds; each failure is printed as "FAIL: ..." naming what differs.
"""

import asyncio
import json
import os
import signal
import sys
import time

import aiohttp
import paho.mqtt.client as mqtt

HA = "http://127.0.0.1:18123"
DEVICE_TOPIC = "homeassistant/device/gattway_ha/config"
LEGACY_UNIQUE_ID = "gattway_ha_gateway_door"
# earlier gattway versions announced a window sensor that the configuration no longer has.
REMOVED_LEGACY_UNIQUE_ID = "gattway_ha_gateway_window"
KNOB_UNIQUE_ID = "gattway_ha_gateway_knob"
RENAMED = "binary_sensor.front_door"
BUTTON_UNIQUE_ID = "gattway_ha_gateway_button"
PRESSES = ["single_press", "double_press", "long_press"]
failures = []


def fail(message):
    failures.append(message)
    print(f"FAIL: {message}", flush=True)


class Broker:
    """The retained and latest payloads of every topic, seen from a subscriber."""

    def __init__(self, port):
        self.latest = {}
        self.client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id="ha-check")
        self.client.on_message = lambda _c, _u, message: self.latest.__setitem__(message.topic, message.payload)
        self.client.connect("127.0.0.1", port)
        self.client.subscribe([("homeassistant/#", 0), ("gattway/#", 0)])
        self.client.loop_start()

    def value(self, topic):
        payload = self.latest.get(topic)
        return None if payload is None else json.loads(payload)["value"]


class HomeAssistant:
    def __init__(self, session, token):
        self.session = session
        self.headers = {"Authorization": f"Bearer {token}"}
        self.token = token
        self.ws = None
        self.next_id = 1

    async def connect(self):
        for _ in range(240):
            try:
                async with self.session.get(f"{HA}/api/", headers=self.headers) as response:
                    if response.status == 200:
                        break
            except aiohttp.ClientError:
                pass
            await asyncio.sleep(0.5)
        else:
            raise SystemExit("FAIL: Home Assistant's API did not answer in 120 s")
        self.ws = await self.session.ws_connect(f"{HA}/api/websocket")
        await self.ws.receive_json()
        await self.ws.send_json({"type": "auth", "access_token": self.token})
        reply = await self.ws.receive_json()
        if reply["type"] != "auth_ok":
            raise SystemExit(f"FAIL: websocket authentication: {reply}")

    async def command(self, message):
        message = dict(message, id=self.next_id)
        self.next_id += 1
        await self.ws.send_json(message)
        while True:
            reply = await self.ws.receive_json()
            if reply.get("id") == message["id"]:
                if not reply.get("success", False):
                    raise SystemExit(f"FAIL: {message['type']}: {reply}")
                return reply["result"]

    async def entities(self):
        entries = await self.command({"type": "config/entity_registry/list"})
        return {entry["unique_id"]: entry for entry in entries if entry["platform"] == "mqtt"}

    async def state(self, entity_id):
        async with self.session.get(f"{HA}/api/states/{entity_id}", headers=self.headers) as response:
            return await response.json() if response.status == 200 else None

    async def call(self, domain, service, data):
        async with self.session.post(
            f"{HA}/api/services/{domain}/{service}", headers=self.headers, json=data
        ) as response:
            if response.status != 200:
                fail(f"{domain}.{service} {data}: HTTP {response.status} {await response.text()}")


async def eventually(what, probe, timeout=30):
    """Polls probe() (a coroutine giving (ok, detail)) until ok; a failure names the last detail."""
    deadline = time.monotonic() + timeout
    while True:
        ok, detail = await probe()
        if ok:
            return True
        if time.monotonic() > deadline:
            fail(f"{what}: {detail}")
            return False
        await asyncio.sleep(0.25)


async def legacy(token, port):
    async with aiohttp.ClientSession() as session:
        ha = HomeAssistant(session, token)
        await ha.connect()

        async def present():
            entities = await ha.entities()
            return {LEGACY_UNIQUE_ID, REMOVED_LEGACY_UNIQUE_ID} <= set(entities), sorted(entities)

        if await eventually("the per-entity door entity", present, 60):
            entity = (await ha.entities())[LEGACY_UNIQUE_ID]
            await ha.command(
                {"type": "config/entity_registry/update", "entity_id": entity["entity_id"], "new_entity_id": RENAMED}
            )
            print(f"legacy entity {entity['entity_id']} renamed {RENAMED}", flush=True)


def expected_state(component, value):
    platform = component["p"]
    if platform in ("binary_sensor", "switch"):
        return "on" if value else "off"
    return value


def same(platform, state, value):
    if platform in ("sensor", "number") and isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            return abs(float(state) - value) < 1e-9
        except ValueError:
            return False
    return state == value


async def check(token, port, gattway_pid):
    broker = Broker(port)
    async with aiohttp.ClientSession() as session:
        ha = HomeAssistant(session, token)
        await ha.connect()
        deadline = time.monotonic() + 60
        while DEVICE_TOPIC not in broker.latest and time.monotonic() < deadline:
            await asyncio.sleep(0.25)
        if DEVICE_TOPIC not in broker.latest:
            raise SystemExit(f"FAIL: no device document on {DEVICE_TOPIC}")
        document = json.loads(broker.latest[DEVICE_TOPIC])
        # Entities have a unique id; device triggers (device_automation) are not entities.
        components = {c["unique_id"]: c for c in document["cmps"].values() if c["p"] != "device_automation"}
        triggers = [c for c in document["cmps"].values() if c["p"] == "device_automation"]
        print(f"device document: {len(components)} entities, {len(triggers)} device triggers", flush=True)

        async def all_there():
            entities = await ha.entities()
            missing = sorted(set(components) - set(entities))
            return not missing, f"missing {missing}"

        await eventually("every component an entity", all_there, 60)
        entities = await ha.entities()
        devices = {entities[u]["device_id"] for u in components if u in entities}
        if len(devices) != 1:
            fail(f"entities on {len(devices)} devices, expected one: {devices}")
        registry = {d["id"]: d for d in await ha.command({"type": "config/device_registry/list"})}
        for device_id in devices:
            device = registry[device_id]
            print(f"device: {device['name']} by {device['manufacturer']}, {device['model']}, sw {device['sw_version']}")
            if (device["manufacturer"], device["sw_version"]) != ("gattway", document["dev"]["sw_version"]):
                fail(f"device {device}")
        if entities.get(LEGACY_UNIQUE_ID, {}).get("entity_id") != RENAMED:
            fail(f"the migrated door entity is {entities.get(LEGACY_UNIQUE_ID, {}).get('entity_id')}, not {RENAMED}")
        async def removed_sensor_gone():
            return REMOVED_LEGACY_UNIQUE_ID not in await ha.entities(), "still in the entity registry"

        await eventually("the entity of a sensor removed during the upgrade is removed", removed_sensor_gone, 20)
        duplicates = [e["entity_id"] for e in entities.values() if e["entity_id"].endswith("_2")]
        if duplicates:
            fail(f"duplicate entities after the migration: {duplicates}")

        # Domain and what Home Assistant made of the attributes.
        for unique_id, component in components.items():
            entity = entities.get(unique_id)
            if entity is None:
                continue
            entity_id = entity["entity_id"]
            if entity_id.split(".")[0] != component["p"]:
                fail(f"{unique_id} is {entity_id}, expected a {component['p']}")
            if component.get("enabled_by_default") is False:
                continue

            async def available():
                state = await ha.state(entity_id)
                return state is not None and state["state"] != "unavailable", f"state {state}"

            if not await eventually(f"{entity_id} available", available, 20):
                continue
            state = await ha.state(entity_id)
            attributes = state["attributes"]
            for key in ("device_class", "unit_of_measurement", "state_class"):
                if attributes.get(key) != component.get(key):
                    fail(f"{entity_id} {key} = {attributes.get(key)!r}, announced {component.get(key)!r}")
            # A number's range and step, a text's length: what the user may enter.
            limits = {"number": ("min", "max", "step"), "text": ("max",)}.get(component["p"], ())
            for key in limits:
                if attributes.get(key) != component[key]:
                    fail(f"{entity_id} {key} = {attributes.get(key)!r}, announced {component[key]!r}")
            print(f"{entity_id:45} {state['state']:>12} {attributes.get('unit_of_measurement') or ''}", flush=True)

        # States equal what gattway publishes (values move, so each is compared until they meet).
        for unique_id, component in components.items():
            if component["state_topic"].endswith("/state") or unique_id not in entities or component["p"] == "event":
                continue
            entity_id = entities[unique_id]["entity_id"]

            async def equal():
                value = broker.value(component["state_topic"])
                state = (await ha.state(entity_id))["state"]
                return same(component["p"], state, expected_state(component, value)), f"HA {state!r}, MQTT {value!r}"

            await eventually(f"{entity_id} shows what gattway publishes", equal, 20)

        await presses(ha, entities, components, triggers, next(iter(devices), None))

        # Commands from Home Assistant reach gattway: its value topics follow.
        by_platform = {}
        for unique_id, component in components.items():
            by_platform.setdefault(component["p"], []).append((entities[unique_id]["entity_id"], component))
        for entity_id, component in by_platform.get("switch", []):
            for service, wanted in (("turn_on", True), ("turn_off", False), ("turn_on", True)):
                await ha.call("switch", service, {"entity_id": entity_id})

                async def switched():
                    value = broker.value(component["state_topic"])
                    return value is wanted, f"MQTT value {value!r} after switch.{service}"

                await eventually(f"{entity_id} {service} drives the output", switched, 10)
            print(f"{entity_id}: switched from Home Assistant, the output followed", flush=True)
        for entity_id, component in by_platform.get("text", []):
            await ha.call("text", "set_value", {"entity_id": entity_id, "value": "set from HA"})

            async def text_set():
                value = broker.value(component["state_topic"])
                return value == "set from HA", f"MQTT value {value!r}"

            await eventually(f"{entity_id} set from Home Assistant", text_set, 10)
        for entity_id, component in by_platform.get("number", []):
            await ha.call("number", "set_value", {"entity_id": entity_id, "value": 42})

            async def number_set():
                value = broker.value(component["state_topic"])
                return value == 42, f"MQTT value {value!r}"

            await eventually(f"{entity_id} set from Home Assistant", number_set, 10)

        # Stopping gattway: its availability goes offline, every entity becomes unavailable.
        os.kill(gattway_pid, signal.SIGTERM)
        for unique_id in components:
            entity_id = entities[unique_id]["entity_id"]
            if components[unique_id].get("enabled_by_default") is False:
                continue

            async def unavailable():
                state = (await ha.state(entity_id))["state"]
                return state == "unavailable", f"state {state!r}"

            await eventually(f"{entity_id} unavailable after gattway stopped", unavailable, 20)
        print("gattway stopped: every entity unavailable", flush=True)
    broker.client.loop_stop()


async def presses(ha, entities, components, triggers, device_id):
    """The simulated button is pressed once, twice quickly, then held, over and over: its event
    entity takes each press as its event_type (state: the time of the last one), and the device's
    triggers (as an automation would use them) fire for each."""
    button = components.get(BUTTON_UNIQUE_ID)
    if button is None or BUTTON_UNIQUE_ID not in entities:
        fail(f"no event entity for the button: {sorted(components)}")
        return
    entity_id = entities[BUTTON_UNIQUE_ID]["entity_id"]
    if not entity_id.startswith("event.") or button.get("event_types") != PRESSES:
        fail(f"the button is {entity_id} with {button.get('event_types')}")
    listed = await ha.command({"type": "device_automation/trigger/list", "device_id": device_id})
    mqtt_triggers = [t for t in listed if t.get("domain") == "mqtt"]
    wanted = {(c["type"], c["subtype"]) for c in triggers}
    if {(t["type"], t["subtype"]) for t in mqtt_triggers} != wanted or len(wanted) != 3:
        fail(f"device triggers {mqtt_triggers}, announced {sorted(wanted)}")
    # Each trigger subscribed as an automation would have it, on a websocket of its own.
    fired = []
    async with aiohttp.ClientSession() as session:
        listener = HomeAssistant(session, ha.token)
        await listener.connect()
        by_id = {}
        for trigger in mqtt_triggers:
            message_id = listener.next_id
            by_id[message_id] = trigger["type"]
            listener.next_id += 1
            config = {key: value for key, value in trigger.items() if key != "metadata"}
            await listener.ws.send_json({"id": message_id, "type": "subscribe_trigger", "trigger": config})

        async def listen():
            while True:
                message = await listener.ws.receive_json()
                if message.get("type") == "event" and message.get("id") in by_id:
                    fired.append(by_id[message["id"]])
                elif message.get("type") == "result" and not message.get("success"):
                    fail(f"subscribe_trigger: {message}")

        listening = asyncio.create_task(listen())
        seen = []
        last = None
        deadline = time.monotonic() + 40
        while time.monotonic() < deadline and not (set(PRESSES) <= set(seen) and len(set(fired)) == 3):
            state = await ha.state(entity_id)
            if state and state["state"] not in ("unknown", "unavailable") and state["state"] != last:
                last = state["state"]
                seen.append(state["attributes"].get("event_type"))
            await asyncio.sleep(0.2)
        listening.cancel()
    if not set(PRESSES) <= set(seen):
        fail(f"{entity_id} took the events {seen}, expected each of {PRESSES}")
    if set(fired) != {"button_short_press", "button_double_press", "button_long_press"}:
        fail(f"the device triggers fired {fired}")
    print(f"{entity_id}: events {seen}; device triggers fired {fired}", flush=True)


async def removed(token, port):
    async with aiohttp.ClientSession() as session:
        ha = HomeAssistant(session, token)
        await ha.connect()

        async def knob_gone():
            entities = await ha.entities()
            return KNOB_UNIQUE_ID not in entities, "the knob's entity is still in the entity registry"

        await eventually("a characteristic removed from the configuration loses its entity", knob_gone, 30)
        temperature = (await ha.entities()).get("gattway_ha_environment_temperature")
        if temperature is None:
            fail("the other entities went too")
        else:

            async def back():
                state = (await ha.state(temperature["entity_id"]))["state"]
                return state not in ("unavailable", "unknown"), f"state {state!r}"

            await eventually(f"{temperature['entity_id']} available again", back, 30)
        print("knob removed from the configuration: its entity is gone, the others are back", flush=True)


if __name__ == "__main__":
    phase, token, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
    if phase == "legacy":
        asyncio.run(legacy(token, port))
    elif phase == "check":
        asyncio.run(check(token, port, int(sys.argv[4])))
    else:
        asyncio.run(removed(token, port))
    sys.exit(1 if failures else 0)
