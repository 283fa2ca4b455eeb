"""The Python requirements of the given Home Assistant integrations and of the integrations they
depend on: installed once into the cached root, so Home Assistant runs with --skip-pip. The
test asks for `frontend` (without it Home Assistant starts in recovery mode, with no MQTT) and
`mqtt`.

Usage: home_assistant_requirements.py INTEGRATION...   (prints one requirement per line)
"""

import json
import pathlib
import sys

import homeassistant

components = pathlib.Path(homeassistant.__file__).parent / "components"
wanted, seen, requirements = set(sys.argv[1:]), set(), set()
while wanted:
    domain = wanted.pop()
    if domain in seen:
        continue
    seen.add(domain)
    manifest = json.loads((components / domain / "manifest.json").read_text())
    requirements.update(manifest.get("requirements", []))
    wanted.update(manifest.get("dependencies", []))
print("\n".join(sorted(requirements)))
