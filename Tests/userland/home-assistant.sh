#!/usr/bin/env bash
# What a Home Assistant user sees of gattway, proven with a real Home Assistant (from PyPI,
# headless) on a private mosquitto: the per-entity discovery is migrated (a renamed
# entity keeps its entity id), every entity of a configuration using every sensor kind appears on
# one device with the announced domain, device class, unit and state class, states equal what
# gattway publishes, a switch, a text and a number set in Home Assistant reach gattway, stopping
# gattway makes every entity unavailable, a characteristic removed while the state directory was
# wiped loses its entity, and Home Assistant logs no warning or error about MQTT.
#
# Home Assistant needs Python 3.13, which this Debian 12 machine lacks: a Debian 13 root with
# python3 (and a C compiler for the wheels PyPI lacks) and a venv holding homeassistant is made once with debootstrap and kept in the cache
# (${GATTWAY_CACHE:-$HOME/.cache/gattway}/home-assistant-root). Home Assistant runs chrooted there
# and shares the network namespace, so it reaches the broker and gattway on loopback.
#
# Exit status: 0 passed, 1 failed, 77 skipped (the reason is printed).
# Environment: GATTWAY_CACHE, GATTWAY_DEBIAN_MIRROR (default deb.debian.org).
set -euo pipefail

readonly PASS=0 FAIL=1 SKIP=77
readonly SUITE=home-assistant
say() { echo "[$SUITE] $*"; }
skip() { echo "[$SUITE] SKIPPED: $*"; exit "$SKIP"; }
fail() { echo "[$SUITE] FAILED: $*"; exit "$FAIL"; }

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cache=${GATTWAY_CACHE:-$HOME/.cache/gattway}
mirror=${GATTWAY_DEBIAN_MIRROR:-http://deb.debian.org/debian}
root=$cache/home-assistant-root
# Pinned, so a run tests what the last one did; device discovery needs 2024.11 or later.
readonly HA_VERSION=2026.2.3
stamp_text="trixie python3 python3-venv python3-dev build-essential homeassistant==$HA_VERSION frontend mqtt"
readonly BROKER_PORT=18931 CONTROLLER_PORT=18932

# --- Preconditions -------------------------------------------------------------------------
if [[ $EUID -ne 0 ]]; then
    if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
        exec sudo -n GATTWAY_CACHE="$cache" GATTWAY_DEBIAN_MIRROR="$mirror" "$0" "$@"
    fi
    skip "needs root (debootstrap, chroot, mount) and passwordless sudo is not available"
fi
for tool in debootstrap chroot unshare mount flock mosquitto; do
    command -v "$tool" >/dev/null || skip "'$tool' is not installed (apt-get install debootstrap mosquitto)"
done
[[ -x $repo/.venv/bin/python3 ]] || skip "no Bumble venv at $repo/.venv (the virtual controller needs it)"

if [[ ${GATTWAY_HA_IN_NAMESPACE:-} != 1 ]]; then
    GATTWAY_HA_IN_NAMESPACE=1 exec unshare --mount --propagation private -- "$0" "$@"
fi

work=$(mktemp -d)
pids=()
mounted=()
cleanup() {
    local status=$?
    local i
    for ((i = ${#pids[@]} - 1; i >= 0; i--)); do kill "${pids[i]}" 2>/dev/null || true; done
    wait 2>/dev/null || true
    for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
        umount "${mounted[i]}" 2>/dev/null || umount -l "${mounted[i]}" 2>/dev/null || true
    done
    rm -rf "$work"
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
started=$SECONDS

in_root() { # in_root COMMAND...: runs in the root with a clean environment
    chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 PATH=/opt/ha-venv/bin:/usr/bin:/bin \
        PIP_CERT=/etc/ssl/certs/host-ca-certificates.crt PIP_DISABLE_PIP_VERSION_CHECK=1 "$@"
}
# In the background, `exec in_root ...` would not do (a function); this replaces the subshell, so
# `$!` is the command itself and the cleanup's kill reaches it.
exec_in_root() {
    exec chroot "$root" /usr/bin/env -i HOME=/root LANG=C.UTF-8 PATH=/opt/ha-venv/bin:/usr/bin:/bin "$@"
}

# --- The cached root with Home Assistant -----------------------------------------------------
mkdir -p "$cache"
exec 9>"$cache/home-assistant.lock"
flock 9
stamp=$root/.gattway-root-complete
if [[ ! -f $stamp || $(cat "$stamp") != "$stamp_text" ]]; then
    say "making the Debian 13 root with Home Assistant $HA_VERSION in $root (several minutes, once)"
    for dir in "$root" "$root.partial"; do
        if mountpoint -q "$dir/proc"; then umount -l "$dir/proc"; fi
    done
    rm -rf --one-file-system "$root.partial" "$root"
    if ! debootstrap --variant=minbase --include=python3,python3-venv,python3-dev,build-essential,ca-certificates trixie "$root.partial" \
        "$mirror" >"$cache/home-assistant-debootstrap.log" 2>&1; then
        tail -n 20 "$cache/home-assistant-debootstrap.log"
        skip "debootstrap of Debian 13 from $mirror failed (see $cache/home-assistant-debootstrap.log)"
    fi
    # This machine's trust store (it may hold a proxy's CA) for pip inside.
    cp /etc/ssl/certs/ca-certificates.crt "$root.partial/etc/ssl/certs/host-ca-certificates.crt"
    cp /etc/resolv.conf "$root.partial/etc/resolv.conf"
    mount -t proc proc "$root.partial/proc"
    cp "$repo/Tests/userland/home_assistant_requirements.py" "$root.partial/root/"
    if ! root=$root.partial in_root /bin/sh -c \
        "python3 -m venv /opt/ha-venv && pip install homeassistant==$HA_VERSION &&
         pip install \$(python3 /root/home_assistant_requirements.py frontend mqtt)" \
        >"$cache/home-assistant-pip.log" 2>&1; then
        umount "$root.partial/proc"
        tail -n 20 "$cache/home-assistant-pip.log"
        skip "pip could not install homeassistant==$HA_VERSION in the Debian 13 root (see $cache/home-assistant-pip.log)"
    fi
    umount "$root.partial/proc"
    echo "$stamp_text" >"$root.partial/.gattway-root-complete"
    mv "$root.partial" "$root"
    say "root ready after $((SECONDS - started)) s"
fi
mount -t proc proc "$root/proc"; mounted+=("$root/proc")
mount -t tmpfs -o size=512m tmpfs "$root/tmp"; mounted+=("$root/tmp")

# --- gattway, built here ---------------------------------------------------------------------
say "building gattway"
(cd "$repo" && swift build -j 1 --product gattway >"$work/build.log" 2>&1) || { tail -n 40 "$work/build.log"; fail "swift build"; }
gattway=$(cd "$repo" && swift build -j 1 --show-bin-path)/gattway

# --- Broker and Home Assistant ---------------------------------------------------------------
printf 'listener %s 127.0.0.1\nallow_anonymous true\npersistence false\n' "$BROKER_PORT" >"$work/mosquitto.conf"
mosquitto -c "$work/mosquitto.conf" >"$work/mosquitto.log" 2>&1 9>&- &
pids+=($!)

config=$root/tmp/ha-config
mkdir -p "$config"
cat >"$config/configuration.yaml" <<EOF
homeassistant:
  name: gattway test
  latitude: 52.5
  longitude: 13.4
  elevation: 30
  unit_system: metric
  time_zone: UTC
  country: DE
  currency: EUR
http:
  server_host: 127.0.0.1
  server_port: 18123
api:
websocket_api:
logger:
  default: warning
  logs:
    homeassistant.components.mqtt: info
EOF
cp "$repo/Tests/userland/home_assistant_setup.py" "$repo/Tests/userland/home_assistant_check.py" "$root/tmp/"
token=$(in_root python3 /tmp/home_assistant_setup.py /tmp/ha-config "$BROKER_PORT")

# the per-entity documents, retained before Home Assistant starts (an installation
# upgraded from it).
legacy_device='"device":{"identifiers":["gattway_ha"],"name":"gattway HA","manufacturer":"gattway","model":"BLE GATT gateway"}'
legacy_availability='"availability_topic":"gattway/ha/availability","payload_available":"online","payload_not_available":"offline"'
mosquitto_pub -p "$BROKER_PORT" -r -t homeassistant/binary_sensor/gattway_ha/gateway_door/config -m \
    "{\"name\":\"door\",\"unique_id\":\"gattway_ha_gateway_door\",\"state_topic\":\"gattway/ha/gateway/door\",\"value_template\":\"{{ 'ON' if value_json.value else 'OFF' }}\",$legacy_availability,$legacy_device}"
mosquitto_pub -p "$BROKER_PORT" -r -t homeassistant/binary_sensor/gattway_ha/gateway_window/config -m \
    "{\"name\":\"window\",\"unique_id\":\"gattway_ha_gateway_window\",\"state_topic\":\"gattway/ha/gateway/window\",\"value_template\":\"{{ 'ON' if value_json.value else 'OFF' }}\",$legacy_availability,$legacy_device}"
mosquitto_pub -p "$BROKER_PORT" -r -t homeassistant/sensor/gattway_ha/connected_centrals/config -m \
    "{\"name\":\"Connected centrals\",\"unique_id\":\"gattway_ha_connected_centrals\",\"state_topic\":\"gattway/ha/state\",\"value_template\":\"{{ value_json.centrals | length }}\",\"entity_category\":\"diagnostic\",\"icon\":\"mdi:cellphone-link\",$legacy_availability,$legacy_device}"

say "starting Home Assistant $HA_VERSION"
exec_in_root hass --config /tmp/ha-config --skip-pip --log-file /tmp/ha-config/home-assistant.log >"$work/hass.out" 2>&1 9>&- &
pids+=($!)
if ! in_root python3 /tmp/home_assistant_check.py legacy "$token" "$BROKER_PORT"; then
    tail -n 30 "$config/home-assistant.log" || true
    fail "Home Assistant did not take the per-entity discovery"
fi

# --- gattway with every sensor kind ---------------------------------------------------------
# The controller exits when its stdin closes: the write end stays open in this script alone.
mkfifo "$work/controller.stdin"
"$repo/.venv/bin/python3" "$repo/Tests/harness/virtual_controller.py" --tcp-port "$CONTROLLER_PORT" --exit-with-stdin \
    <"$work/controller.stdin" >"$work/controller.log" 2>&1 9>&- &
pids+=($!)
exec 8>"$work/controller.stdin"
sed -e "s/@CONTROLLER_PORT@/$CONTROLLER_PORT/; s/@BROKER_PORT@/$BROKER_PORT/; s#@STATE@#$work/state#" \
    "$repo/Tests/userland/home-assistant.yaml" >"$work/gattway.yaml"
"$gattway" check --config "$work/gattway.yaml" >/dev/null || fail "gattway check refused the test configuration"
sleep 1
"$gattway" run --config "$work/gattway.yaml" >"$work/gattway.log" 2>&1 9>&- &
gattway_pid=$!
pids+=($gattway_pid)

set +e
in_root python3 /tmp/home_assistant_check.py check "$token" "$BROKER_PORT" "$gattway_pid"
status=$?
set -e
wait "$gattway_pid" || true

# The knob taken out of the configuration and the state directory wiped (a fresh card, a reflash):
# gattway learns from the broker's device document that the knob was published, so its entity
# must go and the rest come back; the per-entity topics migrated in the first run are gone from the
# broker, so nothing is migrated again (each would be a "conflicting MQTT discovery message"
# warning in Home Assistant's log, checked below).
if [[ $status -eq 0 ]]; then
    rm -rf "$work/state"
    sed '/^      - uuid: 6E400005-B5A3-F393-E0A9-E50E24DC0001$/,/^      - uuid:/{/^      - uuid: 6E400006/!d}' \
        "$work/gattway.yaml" >"$work/gattway-without-knob.yaml"
    ! grep -q 'sensor: knob' "$work/gattway-without-knob.yaml" || fail "the knob is still in the reduced configuration"
    "$gattway" run --config "$work/gattway-without-knob.yaml" >"$work/gattway-2.log" 2>&1 9>&- &
    pids+=($!)
    set +e
    in_root python3 /tmp/home_assistant_check.py removed "$token" "$BROKER_PORT"
    status=$?
    set -e
fi

# Home Assistant's own words on what it was given.
problems=$(grep -E '(WARNING|ERROR)' "$config/home-assistant.log" | grep -iE 'mqtt|gattway|discovery' || true)
if [[ -n $problems ]]; then
    echo "$problems"
    status=1
    say "Home Assistant logged the warnings or errors above"
fi
if [[ $status -ne 0 ]]; then
    echo "--- gattway log (tail)"; tail -n 30 "$work/gattway.log"
    echo "--- Home Assistant log (tail)"; tail -n 30 "$config/home-assistant.log"
    fail "after $((SECONDS - started)) s"
fi
say "PASSED in $((SECONDS - started)) s"
exit "$PASS"
