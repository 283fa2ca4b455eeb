#!/usr/bin/env python3
"""Every module a Swift target imports is one it declares in Package.swift, and the targets
that must stay free of a C library do.

SwiftPM lets a target import any module built before it, declared or not, so an undeclared
import builds today and breaks when the graph changes (or links a library the target's layer
must not see). `make lint` runs this; it prints each problem and exits 1.
"""
import pathlib
import re
import sys

# The toolchain's own modules, available to every target.
TOOLCHAIN = {"Darwin", "Dispatch", "Foundation", "FoundationEssentials", "Glibc", "Musl",
             "Synchronization", "Testing", "XCTest", "_Concurrency"}

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
manifest = (root / "Package.swift").read_text()
target = re.compile(r'\.(?:target|testTarget|executableTarget)\(\s*name:\s*"(\w+)"(.*?)path:\s*"([^"]+)"', re.S)
import_line = re.compile(
    r"^(?:@\w+(?:\([^)]*\))?\s+)*(?:(?:public|package|internal|fileprivate|private)\s+)?"
    r"import\s+(?:(?:struct|class|enum|protocol|typealias|func|var|let)\s+)?(\w+)")
# Targets whose dependencies, all the way down, must not reach these C modules: loading and
# checking a configuration links no Bluetooth, MQTT or GPIO library, the GPIO and sensor
# layers leave libgpiod to its backend, and the sensor kinds read their schema from YAML nodes
# without linking libyaml (docs/architecture.md). The MQTT mirror's model is pure too, and the
# configuration uses its types (not twins of them) without the client: `MQTTMirror` below Config,
# `MQTTClient` beside it, `MQTTService` above both.
DEVICE_LIBRARIES = {"CBlueZ", "CMosquitto", "CGPIOD", "CGPIODShim"}
MQTT_CONNECTION = {"MQTTClient", "MQTTService"}
FREE_OF = {"Config": DEVICE_LIBRARIES | MQTT_CONNECTION, "MQTTMirror": DEVICE_LIBRARIES | MQTT_CONNECTION,
           "GPIO": DEVICE_LIBRARIES, "Sensors": DEVICE_LIBRARIES | {"CYAML"},
           "ConfigReading": DEVICE_LIBRARIES | {"CYAML"}}
# Each C module enters through one target, its wrapper; no other target declares or imports it.
WRAPPER_OF = {"CMosquitto": "MQTTClient", "CBlueZ": "BluetoothHCITransport", "CGPIODShim": "GPIOLibgpiod",
              "CGPIOD": "CGPIODShim", "CYAML": "YAML", "CEpoll": "EventLoop", "CLoopThread": "EventLoop", "CSpawn": "DevelopmentHarness"}

undeclared = 0
dependencies_of = {}
for name, arguments, path in target.findall(manifest):
    declared = set()
    if "dependencies:" in arguments:
        dependencies = arguments.split("dependencies:", 1)[1]
        declared = set(re.findall(r'\.product\(name:\s*"(\w+)"', dependencies))
        declared |= set(re.findall(r'(?<![:\w])\s*"(\w+)"', re.sub(r'package:\s*"[^"]*"', "", dependencies)))
    dependencies_of[name] = declared
    for source in sorted((root / path).rglob("*.swift")):
        for number, line in enumerate(source.read_text().splitlines(), 1):
            match = import_line.match(line)
            if match and match[1] not in declared | TOOLCHAIN | {name}:
                print(f"{source.relative_to(root)}:{number}: target {name} imports {match[1]}, "
                      "which its dependencies in Package.swift do not list")
                undeclared += 1
            if match and WRAPPER_OF.get(match[1], name) != name:
                print(f"{source.relative_to(root)}:{number}: target {name} imports {match[1]}, "
                      f"which only {WRAPPER_OF[match[1]]} may (it wraps it for everything above)")
                undeclared += 1
for name, declared in dependencies_of.items():
    for module in sorted(declared):
        if WRAPPER_OF.get(module, name) != name:
            print(f"Package.swift: target {name} depends on {module}, which only {WRAPPER_OF[module]} may")
            undeclared += 1
for name, forbidden in FREE_OF.items():
    reached, pending = set(), [name]
    while pending:
        for dependency in dependencies_of.get(pending.pop(), ()):
            if dependency not in reached:
                reached.add(dependency)
                pending.append(dependency)
    for module in sorted(reached & forbidden):
        print(f"Package.swift: target {name} depends on {module}, which it must stay free of")
        undeclared += 1
sys.exit(1 if undeclared else 0)
