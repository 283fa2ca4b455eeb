#!/usr/bin/env bash
# Runs inside the VM (see power-cut-tests.sh), with the state disk as /dev/vda:
#   power-cut-guest.sh GATTWAY PROBE BOOT cut|last
# Mounts the disk (ext4 replays its journal), unmounts it and runs fsck -n on it, mounts it again
# and inspects every state file (power-cut-check.py inspect); then starts the writers on it and
# prints what each acknowledges, a line each, until the host cuts the power (`cut`), or stops them
# after a few seconds and exits (`last`, the boot after the last cut).
set -uo pipefail
gattway=$1 probe=$2 boot=$3 mode=$4
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
state=/mnt/state

uptime() { echo "uptime $(cut -d ' ' -f 1 /proc/uptime) s: $*"; }
uptime "boot done"
mkdir -p "$state"
mount -t ext4 /dev/vda "$state" || { echo "FAIL the state disk does not mount"; exit 1; }
umount "$state"
if fsck_log=$(e2fsck -f -n /dev/vda 2>&1); then
    echo "fsck clean"
else
    echo "fsck found errors: $(tr '\n' ' ' <<<"$fsck_log" | cut -c1-400)"
fi
mount -t ext4 /dev/vda "$state" || exit 1
/usr/bin/python3 "$here/power-cut-check.py" inspect "$state"
uptime "state disk checked"

# The other state files, through the same writers gattway uses (Tests/StateFileProbe): bonds
# (BondStore), a counter total as CounterEngine writes it, and the MQTT outbox's journal
# (MQTTOutbox: appends, fsyncs, acknowledgements, compactions). Each prints what it found, and
# each version once it is written and fsynced; an exit (a torn file found) is a failure.
mkdir -p /tmp/power-cut "$state/gattway" "$state/outbox"
probe() { # probe NAME ARGS...
    local name=$1
    shift
    { "$probe" "$@" 2>&1; echo "exited $?"; } | sed -u "s/^/$name /" | tee "/tmp/power-cut/$name" &
}
wait_for() { # wait_for FILE PATTERN SECONDS: until a line of FILE matches
    local deadline=$((SECONDS + $3))
    until grep -q "$2" "$1" 2>/dev/null; do
        [[ $SECONDS -lt $deadline ]] || return 1
        sleep 0.1
    done
}
if [[ $mode == last ]]; then
    # The boot after the last cut: what bonds.json holds, through BondStore, is all that is left.
    probe bonds bonds "$state"
    wait_for /tmp/power-cut/bonds '^bonds found' 60 || echo "FAIL the bond probe found nothing in 60 s"
    exit 0
fi

# gattway itself: a counter on a simulated line pulsing 200 times a second, its total saved (at
# most every 100 ms) before it is published to a mosquitto in this VM. No Bluetooth controller:
# the gateway runs degraded, which does not concern the counter. It starts first, alone: its
# start takes most of a boot under emulation.
cat >/tmp/power-cut/gattway.yaml <<EOF
device: {name: power cut, id: pc}
bluetooth: {transport: "tcp:127.0.0.1:9"}
state_dir: $state/gattway
runtime_dir: /tmp/power-cut/run
gpio:
  backend: simulated
  chips:
    - label: pc
      lines:
        - name: PULSES
          generator: {type: pulses, rate: 200}
sensors:
  - {id: pulses, kind: counter, line: PULSES, report_interval: 100ms}
services:
  - uuid: 7c2a0000-8f5e-4d3c-9b1a-5d0e0c0ffee0
    name: meter
    characteristics:
      - uuid: 7c2a0001-8f5e-4d3c-9b1a-5d0e0c0ffee0
        name: total
        format: uint32
        properties: [read, notify]
        source: {sensor: pulses}
mqtt:
  url: mqtt://127.0.0.1:18831
  base_topic: pc
  discovery: false
EOF
printf 'listener 18831 127.0.0.1\nallow_anonymous true\npersistence false\nuser root\n' >/tmp/power-cut/mosquitto.conf
mosquitto -c /tmp/power-cut/mosquitto.conf >/tmp/power-cut/mosquitto.log 2>&1 &
for _ in $(seq 100); do mosquitto_sub -p 18831 -t probe -W 1 -C 1 >/dev/null 2>&1; [[ $? -ne 5 ]] && break; sleep 0.1; done
# Each published total, as the broker received it.
mosquitto_sub -p 18831 -v -t pc/pc/meter/total \
    | sed -un 's/^[^ ]* {"value":\([0-9]*\)[,}].*/gattway published \1/p' | tee /tmp/power-cut/published &
"$gattway" run --config /tmp/power-cut/gattway.yaml >/tmp/power-cut/gattway.log 2>&1 &
if ! wait_for /tmp/power-cut/published '^gattway published' 180; then
    echo "FAIL gattway published nothing within 180 s; its log:"
    sed 's/^/  /' /tmp/power-cut/gattway.log
    exit 1
fi
uptime "gattway published its first total"

probe bonds bonds "$state"
probe counter counter "$state/probe.count"
probe outbox outbox "$state/outbox" "$boot"
for name in bonds counter outbox; do
    wait_for "/tmp/power-cut/$name" "^$name saved\|^$name durable" 60 || echo "FAIL the $name probe saved nothing in 60 s"
done
uptime "every writer has written"
echo "load running"
sleep 600
